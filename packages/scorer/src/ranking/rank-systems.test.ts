import { createHash } from 'node:crypto';
import { ArtifactCorruptError } from '@bfe/core';
import { afterAll, describe, expect, it } from 'vitest';
import { bm25Scores, type Bm25Options } from '../bm25.js';
import { fuse } from '../fusion.js';
import { SparseScorer } from '../scorer.js';
import { rng, unitVectors } from '@bfe/index/testing';
import { referenceScores } from '../testing/reference.js';
import { tieOrder } from '@bfe/index';
import { rankFusionGrid, rankFusionGrids } from './fusion-grid.js';
import { groupByCandidates, type RankQuery } from './groups.js';
import { rankBm25 } from './bm25-rank.js';
import { rankSystems } from './rank-systems.js';
import { rankIds, type RankingSide } from './sides.js';
import type { RankingSystem } from './systems.js';
import {
  ADAPTED_SYSTEMS,
  HYBRID_SYSTEMS,
  SCORE_SYSTEMS,
  SWEEP_SYSTEMS,
  SYSTEMS,
} from './systems.js';

const scorer = await SparseScorer.open({ kernel: 'js' });
afterAll(() => scorer.dispose());

const DIM = 16;

/** A bank side whose row `i` has `counts[i]` random unit tokens. */
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

// Banks a (rows 0–5, 4 tokens each: 24 tokens), b (rows 6–7, 2 + 3 tokens) and c (rows 8–11).
const memories = side('m', [4, 4, 4, 4, 4, 4, 2, 3, 6, 7, 5, 8], 1);
const bankIds = ['a', 'a', 'a', 'a', 'a', 'a', 'b', 'b', 'c', 'c', 'c', 'c'];
const memoryTexts = memories.ids.map((_, i) => text(i));
// q3 has no content tokens: it ranks by the pooled score.
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
const tieKeyOf = (id: string) => createHash('sha256').update(`42:${id}`).digest('hex');

describe('SYSTEMS', () => {
  it('describes every system, and the k-dependent ones are exactly SWEEP_SYSTEMS', () => {
    expect(Object.keys(SYSTEMS).sort()).toEqual(
      [...SCORE_SYSTEMS, ...ADAPTED_SYSTEMS, ...HYBRID_SYSTEMS].sort(),
    );
    for (const [name, d] of Object.entries(SYSTEMS)) expect(d.name).toBe(name);
    expect(SCORE_SYSTEMS.filter((n) => SYSTEMS[n].sweepsK)).toEqual([...SWEEP_SYSTEMS]);
  });
});

