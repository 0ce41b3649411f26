import { afterAll, describe, expect, it } from 'vitest';
import { tieOrder } from '@bfe/index';
import { randomBank, rng } from '@bfe/index/testing';
import { explainCandidates, type EvidenceMatching } from './evidence.js';
import { SparseScorer, type QueryScores, type SystemName } from './scorer.js';
import type { TokenBank } from './validate.js';

const js = await SparseScorer.open({ kernel: 'js' });
afterAll(() => js.dispose());

const DIM = 16;

function queryTokensOf(queries: TokenBank, row: number): Float32Array {
  const from = queries.tokenOffsets[row]!;
  const to = queries.tokenOffsets[row + 1]!;
  return queries.tokenVectors!.slice(from * DIM, to * DIM);
}

const CASES: ReadonlyArray<[SystemName, EvidenceMatching, number]> = [
  ['sparse-fusion', 'tail', 0.5],
  ['zero-floor', 'zero', 0.5],
  ['no-fusion', 'tail', 0],
  ['maxsim-fusion', 'maxsim', 0.5],
];

describe('explainCandidates on random banks', () => {
  const random = rng(14);
  const memories = randomBank(30, 9, DIM, random, 1);
  const queries = randomBank(5, 7, DIM, random, 1);
  const candidates = Array.from({ length: 30 }, (_, i) => i).filter((i) => i % 7 !== 3);

  it('sums each token term to the scorer’s own s_sparse and the parts to the fused score', async () => {
    const scored = await js.score(
      { memories, queries, queryRows: [0, 1, 2, 3, 4], candidates },
      { k: 5, alpha: 0.5, keepHits: true },
    );
    let floored = 0;
    for (const scores of scored) {
      const queryTokens = queryTokensOf(queries, scores.queryRow);
      const all = candidates.map((_, g) => g);
      for (const [system, matching, alpha] of CASES) {
        const fused = scores.systems[system]!;
        const tokenLevel =
          matching === 'tail'
            ? scores.sparse
            : matching === 'zero'
              ? scores.sparseZeroFloor
              : scores.systems.maxsim!;
        for (const e of explainCandidates(
          { scores, memories, queryTokens, matching, alpha },
          all,
        )) {
          const sum = e.tokens.reduce((acc, t) => acc + t.contribution, 0);
          expect(Math.abs(sum - tokenLevel[e.candidate]!)).toBeLessThanOrEqual(1e-12);
          expect(e.sparse).toBe(tokenLevel[e.candidate]);
          expect(Math.abs(e.pooledPart + e.sparsePart - fused[e.candidate]!)).toBeLessThanOrEqual(
            1e-12,
          );
          expect(e.score).toBe(fused[e.candidate]);
          const shares = e.tokens.reduce((acc, t) => acc + t.share, 0);
          if (e.sparse !== 0) expect(Math.abs(shares - 1)).toBeLessThanOrEqual(1e-9);
          for (const t of e.tokens) {
            if (matching === 'maxsim') {
              // MaxSim is exhaustive: its best is the diagnostic's, to float32 precision.
              expect(Math.abs(t.similarity - t.best!.similarity)).toBeLessThanOrEqual(1e-6);
              continue;
            }
            if (t.floored) {
              floored += 1;
              expect(t.memoryToken).toBe(-1);
              expect(t.contribution).toBe(t.floor / e.nQueryTokens);
              // The diagnostic's true best lies at or below the tail floor (else it was
              // proposed), even where the zero-floor score floors it at 0.
              expect(t.best!.similarity).toBeLessThanOrEqual(
                scores.tailFloor[t.queryToken]! + 1e-12,
              );
            } else {
              expect(t.similarity).toBeGreaterThanOrEqual(t.floor);
              expect(t.best!.memoryToken).toBe(t.memoryToken);
              expect(t.best!.similarity).toBe(t.similarity);
            }
          }
        }
      }
    }
    expect(floored).toBeGreaterThan(0);
  });

  it('takes a memory’s best token from exact hits: the same as every token’s float64 dot', async () => {
    // Duplicate tokens in some memories: equal similarities, where the first must win.
    const tokenVectors = memories.tokenVectors!.slice();
    for (let row = 0; row < 30; row += 3) {
      const from = memories.tokenOffsets[row]!;
      const to = memories.tokenOffsets[row + 1]!;
      for (let t = from + 1; t < to; t += 2) {
        tokenVectors.copyWithin(t * DIM, (t - 1) * DIM, t * DIM);
      }
    }
    const bank = { ...memories, tokenVectors };
    const scored = await js.score(
      { memories: bank, queries, queryRows: [0, 1, 2, 3, 4], candidates },
      { k: 5, alpha: 0.5, keepHits: true, maxsim: true },
    );
    let fromHits = 0;
    let fromDots = 0;
    for (const scores of scored) {
      expect(scores.hits!.exact).toBe(true);
      const queryTokens = queryTokensOf(queries, scores.queryRow);
      const all = candidates.map((_, g) => g);
      // The same scores with the hits not marked exact: every best from the memory's own dots.
      const exhaustive = { ...scores, hits: { ...scores.hits!, exact: false } };
      for (const [, matching, alpha] of CASES) {
        const quick = explainCandidates(
          { scores, memories: bank, queryTokens, matching, alpha },
          all,
        );
        const slow = explainCandidates(
          { scores: exhaustive, memories: bank, queryTokens, matching, alpha },
          all,
        );
        expect(quick).toEqual(slow);
        for (const e of quick) {
          for (const t of e.tokens) {
            const k = scores.hits!.k;
            const row = scores.hits!.memories.subarray(t.queryToken * k, (t.queryToken + 1) * k);
            if (row.includes(e.memoryRow)) fromHits += 1;
            else fromDots += 1;
          }
        }
      }
    }
    // Both ways were taken.
    expect(fromHits).toBeGreaterThan(0);
    expect(fromDots).toBeGreaterThan(0);
  });

  it('keepHits changes no score', async () => {
    const request = { memories, queries, queryRows: [0, 1, 2, 3, 4], candidates };
    const plain = await js.score(request, { k: 5 });
    const kept = await js.score(request, { k: 5, keepHits: true });
    const strip = (s: QueryScores) => {
      const { hits, ...rest } = s;
      expect(hits === undefined).toBe(s.pooledOnly);
      return rest;
    };
    expect(kept.map(strip)).toEqual(plain);
    expect(plain.every((s) => s.hits === undefined)).toBe(true);
  });

  it('refuses scores computed without keepHits, and a bad position', async () => {
    const [scores] = await js.score({ memories, queries, queryRows: [0], candidates }, { k: 5 });
    const queryTokens = queryTokensOf(queries, 0);
    const input = { scores: scores!, memories, queryTokens, matching: 'tail' as const, alpha: 0.5 };
    expect(() => explainCandidates(input, [0])).toThrow(/keepHits/);
    expect(() => explainCandidates(input, [candidates.length])).toThrow(/position/);
  });
});

