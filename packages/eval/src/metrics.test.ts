import { ConfigError, DataError } from '@bfe/core';
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import {
  BUDGET_KS,
  DEFAULT_KS,
  cappedRecallAt,
  checkKs,
  filterToCandidates,
  gradesOf,
  metricNames,
  ndcgAt,
  queryMetrics,
  rankByScore,
  recallAt,
} from './metrics.js';

const rel = (...ids: string[]) => new Set(ids);

describe('capped recall and NDCG (METHOD.md §6)', () => {
  it('caps recall at min(|relevant|, k)', () => {
    // 3 relevant, k = 2, one hit: 1 / min(3, 2).
    expect(cappedRecallAt(['a', 'x', 'b'], rel('a', 'b', 'c'), 2)).toBe(0.5);
    expect(recallAt(['a', 'x', 'b'], rel('a', 'b', 'c'), 2)).toBeCloseTo(1 / 3, 15);
    // 12 relevant, all ten of the top 10 relevant: capped recall 1, standard 10/12.
    const many = Array.from({ length: 12 }, (_, i) => `r${i}`);
    expect(cappedRecallAt(many, new Set(many), 10)).toBe(1);
    expect(recallAt(many, new Set(many), 10)).toBeCloseTo(10 / 12, 15);
  });

  it('computes binary NDCG with the log2 discount and the ideal over min(|relevant|, k)', () => {
    expect(ndcgAt(['x', 'a'], rel('a'), 10)).toBeCloseTo(1 / Math.log2(3), 15);
    // Hits at ranks 1 and 3 of 2 relevant: (1 + 1/log2 4) / (1 + 1/log2 3).
    expect(ndcgAt(['a', 'x', 'b'], rel('a', 'b'), 10)).toBeCloseTo(
      1.5 / (1 + 1 / Math.log2(3)),
      15,
    );
    // Only the top k count, and a relevant memory outside the ranking still counts in the ideal.
    expect(ndcgAt(['x', 'a'], rel('a'), 1)).toBe(0);
    expect(ndcgAt(['a'], rel('a', 'zz'), 10)).toBeCloseTo(1 / (1 + 1 / Math.log2(3)), 15);
  });

  it('gives 0 for an empty ranking and for nothing relevant', () => {
    expect(cappedRecallAt([], rel('a'), 5)).toBe(0);
    expect(ndcgAt([], rel('a'), 5)).toBe(0);
    expect(ndcgAt(['a'], rel(), 5)).toBe(0);
  });

  it('computes every cut-off in one pass exactly as the scalar functions do', () => {
    const ranked = ['a', 'x', 'b', 'y', 'c', 'z', 'd'];
    const relevant = rel('a', 'b', 'c', 'd', 'e');
    const ks = [1, 2, 3, 5, 7, 10, 50];
    const all = queryMetrics(ranked, relevant, ks);
    expect(Object.keys(all)).toEqual(metricNames(ks));
    for (const k of ks) {
      expect(all[`recall@${k}`]).toBe(cappedRecallAt(ranked, relevant, k));
      expect(all[`ndcg@${k}`]).toBe(ndcgAt(ranked, relevant, k));
    }
  });

  it('rejects a malformed cut-off in the scalar functions (programmer error)', () => {
    expect(() => ndcgAt(['a'], rel('a'), 0)).toThrow(/positive integer/);
    expect(() => cappedRecallAt(['a'], rel('a'), 1.5)).toThrow(/positive integer/);
  });
});

describe('filterToCandidates', () => {
  it('keeps the given order and drops ids outside the candidates', () => {
    expect(filterToCandidates(['m3', 'x9', 'm1', 'm2'], new Set(['m1', 'm2', 'm3']))).toEqual([
      'm3',
      'm1',
      'm2',
    ]);
  });

  it('refuses a ranking that repeats an id, candidate or not, naming query, id and ranks', () => {
    expect(() => filterToCandidates(['a', 'b', 'a'], new Set(['a']), 'q7')).toThrow(DataError);
    expect(() => filterToCandidates(['x', 'b', 'x'], new Set(['b']), 'q7')).toThrow(
      "Query 'q7': memory 'x' is ranked twice (ranks 1 and 3).",
    );
  });
});

describe('rankByScore (the stated tie rule)', () => {
  it('orders by descending score, ties by ascending id', () => {
    expect(rankByScore(['b', 'a', 'c'], Float64Array.of(0.5, 0.5, 0.9))).toEqual(['c', 'a', 'b']);
    expect(rankByScore(['m10', 'm9', 'm1'], [1, 1, 1])).toEqual(['m1', 'm10', 'm9']);
    expect(rankByScore(['a', 'b'], [-Infinity, Infinity])).toEqual(['b', 'a']);
  });

  it('refuses NaN scores with a DataError naming the memory', () => {
    expect(() => rankByScore(['a', 'b'], [0.1, NaN], 'q3')).toThrow(
      "Query 'q3': the score of memory 'b' is NaN.",
    );
    expect(() => rankByScore(['a'], [0.1, 0.2])).toThrow(/1 ids but 2 scores/);
  });
});

