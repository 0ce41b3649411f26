import { afterAll, describe, expect, it } from 'vitest';
import { tieOrder } from '@bfe/index';
import { randomBank, rng } from '@bfe/index/testing';
import { rankCandidates } from './fusion.js';
import { ConfigError } from '@bfe/core';
import { namedTokenRemovals, tokenInterventions, topExcessRemovals } from './interventions.js';
import { SparseScorer } from './scorer.js';
import type { TokenBank } from './validate.js';

const js = await SparseScorer.open({ kernel: 'js' });
afterAll(() => js.dispose());

/**
 * A slow reference of the intervention, from the vectors alone: exhaustive float64 dots, the
 * top-k per query token over the candidates' tokens, the floor, each memory's best proposal;
 * the target memory gets the floor for the removed tokens; z with the original μ and σ; rank =
 * 1 + candidates with a higher fused score or an equal one earlier in the tie order.
 */
function reference(
  memories: TokenBank,
  queries: TokenBank,
  queryRow: number,
  candidates: readonly number[],
  k: number,
  alpha: number,
  zeroFloor: boolean,
  target: number,
  removed: readonly number[],
  tieRank: Int32Array,
): { sparse: number; score: number; rank: number; excess: number[] } {
  const dim = memories.dim;
  const dot = (a: Float32Array, ai: number, b: Float32Array, bi: number): number => {
    let s = 0;
    for (let d = 0; d < dim; d++) s += a[ai * dim + d]! * b[bi * dim + d]!;
    return s;
  };
  const qFrom = queries.tokenOffsets[queryRow]!;
  const nq = queries.tokenOffsets[queryRow + 1]! - qFrom;
  const tokens: { memory: number; index: number }[] = [];
  for (const [g, row] of candidates.entries())
    for (let t = memories.tokenOffsets[row]!; t < memories.tokenOffsets[row + 1]!; t++)
      tokens.push({ memory: g, index: t });
  const m = candidates.length;
  const sparse = new Array<number>(m).fill(0);
  const excess = new Array<number>(nq).fill(0);
  let targetSparse = 0;
  for (let i = 0; i < nq; i++) {
    const sims = tokens
      .map((t) => ({
        memory: t.memory,
        s: dot(queries.tokenVectors!, qFrom + i, memories.tokenVectors!, t.index),
      }))
      .sort((a, b) => b.s - a.s)
      .slice(0, k);
    const floor = zeroFloor ? 0 : Math.max(0, sims[sims.length - 1]!.s);
    for (let g = 0; g < m; g++) {
      const best = Math.max(-Infinity, ...sims.filter((x) => x.memory === g).map((x) => x.s));
      const used = Math.max(floor, best);
      sparse[g]! += used / nq;
      if (g === target) {
        excess[i] = (used - floor) / nq;
        targetSparse += (removed.includes(i) ? floor : used) / nq;
      }
    }
  }
  const pooled = candidates.map((row) => dot(queries.pooled, queryRow, memories.pooled, row));
  const z = (xs: number[]): ((x: number) => number) => {
    const mean = xs.reduce((a, b) => a + b, 0) / xs.length;
    const sd = Math.sqrt(xs.reduce((a, b) => a + (b - mean) ** 2, 0) / xs.length);
    return (x) => (x - mean) / Math.max(sd, 1e-6);
  };
  const zp = z(pooled);
  const zs = z(sparse);
  const fused = candidates.map((_, g) => alpha * zp(pooled[g]!) + (1 - alpha) * zs(sparse[g]!));
  const score = alpha * zp(pooled[target]!) + (1 - alpha) * zs(targetSparse);
  let above = 0;
  for (let g = 0; g < m; g++) {
    if (g === target) continue;
    const better = fused[g]! > score + 1e-12;
    const tied = Math.abs(fused[g]! - score) <= 1e-12;
    if (better || (tied && tieRank[candidates[g]!]! < tieRank[candidates[target]!]!)) above++;
  }
  return { sparse: targetSparse, score, rank: above + 1, excess };
}