describe('rankSystems', () => {
  it('ranks every system from the scorer, query by query in group order', async () => {
    const ranked = await rankSystems(scorer, base);
    expect([...ranked.systems.keys()]).toEqual([...SCORE_SYSTEMS]);
    const order = groups.flatMap((g) => g.queries.map((q) => q.id));
    expect(order).toEqual(['q0', 'q3', 'q1', 'q5', 'q2', 'q4']);
    const rowsOf = new Map(memories.ids.map((id, row) => [id, row]));
    for (const [name, runs] of ranked.systems) {
      expect([...runs.keys()], name).toEqual(order);
      if (SYSTEMS[name].source !== 'scorer') continue;
      for (const group of groups) {
        const scored = await scorer.score(
          {
            memories,
            queries,
            queryRows: group.queries.map((q) => queries.ids.indexOf(q.id)),
            candidates: group.rows,
          },
          { k: 8, alpha: 0.5, maxsim: true, clampK: true },
        );
        scored.forEach((s, i) => {
          const expected = rankIds(s.candidates, s.systems[SYSTEMS[name].scores!]!, ties, 50);
          expect(runs.get(group.queries[i]!.id), `${name} ${group.queries[i]!.id}`).toEqual(
            expected,
          );
        });
      }
      // Every ranking lists exactly the query's candidates.
      for (const group of groups) {
        for (const q of group.queries) {
          const ranking = runs.get(q.id)!;
          expect(ranking.map((id) => rowsOf.get(id)).sort((x, y) => x! - y!)).toEqual(
            [...group.rows].sort((x, y) => x - y),
          );
        }
      }
    }
    expect(ranked.stats).toMatchObject({
      queries: 6,
      groups: 4,
      clampedGroups: 1, // bank b: 5 tokens < k = 8
      pooledOnlyQueries: 1,
    });
    expect([...ranked.ties.keys()]).toEqual([...SCORE_SYSTEMS]);
    for (const counts of ranked.ties.values()) expect(counts.queries).toBe(6);
  });

  it('cuts every ranking to top', async () => {
    const ranked = await rankSystems(scorer, { ...base, top: 2 });
    for (const runs of ranked.systems.values()) {
      for (const ranking of runs.values()) expect(ranking.length).toBe(2);
    }
    await expect(rankSystems(scorer, { ...base, top: 0 })).rejects.toThrow(/top must be/);
  });

  it('breaks ties by the seeded hash of the memory ids, whatever the bank order, and counts them', async () => {
    // Four identical memories (tokens, pooled vector, text): every system ties them.
    const one = side('x', [3], 5);
    const dupes: RankingSide = {
      ...one,
      ids: ['d0', 'd1', 'd2', 'd3'],
      tokenVectors: new Float32Array([0, 1, 2, 3].flatMap(() => [...one.tokenVectors!])),
      tokenOffsets: Int32Array.of(0, 3, 6, 9, 12),
      pooled: new Float32Array([0, 1, 2, 3].flatMap(() => [...one.pooled])),
    };
    const q = side('t', [2], 6);
    const rankDupes = async (ids: string[]) => {
      const tied = groupByCandidates({ ids }, [
        { id: 't0', text: 'cat', candidateIds: ['d3', 'd1', 'd0', 'd2'] },
      ]);
      return rankSystems(scorer, {
        ...base,
        memories: { ...dupes, ids },
        memoryTexts: ['cat dog', 'cat dog', 'cat dog', 'cat dog'],
        queries: q,
        groups: tied,
        adapted: { queryTokens: q.tokenVectors!, alpha: 0.3 },
      });
    };
    const byKey = ['d0', 'd1', 'd2', 'd3'].sort((a, b) => (tieKeyOf(a) < tieKeyOf(b) ? -1 : 1));
    expect(byKey).not.toEqual(['d0', 'd1', 'd2', 'd3']);
    // The same memories in two bank orders: the same ranking, by tie key.
    for (const ids of [dupes.ids, ['d2', 'd0', 'd3', 'd1']]) {
      const ranked = await rankDupes([...ids]);
      expect([...ranked.systems.keys()]).toEqual([...SCORE_SYSTEMS, ...ADAPTED_SYSTEMS]);
      for (const [name, runs] of ranked.systems) {
        expect(runs.get('t0'), name).toEqual(byKey);
        // Every one of the four positions was decided by the tie order.
        expect(ranked.ties.get(name), name).toEqual({
          queries: 1,
          queriesWithTies: 1,
          tiedPositions: 4,
        });
      }
    }
  });

  it('ranks BM25 from the candidates’ texts, in a group of two candidates too', async () => {
    const ranked = await rankSystems(scorer, { ...base, systems: ['bm25'], kSweep: [4] });
    expect([...ranked.systems.keys()]).toEqual(['bm25']);
    expect(ranked.sweep.size).toBe(0);
    expect(ranked.stats.clampedGroups).toBe(0);
    for (const group of groups) {
      const texts = Array.from(group.rows, (r) => memoryTexts[r]!);
      const scores = bm25Scores(
        texts,
        group.queries.map((q) => q.text!),
      );
      group.queries.forEach((q, i) =>
        expect(ranked.systems.get('bm25')?.get(q.id)).toEqual(
          rankIds(group.rows, scores[i]!, ties, 50),
        ),
      );
    }
    const small = groups.find((g) => g.rows.length < 3)!;
    expect(small.rows.length).toBe(2);
    await expect(rankSystems(scorer, { ...base, memoryTexts: undefined! })).rejects.toThrow(
      /BM25 needs the memory texts/,
    );
  });

  it('ranks BM25 with the language and IDF it is given (corpus IDF over every memory text)', async () => {
    // Bank b holds 'apple apple' and 'banana'; every other memory holds 'apple' too.
    const texts = memoryTexts.map((t, i) =>
      i === 6 ? 'apple apple' : i === 7 ? 'banana' : `${t} apple`,
    );
    const qs = rankQueries.map((q) => (q.id === 'q1' ? { ...q, text: 'apples banana' } : q));
    const g = groupByCandidates({ ids: memories.ids, bankIds }, qs);
    const q1 = async (bm25: Bm25Options) => {
      const ranked = await rankSystems(scorer, {
        ...base,
        memoryTexts: texts,
        groups: g,
        systems: ['bm25'],
        kSweep: [4],
        bm25,
      });
      // BM25 alone, without a scorer, gives the same rankings.
      const alone = rankBm25({ memories, memoryTexts: texts, groups: g, top: 50, bm25 });
      expect(alone).toEqual(ranked.systems.get('bm25'));
      return alone.get('q1');
    };
    // English: 'apples' stems to 'apple'; over the two candidates both words are equally rare,
    // and two 'apple's outweigh one 'banana'.
    expect(await q1({ language: 'english', idf: 'candidates' })).toEqual(['m6', 'm7']);
    // Over all 12 memories 'apple' is common (11) and 'banana' rare (1).
    expect(await q1({ language: 'english', idf: 'corpus' })).toEqual(['m7', 'm6']);
    // Without stemming 'apples' is not 'apple': only 'banana' matches.
    expect(await q1({ language: 'none', idf: 'candidates' })).toEqual(['m7', 'm6']);
  });

  it('counts clamped groups at each k of the sweep; the main k shares its rankings', async () => {
    const ranked = await rankSystems(scorer, { ...base, k: 8, kSweep: [3, 8, 6, 26, 8] });
    expect([...ranked.sweep.keys()]).toEqual([3, 8, 6, 26]);
    // Tokens per group: a 24, b 5, a+c 50, {m2, m9, m11} 19.
    expect([...ranked.sweep.values()].map((p) => p.clampedGroups)).toEqual([0, 1, 1, 3]);
    expect(ranked.stats.clampedGroups).toBe(1);
    const main = ranked.sweep.get(8)!;
    for (const name of SWEEP_SYSTEMS) {
      expect(main.systems.get(name)).toBe(ranked.systems.get(name));
    }
    expect([...main.systems.keys()]).toEqual([...SWEEP_SYSTEMS]);
    for (const kk of [3, 6, 26]) {
      const alone = await rankSystems(scorer, { ...base, k: kk, systems: [...SWEEP_SYSTEMS] });
      for (const name of SWEEP_SYSTEMS) {
        expect(ranked.sweep.get(kk)?.systems.get(name), `${name} at k = ${kk}`).toEqual(
          alone.systems.get(name),
        );
      }
    }
  });

  it('ranks adapted as sparse fusion with the adapted query tokens at the adapted α', async () => {
    const queryTokens = unitVectors(queries.tokenVectors!.length / DIM, DIM, rng(9));
    const ranked = await rankSystems(scorer, { ...base, adapted: { queryTokens, alpha: 0.3 } });
    expect([...ranked.systems.keys()]).toEqual([...SCORE_SYSTEMS, ...ADAPTED_SYSTEMS]);
    const replaced = await rankSystems(scorer, {
      ...base,
      queries: { ...queries, tokenVectors: queryTokens },
      alpha: 0.3,
      systems: ['sparse-fusion'],
    });
    expect(ranked.systems.get('adapted')).toEqual(replaced.systems.get('sparse-fusion'));
    expect(ranked.systems.get('adapted')).not.toEqual(ranked.systems.get('sparse-fusion'));
    await expect(rankSystems(scorer, { ...base, systems: ['adapted'] })).rejects.toThrow(
      /adapted query tokens/,
    );
  });

  it('ranks adapted-zero-floor and maxsim-fusion as the float64 reference does', async () => {
    const queryTokens = unitVectors(queries.tokenVectors!.length / DIM, DIM, rng(13));
    const ranked = await rankSystems(scorer, { ...base, adapted: { queryTokens, alpha: 0.3 } });
    const adaptedQueries = { ...queries, tokenVectors: queryTokens };
    for (const group of groups) {
      const tokens = Array.from(
        group.rows,
        (r) => memories.tokenOffsets[r + 1]! - memories.tokenOffsets[r]!,
      );
      const k = Math.min(
        8,
        tokens.reduce((a, b) => a + b, 0),
      );
      for (const q of group.queries) {
        const row = queries.ids.indexOf(q.id);
        const rows = Array.from(group.rows);
        const plain = referenceScores(
          { ...memories, tokenVectors: memories.tokenVectors! },
          { ...queries, tokenVectors: queries.tokenVectors! },
          row,
          rows,
          k,
          0.5,
        );
        const adapted = referenceScores(
          { ...memories, tokenVectors: memories.tokenVectors! },
          adaptedQueries,
          row,
          rows,
          k,
          0.3,
        );
        const noTokens = plain.tailFloor.length === 0; // q3: every system ranks by pooled
        const expected = {
          'maxsim-fusion': noTokens ? plain.pooled : plain.maxsimFused,
          'adapted-zero-floor': noTokens ? plain.pooled : adapted.zeroFloorFused,
          'zero-floor': noTokens ? plain.pooled : plain.zeroFloorFused,
        } as const;
        // Each ranking lists the candidates in descending reference score (up to 1e-9: two
        // candidates standardise to ±1, so at α = 0.5 they may fuse to 0 exactly, a tie).
        const rowOf = new Map(rows.map((r, g) => [memories.ids[r]!, g]));
        for (const [name, scores] of Object.entries(expected)) {
          const ranking = ranked.systems.get(name as RankingSystem)!.get(q.id)!;
          expect(ranking.length).toBe(rows.length);
          const ref = ranking.map((id) => scores[rowOf.get(id)!]!);
          for (let i = 1; i < ref.length; i++) {
            expect(ref[i]!, `${name} ${q.id} at ${i}`).toBeLessThanOrEqual(ref[i - 1]! + 1e-9);
          }
        }
      }
    }
    // Different systems, not another name for an existing one.
    expect(ranked.systems.get('adapted-zero-floor')).not.toEqual(ranked.systems.get('zero-floor'));
    expect(ranked.systems.get('adapted-zero-floor')).not.toEqual(ranked.systems.get('adapted'));
    expect(ranked.systems.get('maxsim-fusion')).not.toEqual(ranked.systems.get('maxsim'));
    expect(ranked.systems.get('maxsim-fusion')).not.toEqual(ranked.systems.get('sparse-fusion'));
    // Without adapted tokens there is no adapted-zero-floor.
    expect((await rankSystems(scorer, base)).systems.has('adapted-zero-floor')).toBe(false);
    await expect(rankSystems(scorer, { ...base, systems: ['adapted-zero-floor'] })).rejects.toThrow(
      /adapted query tokens/,
    );
  });

  it('refuses a query that is not a row of the query bank', async () => {
    const stray = groupByCandidates({ ids: memories.ids }, [{ id: 'q9', candidateIds: ['m0'] }]);
    await expect(rankSystems(scorer, { ...base, groups: stray })).rejects.toThrow(
      new ArtifactCorruptError("Query 'q9' is not in the bank."),
    );
    await expect(rankFusionGrid(scorer, { ...base, groups: stray, alphas: [0.5] })).rejects.toThrow(
      ArtifactCorruptError,
    );
  });
});