/** A hand-made bank in 2-d: unit vectors at angles (radians). */
function at(...angles: number[]): number[] {
  return angles.flatMap((a) => [Math.cos(a), Math.sin(a)]);
}

describe('explainCandidates on a hand-made bank', () => {
  // Memory a: tokens at 0 and 1.2 rad; b and c: one token each at 0.5 rad (equal scores);
  // d: one token at 3 rad. Query tokens at 0 and at 1.6 rad. With k = 2 the first query token
  // proposes a's token 0 (cos 0 = 1) and one of b/c (cos 0.5), by the tie order of their ids.
  const memories: TokenBank = {
    dim: 2,
    tokenVectors: Float32Array.from([...at(0, 1.2), ...at(0.5), ...at(0.5), ...at(3)]),
    tokenOffsets: Int32Array.of(0, 2, 3, 4, 5),
    pooled: Float32Array.from(at(0.1, 0.4, 0.6, 2.5)),
    ids: ['a', 'b', 'c', 'd'],
  };
  const queries: TokenBank = {
    dim: 2,
    tokenVectors: Float32Array.from(at(0, 1.6)),
    tokenOffsets: Int32Array.of(0, 2, 2),
    pooled: Float32Array.from(at(0.2, 1)),
    ids: ['q', 'empty'],
  };
  const candidates = [0, 1, 2, 3];

  it('floors a memory with no proposed hit, and breaks a tie at the k-th place by tie order', async () => {
    const [scores] = await js.score(
      { memories, queries, queryRows: [0], candidates },
      { k: 2, alpha: 0.5, keepHits: true },
    );
    const queryTokens = queryTokensOf(queries, 0);
    const [a, b, c, d] = explainCandidates(
      { scores: scores!, memories, queryTokens, matching: 'tail', alpha: 0.5 },
      [0, 1, 2, 3],
    );
    const t0 = scores!.tailFloor[0]!;
    expect(t0).toBeCloseTo(Math.cos(0.5), 6);
    expect(a!.tokens[0]).toMatchObject({ memoryToken: 0, floored: false });
    expect(a!.tokens[0]!.similarity).toBeCloseTo(1, 6);
    // b and c tie at the k-th place: the one first in the tie order was proposed.
    const rank = tieOrder(['a', 'b', 'c', 'd']).rank;
    const [first, second] = rank[1]! < rank[2]! ? [b!, c!] : [c!, b!];
    expect(first.tokens[0]).toMatchObject({ memoryToken: 0, floored: false });
    expect(second.tokens[0]).toMatchObject({ memoryToken: -1, floored: true, floor: t0 });
    // The floored one's true best equals the floor, so its term is the same.
    expect(second.tokens[0]!.best!.similarity).toBeCloseTo(t0, 12);
    expect(second.tokens[0]!.contribution).toBe(first.tokens[0]!.contribution);
    // d (at 3 rad) is never proposed for token 0: floored, its true best far below the floor.
    expect(d!.tokens[0]).toMatchObject({ memoryToken: -1, floored: true, floor: t0 });
    expect(d!.tokens[0]!.best!.similarity).toBeCloseTo(Math.cos(3), 6);
    // Token 1 (1.6 rad) proposes a's token 1 (cos 0.4) and b/c's (cos 1.1).
    expect(a!.tokens[1]).toMatchObject({ memoryToken: 1, floored: false });
    for (const e of [a!, b!, c!, d!]) {
      const sum = e.tokens.reduce((s, t) => s + t.contribution, 0);
      expect(Math.abs(sum - scores!.sparse[e.candidate]!)).toBeLessThanOrEqual(1e-12);
    }
  });

  it('explains a query without content tokens by its pooled score alone', async () => {
    const [scores] = await js.score(
      { memories, queries, queryRows: [1], candidates },
      { k: 2, alpha: 0.5, keepHits: true },
    );
    expect(scores!.pooledOnly).toBe(true);
    const explained = explainCandidates(
      {
        scores: scores!,
        memories,
        queryTokens: new Float32Array(0),
        matching: 'tail',
        alpha: 0.5,
      },
      [0, 1, 2, 3],
    );
    for (const e of explained) {
      expect(e.tokens).toEqual([]);
      expect(e.score).toBe(scores!.systems['sparse-fusion'][e.candidate]);
      expect(e.score).toBe(e.pooled);
      expect(e.sparsePart).toBe(0);
    }
  });
});