// Query tokens e1, e2, e3 and pooled query e4 (dim 5): every dot product is a component.
const q = (...v: number[]): number[] => [...v, 0, 0, 0, 0, 0].slice(0, 5);
const small = {
  memories: {
    dim: 5,
    tokenVectors: Float32Array.from([
      ...q(0.8, 0.6), // memory a: 0.8 for e1, 0.6 for e2
      ...q(0.6, 0, 0.8), // memory b, token 0
      ...q(0, 0.8, 0.6), // memory b, token 1
      ...q(0, 0, 0, 0, 1), // memory c: matches nothing
      ...q(0.28, 0.96), // memory d: 0.96 for e2
    ]),
    tokenOffsets: Int32Array.of(0, 1, 3, 4, 5),
    pooled: Float32Array.from([
      ...q(0, 0, 0, 0.5, Math.sqrt(0.75)),
      ...q(0, 0, 0, 0.3, Math.sqrt(0.91)),
      ...q(0, 0, 0, 0.1, Math.sqrt(0.99)),
      ...q(0, 0, 0, 0.45, Math.sqrt(1 - 0.45 ** 2)),
    ]),
    ids: ['a', 'b', 'c', 'd'],
  },
  queries: {
    dim: 5,
    tokenVectors: Float32Array.from([...q(1), ...q(0, 1), ...q(0, 0, 1)]),
    tokenOffsets: Int32Array.of(0, 3),
    pooled: Float32Array.from(q(0, 0, 0, 1)),
    ids: ['query'],
  },
};