describe('rankFusionGrid', () => {
  it('equals a separate fuse and rank per α from one sparse search', async () => {
    const alphas = [0, 0.25, 0.5, 1];
    const grid = await rankFusionGrid(scorer, { ...base, alphas });
    expect([...grid.keys()]).toEqual(alphas);
    for (const alpha of alphas) {
      const expected = new Map<string, string[]>();
      for (const group of groups) {
        const scored = await scorer.score(
          {
            memories,
            queries,
            queryRows: group.queries.map((q) => queries.ids.indexOf(q.id)),
            candidates: group.rows,
          },
          { k: 8, alpha, clampK: true },
        );
        scored.forEach((s, i) => {
          const fused = s.pooledOnly ? s.systems.pooled : fuse(s.systems.pooled, s.sparse, alpha);
          expected.set(group.queries[i]!.id, rankIds(s.candidates, fused, ties, 50));
        });
      }
      expect(grid.get(alpha), `α = ${alpha}`).toEqual(expected);
      const system = await rankSystems(scorer, { ...base, alpha, systems: ['sparse-fusion'] });
      expect(grid.get(alpha), `α = ${alpha}`).toEqual(system.systems.get('sparse-fusion'));
    }
  });

  it('replaces the query tokens when given, like the adapted system', async () => {
    const queryTokens = unitVectors(queries.tokenVectors!.length / DIM, DIM, rng(11));
    const grid = await rankFusionGrid(scorer, { ...base, alphas: [0.3], queryTokens });
    const adapted = await rankSystems(scorer, {
      ...base,
      systems: ['adapted'],
      adapted: { queryTokens, alpha: 0.3 },
    });
    expect(grid.get(0.3)).toEqual(adapted.systems.get('adapted'));
  });
});

