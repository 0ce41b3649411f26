import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BM25_PARAMS, Bm25Index, bm25Scores, bm25Tokens } from './bm25.js';
import type { Bm25Params } from './bm25.js';

/**
 * Textbook BM25 in float64, no rounding: `Σ_j idf(t_j)·tf·(k1+1)/(k1·(1−b+b·|d|/avg)+tf)` over
 * the query's tokens known to the collection, `idf = ln((N − n + 0.5)/(n + 0.5) + k)`.
 */
function referenceBm25(
  docs: readonly string[],
  query: string,
  { k1, b, k }: Bm25Params = BM25_PARAMS,
): number[] {
  const tokenized = docs.map(bm25Tokens);
  const n = docs.length;
  const avg = tokenized.reduce((s, t) => s + t.length, 0) / n;
  return tokenized.map((d) => {
    let score = 0;
    for (const t of bm25Tokens(query)) {
      const nt = tokenized.filter((x) => x.includes(t)).length;
      if (nt === 0) continue;
      const tf = d.filter((x) => x === t).length;
      if (tf === 0) continue;
      const idf = Math.log((n - nt + 0.5) / (nt + 0.5) + k);
      score += (idf * (tf * (k1 + 1))) / (k1 * (1 - b + (b * d.length) / avg) + tf);
    }
    return score;
  });
}

/** Positions sorted by score, descending, ties by position. */
function order(scores: Float64Array): number[] {
  return [...scores.keys()].sort((a, b) => scores[b]! - scores[a]! || a - b);
}

const WORDS = ['cat', 'cats', 'dog', 'running', 'runs', 'ran', 'lisbon', 'hike', 'the', 'a'];
const text = fc
  .array(fc.constantFrom(...WORDS), { minLength: 0, maxLength: 12 })
  .map((w) => w.join(' '));

describe('bm25Tokens', () => {
  it('lower-cases, splits on non-words, drops stop words and stems (Porter2)', () => {
    expect(bm25Tokens('The CATS were Running, to Lisbon!')).toEqual(['cat', 'run', 'lisbon']);
    expect(bm25Tokens('the a of and')).toEqual([]);
  });
});

describe('Bm25Index on tiny corpora', () => {
  it('ranks more occurrences first at equal length, and scores non-matching candidates 0', () => {
    const index = Bm25Index.build([
      'weather report today sunny',
      'cat dog fish bird',
      'cat cat cat mouse',
    ]);
    expect(index.engine).toBe('wink');
    const s = index.score('cat');
    expect(s).toBeInstanceOf(Float64Array);
    expect(s.length).toBe(3);
    expect(order(s)).toEqual([2, 1, 0]);
    expect(s[0]).toBe(0);
    expect(s[1]).toBeGreaterThan(0);
  });

  it('prefers the shorter document at equal term frequency (b = 0.75)', () => {
    const s = Bm25Index.build(['cat dog fish bird bee', 'rain', 'cat']).score('cat');
    expect(order(s)).toEqual([2, 0, 1]);
  });

  it('weighs a rare term above a common one (IDF)', () => {
    const s = Bm25Index.build(['cat fish', 'dog fish', 'cat bird', 'cat tree']).score('cat dog');
    expect(order(s)[0]).toBe(1);
    expect(s[0]).toBe(s[2]);
  });

  it('matches through stemming and ignores stop words and unknown words', () => {
    const index = Bm25Index.build(['she runs daily', 'he sleeps', 'they sing']);
    expect(order(index.score('running'))[0]).toBe(0);
    expect([...index.score('the of zebra')]).toEqual([0, 0, 0]);
  });

  it('scores a candidate set of one or two memories with the same formula (direct engine)', () => {
    const two = Bm25Index.build(['I adopted a cat', 'We hiked Tam']);
    expect(two.engine).toBe('direct');
    const s = two.score('Where is the cat?');
    expect(order(s)).toEqual([0, 1]);
    expect(s[1]).toBe(0);
    // N = 2, n = 1: idf = ln(1.5/1.5 + 1) = ln 2; tf = 1, |d| = avg|d| = 2: weight = idf.
    expect(s[0]).toBeCloseTo(Math.log(2), 9);
    const one = Bm25Index.build(['only one memory here']);
    expect(one.engine).toBe('direct');
    expect(one.score('memory')[0]).toBeGreaterThan(0);
    expect(one.score('nothing')[0]).toBe(0);
  });

  it('refuses an empty candidate set, wink on fewer than 3 texts, and bad parameters', () => {
    expect(() => Bm25Index.build([])).toThrow(/no candidate texts/);
    expect(() => Bm25Index.build(['a cat', 'a dog'], { engine: 'wink' })).toThrow(/at least 3/);
    expect(() => Bm25Index.build(['x', 'y', 'z'], { params: { k1: 1.2, b: 2, k: 1 } })).toThrow(
      /out of range/,
    );
  });

  it('bm25Scores gives one aligned Float64Array per query', () => {
    const [a, b] = bm25Scores(['a cat', 'a dog', 'a cat and a dog'], ['cat', 'dog']);
    expect(order(a!)).toEqual([0, 2, 1]);
    expect(order(b!)).toEqual([1, 2, 0]);
  });
});

describe('Bm25Index against references (random corpora)', () => {
  it('wink equals the float64 textbook formula up to its 9-decimal weights', () => {
    fc.assert(
      fc.property(fc.array(text, { minLength: 3, maxLength: 8 }), text, (docs, query) => {
        const got = Bm25Index.build(docs).score(query);
        const want = referenceBm25(docs, query);
        const terms = bm25Tokens(query).length;
        for (let i = 0; i < docs.length; i++) {
          expect(Math.abs(got[i]! - want[i]!)).toBeLessThanOrEqual(5e-10 * terms + 1e-15);
        }
      }),
      { numRuns: 200, seed: 42 },
    );
  });

  it('the direct engine equals wink bit for bit wherever wink runs', () => {
    fc.assert(
      fc.property(fc.array(text, { minLength: 3, maxLength: 8 }), text, (docs, query) => {
        const wink = Bm25Index.build(docs, { engine: 'wink' }).score(query);
        const direct = Bm25Index.build(docs, { engine: 'direct' }).score(query);
        expect([...direct]).toEqual([...wink]);
      }),
      { numRuns: 200, seed: 43 },
    );
  });

  it('the direct engine equals the textbook formula on one or two documents', () => {
    fc.assert(
      fc.property(fc.array(text, { minLength: 1, maxLength: 2 }), text, (docs, query) => {
        const got = Bm25Index.build(docs).score(query);
        const want = referenceBm25(docs, query);
        for (let i = 0; i < docs.length; i++) {
          expect(Math.abs(got[i]! - want[i]!)).toBeLessThanOrEqual(1e-8);
        }
      }),
      { numRuns: 200, seed: 44 },
    );
  });

  it('permuting the candidates permutes the scores', () => {
    fc.assert(
      fc.property(
        fc
          .array(text, { minLength: 3, maxLength: 8 })
          .chain((docs) =>
            fc.tuple(
              fc.constant(docs),
              fc.shuffledSubarray([...docs.keys()], { minLength: docs.length }),
            ),
          ),
        text,
        ([docs, perm], query) => {
          const s = Bm25Index.build(docs).score(query);
          const p = Bm25Index.build(perm.map((i) => docs[i]!)).score(query);
          perm.forEach((from, to) => expect(p[to]).toBe(s[from]));
        },
      ),
      { numRuns: 100, seed: 42 },
    );
  });
});