describe('tokenInterventions, a hand-computed bank', () => {
  // k = 2. e1's top 2: a 0.8, b 0.6 (t = 0.6); e2's: d 0.96, b 0.8 (t = 0.8); e3's: b 0.8, b 0.6
  // (t = 0.6). s_sparse: a (0.8 + 0.8 + 0.6)/3 = 0.733, b (0.6 + 0.8 + 0.8)/3 = 0.733, c 0.667,
  // d (0.6 + 0.96 + 0.6)/3 = 0.72. Pooled 0.5, 0.3, 0.1, 0.45. Fused at α 0.5: a 0.886, b 0.243,
  // c −1.612, d 0.483, so a ranks 1.
  const ties = tieOrder(small.memories.ids);
  const score = async () =>
    (
      await js.score(
        { ...small, queryRows: [0], candidates: [0, 1, 2, 3] },
        { k: 2, alpha: 0.5, keepHits: true },
      )
    )[0]!;

  it('gives each token its excess over the floor, zero where the memory was floored', async () => {
    const scores = await score();
    const a = tokenInterventions({ scores, matching: 'tail', alpha: 0.5, ties }, 0, []);
    expect(a.rank).toBe(1);
    expect(a.score).toBe(scores.systems['sparse-fusion'][0]);
    expect(a.tokens.map((t) => t.floored)).toEqual([false, true, true]);
    expect(a.tokens[0]!.excess).toBeCloseTo((0.8 - 0.6) / 3, 6);
    expect(a.tokens[1]!.excess).toBe(0);
    expect(a.byExcess).toEqual([0, 1, 2]);
    // a's e1 match is bank token 0; floored tokens name none.
    expect(a.tokens.map((t) => t.bankToken)).toEqual([0, -1, -1]);
    // b's e1 proposal equals the floor exactly: floored, no excess.
    const b = tokenInterventions({ scores, matching: 'tail', alpha: 0.5, ties }, 1, []);
    expect(b.tokens.map((t) => t.excess > 0)).toEqual([false, false, true]);
  });

  it('leaves the rank unchanged when the removed token had no excess, and drops it otherwise', async () => {
    const scores = await score();
    const a = tokenInterventions({ scores, matching: 'tail', alpha: 0.5, ties }, 0, [
      [1],
      [2],
      [0],
    ]);
    expect(a.outcomes[0]!.rank).toBe(1);
    expect(a.outcomes[0]!.score).toBe(a.score);
    expect(a.outcomes[1]!.rank).toBe(1);
    // Without e1's excess a scores (0.6 + 0.8 + 0.6)/3 = 0.667: z(sparse) with the original
    // μ 0.7133 and σ 0.02759 is −1.691; fused 0.5·1.053 − 0.5·1.691 = −0.327, below b and d.
    expect(a.outcomes[2]!.sparse).toBeCloseTo(2 / 3, 6);
    expect(a.outcomes[2]!.score).toBeCloseTo(-0.326782, 4);
    expect(a.outcomes[2]!.rank).toBe(3);
    for (const [j, removed] of [[1], [2], [0]].entries()) {
      const ref = reference(
        small.memories,
        small.queries,
        0,
        [0, 1, 2, 3],
        2,
        0.5,
        false,
        0,
        removed,
        ties.rank,
      );
      expect(a.outcomes[j]!.rank).toBe(ref.rank);
      expect(a.outcomes[j]!.score).toBeCloseTo(ref.score, 10);
    }
  });

  it('edits the zero-floor and no-fusion scores the same way', async () => {
    const scores = await score();
    for (const [matching, alpha] of [
      ['zero', 0.5],
      ['tail', 0],
    ] as const) {
      for (const target of [0, 3]) {
        const sets = [[0], [1], [0, 1, 2]];
        const got = tokenInterventions({ scores, matching, alpha, ties }, target, sets);
        for (const [j, removed] of sets.entries()) {
          const ref = reference(
            small.memories,
            small.queries,
            0,
            [0, 1, 2, 3],
            2,
            alpha,
            matching === 'zero',
            target,
            removed,
            ties.rank,
          );
          expect(got.outcomes[j]!.rank).toBe(ref.rank);
          expect(got.outcomes[j]!.sparse).toBeCloseTo(ref.sparse, 10);
        }
      }
    }
    // Zero floor: a's e1 term is the whole 0.8, so removing it leaves a with 0 and last place.
    const z = tokenInterventions({ scores, matching: 'zero', alpha: 0.5, ties }, 0, [[0]]);
    expect(z.tokens[0]!.excess).toBeCloseTo(0.8 / 3, 6);
    expect(z.outcomes[0]!.sparse).toBe(0);
    // c also has 0 but a lower pooled score: a falls from 2 to 3, not to last.
    expect(z.rank).toBe(2);
    expect(z.outcomes[0]!.rank).toBe(3);
  });

  it('breaks exact ties by the system’s tie order (a seeded hash of the memory id)', async () => {
    // c2 repeats c under another id: the same pooled and token scores, never proposed.
    const memories = {
      dim: 5,
      tokenVectors: Float32Array.from([...small.memories.tokenVectors, ...q(0, 0, 0, 0, 1)]),
      tokenOffsets: Int32Array.of(0, 1, 3, 4, 5, 6),
      pooled: Float32Array.from([...small.memories.pooled, ...small.memories.pooled.slice(10, 15)]),
      ids: ['a', 'b', 'c', 'd', 'c2'],
    };
    const tied = tieOrder(memories.ids);
    const [scores] = await js.score(
      { memories, queries: small.queries, queryRows: [0], candidates: [0, 1, 2, 3, 4] },
      { k: 2, alpha: 0.5, keepHits: true },
    );
    const c = tokenInterventions(
      { scores: scores!, matching: 'tail', alpha: 0.5, ties: tied },
      2,
      [],
    );
    const c2 = tokenInterventions(
      { scores: scores!, matching: 'tail', alpha: 0.5, ties: tied },
      4,
      [],
    );
    expect(c.score).toBe(c2.score);
    const cFirst = tied.rank[2]! < tied.rank[4]!;
    expect([c.rank, c2.rank]).toEqual(cFirst ? [4, 5] : [5, 4]);
    const ranked = rankCandidates(scores!.candidates, scores!.systems['sparse-fusion'], tied);
    expect(ranked.ids.slice(3)).toEqual(cFirst ? ['c', 'c2'] : ['c2', 'c']);
  });
});

