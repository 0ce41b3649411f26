import { afterAll, describe, expect, it } from 'vitest';
import { rng, unitVectors } from '@bfe/index/testing';
import { tieOrder } from '@bfe/index';
import { bm25Scores } from '../bm25.js';
import { SparseScorer } from '../scorer.js';
import { groupByCandidates, type RankQuery } from './groups.js';
import { fuseHybrid, normalizeHybridWeights, rankHybridGrid, simplexGrid } from './hybrid.js';
import { rankSystems } from './rank-systems.js';
import { rankIds, type RankingSide } from './sides.js';
import { SCORE_SYSTEMS } from './systems.js';

const scorer = await SparseScorer.open({ kernel: 'js' });
afterAll(() => scorer.dispose());

describe('fuseHybrid', () => {
  it('sums the weighted z-scores of the three branches (hand-computed reference)', () => {
    // pooled [1, 2, 3]: μ 2, σ √(2/3) → z = [−√1.5, 0, √1.5]
    // sparse [0, 0, 3]: μ 1, σ √2     → z = [−1/√2, −1/√2, √2]
    // bm25   [4, 0, 0]: μ 4/3, σ √(32/9) → z = [√2, −1/√2, −1/√2]
    const w = { pooled: 0.5, sparse: 0.25, bm25: 0.25 };
    const out = fuseHybrid([1, 2, 3], [0, 0, 3], [4, 0, 0], w);
    const r = Math.SQRT1_2;
    const expected = [
      0.5 * -Math.sqrt(1.5) + 0.25 * -r + 0.25 * Math.SQRT2,
      0 + 0.25 * -r + 0.25 * -r,
      0.5 * Math.sqrt(1.5) + 0.25 * Math.SQRT2 + 0.25 * -r,
    ];
    expect(out).toHaveLength(3);
    out.forEach((x, i) => expect(x).toBeCloseTo(expected[i]!, 12));
    expect(expected.map((x) => Number(x.toFixed(6)))).toEqual([-0.435596, -0.353553, 0.789149]);
  });

  it('a constant branch (no content token, no word in common) contributes 0', () => {
    const w = { pooled: 0.2, sparse: 0.3, bm25: 0.5 };
    const out = fuseHybrid([0.1, 0.3, 0.2], [0, 0, 0], [1.5, 1.5, 1.5], w);
    const zp = [-Math.sqrt(1.5), Math.sqrt(1.5), 0];
    out.forEach((x, i) => expect(x).toBeCloseTo(0.2 * zp[i]!, 12));
  });

  it('refuses weights off the simplex and misaligned branches', () => {
    expect(() => fuseHybrid([1, 2], [1, 2], [1, 2], { pooled: 1, sparse: 1, bm25: 0 })).toThrow(
      /simplex/,
    );
    expect(() =>
      fuseHybrid([1, 2], [1, 2], [1, 2], { pooled: 1.5, sparse: -0.5, bm25: 0 }),
    ).toThrow(/simplex/);
    expect(() => fuseHybrid([1, 2], [1], [1, 2], { pooled: 1, sparse: 0, bm25: 0 })).toThrow(
      /2 pooled, 1 sparse/,
    );
  });
});

describe('normalizeHybridWeights', () => {
  it('scales the weights to sum 1 and refuses negative or all-zero weights', () => {
    expect(normalizeHybridWeights({ pooled: 1, sparse: 1, bm25: 2 })).toEqual({
      pooled: 0.25,
      sparse: 0.25,
      bm25: 0.5,
    });
    expect(() => normalizeHybridWeights({ pooled: 0, sparse: 0, bm25: 0 })).toThrow(/all be 0/);
    expect(() => normalizeHybridWeights({ pooled: -1, sparse: 1, bm25: 1 })).toThrow(/≥ 0/);
  });
});