describe('checkKs', () => {
  it('sorts a valid list and keeps the default', () => {
    expect(checkKs([10, 1, 5])).toEqual([1, 5, 10]);
    expect(DEFAULT_KS).toEqual([1, 4, 5, 8, 10, 16, 25, 50]);
  });

  it('reports the memory budgets K ∈ {4, 8, 10, 16} by default', () => {
    expect(BUDGET_KS).toEqual([4, 8, 10, 16]);
    for (const k of BUDGET_KS) expect(DEFAULT_KS).toContain(k);
    expect(Object.keys(queryMetrics(['a'], rel('a'), checkKs(DEFAULT_KS)))).toEqual(
      expect.arrayContaining(['recall@4', 'recall@8', 'recall@16', 'ndcg@4', 'ndcg@8', 'ndcg@16']),
    );
  });

  it.each([[[]], [[10, Number.NaN]], [[0]], [[2.5]], [[-1]], [[5, 5]]])(
    'rejects %j with a ConfigError',
    (ks) => {
      expect(() => checkKs(ks)).toThrow(ConfigError);
    },
  );
});

const graded = (...pairs: [string, number][]) => new Map(pairs);

describe('graded gains (gain = grade, as trec_eval ndcg_cut)', () => {
  it('uses the grade as the gain and the best grades first in the ideal', () => {
    // g1 (grade 1) at rank 1, g2 (grade 3) at rank 2. Ideal: 3, then 1.
    const relevant = graded(['g1', 1], ['g2', 3]);
    expect(ndcgAt(['g1', 'g2'], relevant, 1)).toBe(1 / 3);
    const dcg = 1 + 3 / Math.log2(3);
    const ideal = 3 + 1 / Math.log2(3);
    expect(ndcgAt(['g1', 'g2'], relevant, 10)).toBeCloseTo(dcg / ideal, 15);
    expect(ndcgAt(['g2', 'g1'], relevant, 10)).toBeCloseTo(1, 15);
    // Binary gains would score the first ranking 1 at k = 1.
    expect(ndcgAt(['g1', 'g2'], rel('g1', 'g2'), 1)).toBe(1);
    // An unranked grade-2 memory still counts in the ideal: DCG 1, ideal 2 + 1/log2 3.
    expect(ndcgAt(['a'], graded(['a', 1], ['zz', 2]), 10)).toBeCloseTo(
      1 / (2 + 1 / Math.log2(3)),
      15,
    );
  });

  it('keeps recall at "relevant = grade > 0", whatever the grades', () => {
    const relevant = graded(['a', 1], ['b', 4], ['c', 2]);
    expect(cappedRecallAt(['a', 'x', 'b'], relevant, 2)).toBe(0.5);
    expect(recallAt(['a', 'x', 'b'], relevant, 3)).toBeCloseTo(2 / 3, 15);
  });

  it('gives exactly the binary numbers when every grade is 1 (same code path)', () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.integer({ min: 0, max: 60 }), { maxLength: 60 }),
        fc.uniqueArray(fc.integer({ min: 0, max: 80 }), { minLength: 1, maxLength: 30 }),
        (rankedIds, relevantIds) => {
          const ranked = rankedIds.map((i) => `m${i}`);
          const ids = relevantIds.map((i) => `m${i}`);
          const ks = checkKs(DEFAULT_KS);
          const asMap = new Map(ids.map((id) => [id, 1]));
          expect(gradesOf(asMap)).toBeUndefined();
          expect(queryMetrics(ranked, asMap, ks)).toEqual(queryMetrics(ranked, new Set(ids), ks));
          for (const k of ks)
            expect(ndcgAt(ranked, asMap, k)).toBe(ndcgAt(ranked, new Set(ids), k));
        },
      ),
      { numRuns: 200 },
    );
  });

  it('computes every graded cut-off in one pass as the scalar functions do', () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.integer({ min: 0, max: 60 }), { maxLength: 60 }),
        fc.uniqueArray(fc.tuple(fc.integer({ min: 0, max: 80 }), fc.integer({ min: 1, max: 4 })), {
          minLength: 1,
          maxLength: 30,
          selector: ([id]) => id,
        }),
        (rankedIds, judged) => {
          const ranked = rankedIds.map((i) => `m${i}`);
          const relevant = new Map(judged.map(([i, g]) => [`m${i}`, g]));
          const ks = checkKs(DEFAULT_KS);
          const all = queryMetrics(ranked, relevant, ks);
          for (const k of ks) {
            expect(all[`recall@${k}`]).toBe(cappedRecallAt(ranked, relevant, k));
            expect(all[`ndcg@${k}`]).toBeCloseTo(ndcgAt(ranked, relevant, k), 14);
            expect(all[`ndcg@${k}`]).toBeGreaterThanOrEqual(0);
            expect(all[`ndcg@${k}`]).toBeLessThanOrEqual(1 + 1e-12);
          }
        },
      ),
      { numRuns: 200 },
    );
  });

  it('refuses a grade that is not > 0 (labels never hold one)', () => {
    expect(() => gradesOf(graded(['a', 0]))).toThrow(/must be > 0/);
    expect(() => ndcgAt(['a'], graded(['a', 2], ['b', Number.NaN]), 5)).toThrow(/must be > 0/);
    expect(gradesOf(graded(['a', 1], ['b', 2]))).toEqual(graded(['a', 1], ['b', 2]));
    expect(gradesOf(rel('a'))).toBeUndefined();
  });
});