describe('tokenInterventions on random banks', () => {
  const random = rng(31);
  const memories = {
    ...randomBank(24, 8, 12, random, 1),
    ids: Array.from({ length: 24 }, (_, i) => `m${i}`),
  };
  const queries = { ...randomBank(4, 7, 12, random, 1), ids: ['q0', 'q1', 'q2', 'q3'] };
  const candidates = Array.from({ length: 24 }, (_, i) => i).filter((i) => i !== 7);
  const ties = tieOrder(memories.ids);

  it('matches the slow reference for every candidate, system and top-n removal', async () => {
    const scored = await js.score(
      { memories, queries, queryRows: [0, 1, 2, 3], candidates },
      { k: 6, alpha: 0.5, keepHits: true },
    );
    let moved = 0;
    for (const scores of scored) {
      for (const [matching, alpha] of [
        ['tail', 0.5],
        ['tail', 0],
        ['zero', 0.5],
      ] as const) {
        const system =
          matching === 'zero' ? 'zero-floor' : alpha === 0 ? 'no-fusion' : 'sparse-fusion';
        const ranked = rankCandidates(scores.candidates, scores.systems[system], ties);
        for (let g = 0; g < candidates.length; g++) {
          const first = tokenInterventions({ scores, matching, alpha, ties }, g, []);
          // The rank without intervention is the memory's place in the system's own ranking.
          expect(first.rank).toBe(Array.from(ranked.order).indexOf(g) + 1);
          expect(first.score).toBe(scores.systems[system][g]);
          const removals = topExcessRemovals(first.byExcess, [1, 2, 3, 6]);
          const got = tokenInterventions({ scores, matching, alpha, ties }, g, [[], ...removals]);
          expect(got.outcomes[0]!.rank).toBe(first.rank);
          expect(got.outcomes[0]!.sparse).toBe(first.sparse);
          for (const [j, removed] of removals.entries()) {
            const ref = reference(
              memories,
              queries,
              scores.queryRow,
              candidates,
              6,
              alpha,
              matching === 'zero',
              g,
              removed,
              ties.rank,
            );
            const out = got.outcomes[j + 1]!;
            expect(out.rank).toBe(ref.rank);
            expect(out.score).toBeCloseTo(ref.score, 9);
            if (j === 0) {
              ref.excess.forEach((e, i) => expect(got.tokens[i]!.excess).toBeCloseTo(e, 12));
            }
            if (out.rank > first.rank) moved++;
          }
        }
      }
    }
    expect(moved).toBeGreaterThan(0);
  });

  it('refuses scores without hits and tokens out of range', async () => {
    const [scores] = await js.score(
      { memories, queries, queryRows: [0], candidates },
      { k: 6, alpha: 0.5 },
    );
    expect(() =>
      tokenInterventions({ scores: scores!, matching: 'tail', alpha: 0.5, ties }, 0, []),
    ).toThrow(/keepHits/);
    const [kept] = await js.score(
      { memories, queries, queryRows: [0], candidates },
      { k: 6, alpha: 0.5, keepHits: true },
    );
    expect(() =>
      tokenInterventions({ scores: kept!, matching: 'tail', alpha: 0.5, ties }, 0, [[99]]),
    ).toThrow(/query token 99/);
  });
});

describe('namedTokenRemovals', () => {
  it('resolves names by text (every occurrence) or position and refuses unknown ones', () => {
    expect(namedTokenRemovals(['DID', '#2'], ['when', '##did', 'did'])).toEqual([
      { label: "'DID'", tokens: [1, 2] },
      { label: 'did (#2)', tokens: [2] },
    ]);
    expect(namedTokenRemovals(['hello'], ['▁Hello', 'world'])).toEqual([
      { label: "'hello'", tokens: [0] },
    ]);
    expect(() => namedTokenRemovals(['progress'], ['when', 'did'])).toThrow(ConfigError);
    expect(() => namedTokenRemovals(['#2'], ['when', 'did'])).toThrow(/2 content tokens/);
  });
});