describe('rankFusionGrids', () => {
  it('ranks the zero floor per α as the zero-floor systems do, from the same search', async () => {
    const alphas = [0.25, 0.5, 0.75];
    const grids = await rankFusionGrids(scorer, { ...base, alphas }, ['tail', 'zero']);
    expect([...grids.keys()]).toEqual(['tail', 'zero']);
    expect(grids.get('tail')).toEqual(await rankFusionGrid(scorer, { ...base, alphas }));
    const queryTokens = unitVectors(queries.tokenVectors!.length / DIM, DIM, rng(17));
    const adapted = await rankFusionGrids(scorer, { ...base, alphas, queryTokens }, ['zero']);
    for (const alpha of alphas) {
      const plain = await rankSystems(scorer, { ...base, alpha, systems: ['zero-floor'] });
      expect(grids.get('zero')?.get(alpha), `α = ${alpha}`).toEqual(
        plain.systems.get('zero-floor'),
      );
      const own = await rankSystems(scorer, {
        ...base,
        systems: ['adapted-zero-floor'],
        adapted: { queryTokens, alpha },
      });
      expect(adapted.get('zero')?.get(alpha), `α = ${alpha}`).toEqual(
        own.systems.get('adapted-zero-floor'),
      );
    }
    expect(grids.get('zero')?.get(0.25)).not.toEqual(grids.get('tail')?.get(0.25));
    await expect(rankFusionGrids(scorer, { ...base, alphas }, ['zero', 'zero'])).rejects.toThrow(
      /floors repeat/,
    );
  });
});

