import { afterAll, describe, expect, it } from 'vitest';
import { rng, unitVectors } from '@bfe/index/testing';
import { tieOrder } from '@bfe/index';
import { SparseScorer } from '../scorer.js';
import {
  chunkedPooledName,
  chunkedPooledScoresInto,
  rankChunkedPooled,
  type WindowPools,
} from './chunked-pooled.js';
import { groupByCandidates, type RankQuery } from './groups.js';
import { rankSystems } from './rank-systems.js';
import { rankIds, type RankingSide } from './sides.js';

const DIM = 12;

function side(prefix: string, rows: number, seed: number): RankingSide {
  const random = rng(seed);
  const tokenOffsets = new Int32Array(rows + 1);
  for (let i = 0; i < rows; i++) tokenOffsets[i + 1] = tokenOffsets[i]! + 2;
  return {
    dim: DIM,
    ids: Array.from({ length: rows }, (_, i) => `${prefix}${i}`),
    tokenVectors: unitVectors(rows * 2, DIM, random),
    tokenOffsets,
    pooled: unitVectors(rows, DIM, random),
  };
}

/** Window pools of `counts[r]` random unit windows per memory row. */
function randomPools(counts: readonly number[], seed: number): WindowPools {
  const offsets = new Int32Array(counts.length + 1);
  counts.forEach((n, r) => (offsets[r + 1] = offsets[r]! + n));
  return { dim: DIM, offsets, vectors: unitVectors(offsets[counts.length]!, DIM, rng(seed)) };
}

const memories = side('m', 9, 1);
const queries = side('q', 4, 2);
const bankIds = ['a', 'a', 'a', 'a', 'a', 'b', 'b', 'b', 'b'];
const rankQueries: RankQuery[] = [
  { id: 'q0', candidateBankIds: ['a'] },
  { id: 'q1', candidateBankIds: ['b'] },
  { id: 'q2', candidateBankIds: ['a', 'b'] },
  { id: 'q3', candidateBankIds: ['a'] },
];
const groups = groupByCandidates({ ids: memories.ids, bankIds }, rankQueries);

const scorer = await SparseScorer.open({ kernel: 'js' });
afterAll(() => scorer.dispose());

describe('chunkedPooledScoresInto: max over a memory’s windows', () => {
  it('equals max_w p_q·p_w computed plainly, for every candidate order', () => {
    const counts = [1, 3, 2, 5, 1, 4, 1, 2, 7];
    const pools = randomPools(counts, 3);
    for (let q = 0; q < 4; q++) {
      const candidates = Int32Array.of(8, 0, 3, 5, 1);
      const out = new Float64Array(candidates.length);
      chunkedPooledScoresInto(out, queries.pooled, q, pools, candidates);
      candidates.forEach((row, g) => {
        let best = -Infinity;
        for (let w = pools.offsets[row]!; w < pools.offsets[row + 1]!; w++) {
          let s = 0;
          for (let k = 0; k < DIM; k++)
            s += queries.pooled[q * DIM + k]! * pools.vectors[w * DIM + k]!;
          best = Math.max(best, s);
        }
        expect(out[g]).toBeCloseTo(best, 12);
      });
    }
  });

  it('scores a memory by its best window, not its mean', () => {
    // Windows [1, 0, …] and [0, 1, …]; query [0.6, 0.8, …] → 0.8 (the mean would give 0.7).
    const vectors = new Float32Array(2 * DIM);
    vectors[0] = 1;
    vectors[DIM + 1] = 1;
    const query = new Float32Array(DIM);
    query[0] = 0.6;
    query[1] = 0.8;
    const out = new Float64Array(1);
    const pools = { dim: DIM, offsets: Int32Array.of(0, 2), vectors };
    chunkedPooledScoresInto(out, query, 0, pools, Int32Array.of(0));
    expect(out[0]).toBeCloseTo(0.8, 6);
  });

  it('refuses a memory row without a window', () => {
    const pools = { dim: DIM, offsets: Int32Array.of(0, 1, 1), vectors: new Float32Array(DIM) };
    expect(() =>
      chunkedPooledScoresInto(new Float64Array(1), queries.pooled, 0, pools, Int32Array.of(1)),
    ).toThrow(/row 1 has no window/);
  });
});

describe('rankChunkedPooled', () => {
  it('with one window per memory (its pooled vector) ranks exactly as pooled, ties counted alike', async () => {
    const pools = {
      dim: DIM,
      offsets: Int32Array.from({ length: 10 }, (_, i) => i),
      vectors: memories.pooled,
    };
    const chunked = rankChunkedPooled({ memories, queries, groups, pools, top: 50 });
    const base = { memories, queries, groups, k: 4, alpha: 0.5, top: 50 };
    const ranked = await rankSystems(scorer, { ...base, systems: ['pooled'] });
    expect(chunked.rankings).toEqual(ranked.systems.get('pooled'));
    expect(chunked.ties).toEqual(ranked.ties.get('pooled'));
  });

  it('ranks each query’s own candidates by the best window, ties by the seeded id order', () => {
    const pools = randomPools([2, 1, 3, 1, 2, 4, 1, 1, 2], 5);
    const { rankings } = rankChunkedPooled({ memories, queries, groups, pools, top: 3 });
    const ties = tieOrder(memories.ids);
    for (const g of groups) {
      for (const q of g.queries) {
        const row = Number(q.id.slice(1));
        const scores = Float64Array.from(g.rows, (r) => {
          let best = -Infinity;
          for (let w = pools.offsets[r]!; w < pools.offsets[r + 1]!; w++) {
            let s = 0;
            for (let k = 0; k < DIM; k++)
              s += queries.pooled[row * DIM + k]! * pools.vectors[w * DIM + k]!;
            best = Math.max(best, s);
          }
          return best;
        });
        const expected = rankIds(g.rows, scores, ties, 3);
        expect(rankings.get(q.id)).toEqual(expected);
        expect(expected.every((id) => g.ids.has(id))).toBe(true);
      }
    }
  });

  it('refuses pools that do not cover the memory rows', () => {
    const pools = randomPools([1, 1], 6);
    expect(() => rankChunkedPooled({ memories, queries, groups, pools, top: 5 })).toThrow(
      /2 pooled rows for 9 memories/,
    );
  });

  it('names the systems by window size', () => {
    expect(chunkedPooledName(32)).toBe('chunked-pooled@32');
    expect(() => chunkedPooledName(0)).toThrow();
  });
});