describe('simplexGrid', () => {
  it('lists the lattice in (pooled, sparse) order', () => {
    expect(simplexGrid(0.5)).toEqual([
      { pooled: 0, sparse: 0, bm25: 1 },
      { pooled: 0, sparse: 0.5, bm25: 0.5 },
      { pooled: 0, sparse: 1, bm25: 0 },
      { pooled: 0.5, sparse: 0, bm25: 0.5 },
      { pooled: 0.5, sparse: 0.5, bm25: 0 },
      { pooled: 1, sparse: 0, bm25: 0 },
    ]);
    const tenth = simplexGrid(0.1);
    expect(tenth).toHaveLength(66);
    for (const w of tenth) expect(Math.abs(w.pooled + w.sparse + w.bm25 - 1)).toBeLessThan(1e-12);
    expect(new Set(tenth.map((w) => JSON.stringify(w))).size).toBe(66);
  });

  it('refuses a step whose inverse is not an integer', () => {
    expect(() => simplexGrid(0.3)).toThrow(/1\/step/);
    expect(() => simplexGrid(0)).toThrow(/1\/step/);
    expect(() => simplexGrid(2)).toThrow(/1\/step/);
  });
});

const DIM = 16;
function side(prefix: string, counts: readonly number[], seed: number): RankingSide {
  const random = rng(seed);
  const tokenOffsets = new Int32Array(counts.length + 1);
  counts.forEach((n, i) => (tokenOffsets[i + 1] = tokenOffsets[i]! + n));
  return {
    dim: DIM,
    ids: counts.map((_, i) => `${prefix}${i}`),
    tokenVectors: unitVectors(tokenOffsets[counts.length]!, DIM, random),
    tokenOffsets,
    pooled: unitVectors(counts.length, DIM, random),
  };
}
const WORDS = ['cat', 'dog', 'bird', 'fish', 'tree', 'car', 'rain', 'sun'];
const text = (i: number) => `${WORDS[i % 8]} ${WORDS[(i * 3 + 1) % 8]} ${WORDS[(i * 5 + 2) % 8]}`;
const memories = side('m', [4, 4, 4, 4, 4, 4, 2, 3, 6, 7, 5, 8], 1);
const bankIds = ['a', 'a', 'a', 'a', 'a', 'a', 'b', 'b', 'c', 'c', 'c', 'c'];
const memoryTexts = memories.ids.map((_, i) => text(i));
// q3 has no content tokens: its sparse branch is constant and drops out of the fusion.
const queries = side('q', [3, 5, 2, 0, 4, 3], 2);
const rankQueries: RankQuery[] = [
  { id: 'q0', text: 'cat dog', candidateBankIds: ['a'] },
  { id: 'q1', text: 'bird', candidateBankIds: ['b'] },
  { id: 'q2', text: 'rain sun tree', candidateBankIds: ['a', 'c'] },
  { id: 'q3', text: 'fish', candidateBankIds: ['a'] },
  { id: 'q4', text: 'car cat', candidateIds: ['m9', 'm2', 'm11'] },
  { id: 'q5', text: 'dog', candidateBankIds: ['b'] },
];
const groups = groupByCandidates({ ids: memories.ids, bankIds }, rankQueries);
const base = { memories, memoryTexts, queries, groups, k: 8, alpha: 0.5, top: 50 };
const ties = tieOrder(memories.ids);