describe('adapted-zero-floor at its own selection', () => {
  const tailTokens = unitVectors(queries.tokenVectors!.length / DIM, DIM, rng(19));
  const zeroTokens = unitVectors(queries.tokenVectors!.length / DIM, DIM, rng(23));
  const zeroGrid = async (queryTokens: Float32Array, alpha: number) =>
    (await rankFusionGrids(scorer, { ...base, alphas: [alpha], queryTokens }, ['zero']))
      .get('zero')
      ?.get(alpha);

  it('ranks adapted-zero-floor with its own query tokens and α, adapted with its own', async () => {
    const without = await rankSystems(scorer, {
      ...base,
      adapted: { queryTokens: tailTokens, alpha: 0.25 },
    });
    const own = await rankSystems(scorer, {
      ...base,
      adapted: {
        queryTokens: tailTokens,
        alpha: 0.25,
        zeroFloor: { queryTokens: zeroTokens, alpha: 0.75 },
      },
    });
    expect(own.systems.get('adapted')).toEqual(without.systems.get('adapted'));
    expect(own.systems.get('adapted-zero-floor')).toEqual(await zeroGrid(zeroTokens, 0.75));
    expect(own.systems.get('adapted-zero-floor')).not.toEqual(
      without.systems.get('adapted-zero-floor'),
    );
    // Without a selection of its own it is the adapted pass's zero floor at adapted's α.
    expect(without.systems.get('adapted-zero-floor')).toEqual(await zeroGrid(tailTokens, 0.25));
  });

  it('shares the adapted pass when both selected the same epoch, each at its own α', async () => {
    const shared = await rankSystems(scorer, {
      ...base,
      adapted: {
        queryTokens: tailTokens,
        alpha: 0.25,
        zeroFloor: { queryTokens: tailTokens, alpha: 0.75 },
      },
    });
    expect(shared.systems.get('adapted-zero-floor')).toEqual(await zeroGrid(tailTokens, 0.75));
    const tail = await rankFusionGrid(scorer, {
      ...base,
      alphas: [0.25],
      queryTokens: tailTokens,
    });
    expect(shared.systems.get('adapted')).toEqual(tail.get(0.25));
    // Only adapted-zero-floor asked for: its own tokens, with no pass for adapted.
    const alone = await rankSystems(scorer, {
      ...base,
      systems: ['adapted-zero-floor'],
      adapted: {
        queryTokens: tailTokens,
        alpha: 0.25,
        zeroFloor: { queryTokens: zeroTokens, alpha: 0.5 },
      },
    });
    expect(alone.systems.get('adapted-zero-floor')).toEqual(await zeroGrid(zeroTokens, 0.5));
  });
});
