import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { cappedRecallAt, filterToCandidates, ndcgAt, queryMetrics, recallAt } from './metrics.js';

/**
 * Random queries: a candidate set, a raw ranking (some candidates in random order, plus ids
 * that are not candidates) and relevant memories (some of them possibly not candidates).
 */
const queryArb = fc
  .record({
    nCandidates: fc.integer({ min: 0, max: 70 }),
    keep: fc.array(fc.boolean(), { minLength: 70, maxLength: 70 }),
    relevantMask: fc.array(fc.boolean(), { minLength: 70, maxLength: 70 }),
    outsideRelevant: fc.integer({ min: 0, max: 3 }),
    outsideRanked: fc.integer({ min: 0, max: 3 }),
    order: fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { minLength: 80, maxLength: 80 }),
  })
  .map((r) => {
    const candidates = Array.from({ length: r.nCandidates }, (_, i) => `m${i}`);
    const raw = [
      ...candidates.filter((_, i) => r.keep[i]),
      ...Array.from({ length: r.outsideRanked }, (_, i) => `out${i}`),
    ];
    const ranked = raw
      .map((id, i) => ({ id, key: r.order[i] as number }))
      .sort((a, b) => a.key - b.key)
      .map((d) => d.id);
    const relevant = new Set([
      ...candidates.filter((_, i) => r.relevantMask[i]),
      ...Array.from({ length: r.outsideRelevant }, (_, i) => `gone${i}`),
    ]);
    return { candidates: new Set(candidates), ranked, relevant };
  });

const ksArb = fc
  .uniqueArray(fc.integer({ min: 1, max: 60 }), { minLength: 1, maxLength: 6 })
  .map((ks) => ks.sort((a, b) => a - b));

/** The obviously correct reference: the definitions of METHOD.md §6, written out. */
function slow(ranked: readonly string[], relevant: ReadonlySet<string>, k: number) {
  const top = ranked.slice(0, k);
  const hits = top.filter((id) => relevant.has(id)).length;
  let dcg = 0;
  top.forEach((id, i) => {
    if (relevant.has(id)) dcg += 1 / Math.log2(i + 2);
  });
  let ideal = 0;
  for (let i = 0; i < Math.min(relevant.size, k); i++) ideal += 1 / Math.log2(i + 2);
  return { recall: hits / Math.min(relevant.size, k), ndcg: dcg / ideal };
}

describe('metric properties', () => {
  it('match the slow reference, in one pass or one cut-off at a time', () => {
    fc.assert(
      fc.property(queryArb, ksArb, ({ candidates, ranked, relevant }, ks) => {
        fc.pre(relevant.size > 0);
        const filtered = filterToCandidates(ranked, candidates);
        const all = queryMetrics(filtered, relevant, ks);
        for (const k of ks) {
          const ref = slow(filtered, relevant, k);
          expect(all[`recall@${k}`]).toBeCloseTo(ref.recall, 12);
          expect(all[`ndcg@${k}`]).toBeCloseTo(ref.ndcg, 12);
          expect(cappedRecallAt(filtered, relevant, k)).toBe(all[`recall@${k}`]);
          expect(ndcgAt(filtered, relevant, k)).toBe(all[`ndcg@${k}`]);
        }
      }),
      { numRuns: 300 },
    );
  });

  it('stay in [0, 1], and capped recall ≥ standard recall', () => {
    fc.assert(
      fc.property(queryArb, ksArb, ({ candidates, ranked, relevant }, ks) => {
        const filtered = filterToCandidates(ranked, candidates);
        const all = queryMetrics(filtered, relevant, ks);
        for (const value of Object.values(all)) {
          expect(value).toBeGreaterThanOrEqual(0);
          expect(value).toBeLessThanOrEqual(1);
        }
        for (const k of ks) {
          expect(all[`recall@${k}`]).toBeGreaterThanOrEqual(recallAt(filtered, relevant, k));
        }
      }),
      { numRuns: 300 },
    );
  });

  it('are 1 at every k for a perfect ranking', () => {
    fc.assert(
      fc.property(queryArb, ksArb, ({ candidates, ranked, relevant }, ks) => {
        const inCandidates = [...relevant].filter((id) => candidates.has(id));
        fc.pre(inCandidates.length > 0);
        const onlyCandidates = new Set(inCandidates);
        const perfect = [...inCandidates, ...ranked.filter((id) => !onlyCandidates.has(id))];
        const all = queryMetrics(filterToCandidates(perfect, candidates), onlyCandidates, ks);
        for (const value of Object.values(all)) expect(value).toBeCloseTo(1, 12);
      }),
      { numRuns: 300 },
    );
  });

  it('do not change when non-relevant items are permuted among themselves', () => {
    fc.assert(
      fc.property(
        queryArb,
        ksArb,
        fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { minLength: 80, maxLength: 80 }),
        ({ candidates, ranked, relevant }, ks, keys) => {
          const filtered = filterToCandidates(ranked, candidates);
          const before = queryMetrics(filtered, relevant, ks);
          // Below the last relevant item…
          const last = filtered.findLastIndex((id) => relevant.has(id));
          const tail = filtered.slice(last + 1);
          const shuffledTail = tail
            .map((id, i) => ({ id, key: keys[i] as number }))
            .sort((a, b) => a.key - b.key)
            .map((d) => d.id);
          const belowAll = [...filtered.slice(0, last + 1), ...shuffledTail];
          expect(queryMetrics(belowAll, relevant, ks)).toEqual(before);
          // …and anywhere, as long as the relevant items keep their ranks.
          const others = filtered
            .filter((id) => !relevant.has(id))
            .map((id, i) => ({ id, key: keys[i] as number }))
            .sort((a, b) => a.key - b.key)
            .map((d) => d.id);
          let next = 0;
          const swapped = filtered.map((id) =>
            relevant.has(id) ? id : (others[next++] as string),
          );
          expect(queryMetrics(swapped, relevant, ks)).toEqual(before);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('ignore ids outside the candidate set wherever they are ranked', () => {
    fc.assert(
      fc.property(queryArb, ksArb, fc.nat(), ({ candidates, ranked, relevant }, ks, at) => {
        const filtered = filterToCandidates(ranked, candidates);
        const withIntruder = [...ranked];
        withIntruder.splice(at % (ranked.length + 1), 0, 'intruder');
        const refiltered = filterToCandidates(withIntruder, candidates);
        expect(refiltered).toEqual(filtered);
        expect(queryMetrics(refiltered, relevant, ks)).toEqual(
          queryMetrics(filtered, relevant, ks),
        );
      }),
    );
  });
});