describe('the hybrid systems in rankSystems', () => {
  const weights = { pooled: 0.2, sparse: 0.5, bm25: 0.3 };
  const selected = { pooled: 0, sparse: 0.6, bm25: 0.4 };

  it('are absent without weights, and ranked by the fusion of the main-k scores and BM25', async () => {
    const plain = await rankSystems(scorer, base);
    expect([...plain.systems.keys()]).toEqual([...SCORE_SYSTEMS]);
    const ranked = await rankSystems(scorer, { ...base, hybrid: { weights, selected } });
    expect([...ranked.systems.keys()]).toEqual([...SCORE_SYSTEMS, 'hybrid', 'hybrid-selected']);
    // The other systems are untouched by the hybrid ones.
    for (const name of SCORE_SYSTEMS) {
      expect(ranked.systems.get(name), name).toEqual(plain.systems.get(name));
    }
    for (const group of groups) {
      const scored = await scorer.score(
        {
          memories,
          queries,
          queryRows: group.queries.map((q) => queries.ids.indexOf(q.id)),
          candidates: group.rows,
        },
        { k: 8, alpha: 0.5, maxsim: false, clampK: true },
      );
      const bm25 = bm25Scores(
        Array.from(group.rows, (r) => memoryTexts[r]!),
        group.queries.map((q) => q.text!),
      );
      scored.forEach((s, i) => {
        const id = group.queries[i]!.id;
        for (const [name, w] of [
          ['hybrid', weights],
          ['hybrid-selected', selected],
        ] as const) {
          const fused = fuseHybrid(s.systems.pooled, s.sparse, bm25[i]!, w);
          expect(ranked.systems.get(name)?.get(id), `${name} ${id}`).toEqual(
            rankIds(s.candidates, fused, ties, 50),
          );
        }
      });
    }
    expect(ranked.ties.get('hybrid')?.queries).toBe(6);
    expect(ranked.stats.seconds.bm25Index).toBeGreaterThanOrEqual(0);
    expect(ranked.stats.seconds.bm25Index).toBeLessThanOrEqual(ranked.stats.seconds.bm25);
  });

  it('reduces to pooled, BM25 and sparse fusion at the simplex corners and the α = 0.5 edge', async () => {
    const rankAt = async (w: { pooled: number; sparse: number; bm25: number }) =>
      (await rankSystems(scorer, { ...base, hybrid: { weights: w } })).systems;
    const plain = (await rankSystems(scorer, base)).systems;
    expect((await rankAt({ pooled: 1, sparse: 0, bm25: 0 })).get('hybrid')).toEqual(
      plain.get('pooled'),
    );
    expect((await rankAt({ pooled: 0, sparse: 0, bm25: 1 })).get('hybrid')).toEqual(
      plain.get('bm25'),
    );
    expect((await rankAt({ pooled: 0.5, sparse: 0.5, bm25: 0 })).get('hybrid')).toEqual(
      plain.get('sparse-fusion'),
    );
  });

  it('hybrid-selected alone needs its weights; BM25 needs the texts', async () => {
    await expect(
      rankSystems(scorer, { ...base, systems: ['hybrid-selected'], hybrid: { weights } }),
    ).rejects.toThrow(/hybrid-selected system needs its weights/);
    const { memories: m, queries: q, groups: g, k, alpha, top } = base;
    const noTexts = { memories: m, queries: q, groups: g, k, alpha, top };
    await expect(
      rankSystems(scorer, { ...noTexts, systems: ['hybrid'], hybrid: { weights } }),
    ).rejects.toThrow(/BM25 needs the memory texts/);
    // Alone, hybrid still gets its scorer pass.
    const alone = await rankSystems(scorer, { ...base, systems: ['hybrid'], hybrid: { weights } });
    const both = await rankSystems(scorer, { ...base, hybrid: { weights } });
    expect(alone.systems.get('hybrid')).toEqual(both.systems.get('hybrid'));
  });
});

describe('rankHybridGrid', () => {
  it('gives at each grid point the ranking rankSystems gives at those weights', async () => {
    const grid = simplexGrid(0.5);
    const runs = await rankHybridGrid(scorer, { ...base, grid });
    expect(runs).toHaveLength(grid.length);
    for (let g = 0; g < grid.length; g++) {
      const ranked = await rankSystems(scorer, {
        ...base,
        systems: ['hybrid'],
        hybrid: { weights: grid[g]! },
      });
      expect(runs[g], JSON.stringify(grid[g])).toEqual(ranked.systems.get('hybrid'));
    }
  });
});
