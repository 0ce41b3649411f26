import { ConfigError, DataError } from '@bfe/core';
import { uniformFloat64 } from 'pure-rand/distribution/uniformFloat64';
import { xoroshiro128plus } from 'pure-rand/generator/xoroshiro128plus';
import { describe, expect, it } from 'vitest';
import { aggregate } from './evaluate.js';
import type { Evaluation, QueryRecord } from './evaluate.js';
import type { MetricValues } from './metrics.js';
import {
  comparePaired,
  pairedBootstrap,
  pairedDifferences,
  pairedRandomizationTest,
  stratifiedMean,
} from './significance.js';

/** Deterministic test data: uniform doubles in [lo, hi). */
function uniform(seed: number, n: number, lo = 0, hi = 1): Float64Array {
  const rng = xoroshiro128plus(seed);
  const out = new Float64Array(n);
  for (let i = 0; i < n; i++) out[i] = lo + (hi - lo) * uniformFloat64(rng);
  return out;
}

/** Exact two-sided sign-flip p-value by enumerating all 2^n flips (small n only). */
function exactSignFlipP(strata: readonly Float64Array[]): number {
  const flat = strata.flatMap((s, si) => [...s].map((v) => ({ v, si })));
  const sizes = strata.map((s) => s.length);
  const observed = Math.abs(stratifiedMean(strata));
  let extreme = 0;
  const total = 2 ** flat.length;
  for (let mask = 0; mask < total; mask++) {
    const sums = sizes.map(() => 0);
    flat.forEach(({ v, si }, i) => {
      sums[si] = (sums[si] as number) + ((mask >> i) & 1 ? -v : v);
    });
    const t = sums.reduce((acc, sum, si) => acc + sum / (sizes[si] as number), 0) / sizes.length;
    if (Math.abs(t) >= observed - 1e-12) extreme += 1;
  }
  return extreme / total;
}

/** An evaluation whose per-query ndcg@10 and recall@10 are the given values. */
function evaluationOf(values: Record<string, number[]>, shift = 0): Evaluation {
  const records: QueryRecord[] = [];
  for (const [subtask, list] of Object.entries(values)) {
    list.forEach((v, i) => {
      const x = Math.min(1, Math.max(0, v + shift));
      const metrics = { 'recall@10': x, 'ndcg@10': x } as MetricValues;
      records.push({ queryId: `${subtask}-${i}`, subtask, metrics, ranked: [], relevant: ['r'] });
    });
  }
  return aggregate(records, [], Object.keys(values), [10], null);
}

describe('stratifiedMean', () => {
  it('weights strata equally and skips empty ones', () => {
    expect(stratifiedMean([[1, 0], [1], []])).toBe(0.75);
  });
});

describe('pairedRandomizationTest', () => {
  it('matches the exact enumeration of all sign flips', () => {
    const cases: Float64Array[][] = [
      [Float64Array.of(0.3, 0.2, 0.4, 0.1)],
      [Float64Array.of(0.5, -0.1, 0.2), Float64Array.of(0.05, 0.3, -0.2, 0.4, 0.1)],
      [uniform(1, 6, -0.5, 1), uniform(2, 3, -1, 0.5), uniform(3, 4, -0.2, 0.2)],
      [Float64Array.of(1, -1, 1, -1, 0.5, -0.5)],
    ];
    const resamples = 20_000;
    for (const strata of cases) {
      const exact = exactSignFlipP(strata);
      const { pValue, meanDiff } = pairedRandomizationTest(strata, { resamples, seed: 7 });
      expect(meanDiff).toBeCloseTo(stratifiedMean(strata), 15);
      // Monte Carlo error: 4 standard errors plus the +1 of the estimator.
      const se = Math.sqrt((exact * (1 - exact)) / resamples);
      expect(Math.abs(pValue - exact)).toBeLessThanOrEqual(4 * se + 2 / resamples);
    }
  });

  it('gives p = 1 when there is no difference and never 0', () => {
    expect(pairedRandomizationTest([new Float64Array(30)], { resamples: 500 }).pValue).toBe(1);
    const big = pairedRandomizationTest([new Float64Array(200).fill(0.4)], { resamples: 999 });
    expect(big.pValue).toBe(1 / 1000);
  });

  it('is reproducible for a seed and changes with the seed', () => {
    const strata = [uniform(11, 40, -0.3, 0.35)];
    const a = pairedRandomizationTest(strata, { resamples: 2000, seed: 42 });
    expect(pairedRandomizationTest(strata, { resamples: 2000, seed: 42 })).toEqual(a);
    expect(pairedRandomizationTest(strata, { resamples: 2000, seed: 43 }).pValue).not.toBe(
      a.pValue,
    );
  });
});

describe('pairedBootstrap', () => {
  it('is degenerate where it must be', () => {
    expect(pairedBootstrap([Float64Array.of(0.25)], { resamples: 100 }).ci95).toEqual([0.25, 0.25]);
    expect(pairedBootstrap([new Float64Array(10)], { resamples: 100 }).ci95).toEqual([0, 0]);
  });

  it('has the width the stratified plug-in variance predicts', () => {
    // Two strata of different sizes and spreads. The stratified bootstrap statistic has variance
    // (1/S²) Σ σ²_s / n_s (σ² the within-stratum population variance); a pooled bootstrap would not.
    const strata = [uniform(5, 1500, -0.4, 0.6), uniform(6, 300, -1, 1)];
    const variance =
      strata.reduce((acc, s) => {
        const mean = s.reduce((a, v) => a + v, 0) / s.length;
        const v = s.reduce((a, x) => a + (x - mean) ** 2, 0) / s.length;
        return acc + v / s.length;
      }, 0) / 4;
    const { ci95, meanDiff } = pairedBootstrap(strata, { resamples: 10_000, seed: 42 });
    expect(meanDiff).toBeCloseTo(stratifiedMean(strata), 15);
    const predicted = 2 * 1.959964 * Math.sqrt(variance);
    expect((ci95[1] - ci95[0]) / predicted).toBeGreaterThan(0.95);
    expect((ci95[1] - ci95[0]) / predicted).toBeLessThan(1.05);
    expect(ci95[0]).toBeLessThan(meanDiff);
    expect(ci95[1]).toBeGreaterThan(meanDiff);
  });

  it('is reproducible for a seed', () => {
    const strata = [uniform(8, 50, -1, 1), uniform(9, 7, -1, 1)];
    expect(pairedBootstrap(strata, { resamples: 1000, seed: 3 })).toEqual(
      pairedBootstrap(strata, { resamples: 1000, seed: 3 }),
    );
  });

  it.each([
    [{ resamples: 0 }],
    [{ resamples: Number.NaN }],
    [{ seed: -1 }],
    [{ seed: 2 ** 32 }],
    [{ seed: 1.5 }],
  ])('refuses %j as a configuration error', (options) => {
    expect(() => pairedBootstrap([Float64Array.of(1)], options)).toThrow(ConfigError);
    expect(() => pairedRandomizationTest([Float64Array.of(1)], options)).toThrow(ConfigError);
  });

  it('refuses non-finite differences and empty input as programmer errors', () => {
    expect(() => pairedBootstrap([Float64Array.of(0.1, Number.NaN)])).toThrow(
      'paired test: difference 1 of stratum 0 is NaN',
    );
    expect(() => pairedRandomizationTest([[], []])).toThrow('no paired values');
  });
});

describe('comparePaired', () => {
  const base = { A: [...uniform(21, 120)], B: [...uniform(22, 15)] };

  it('finds no difference between a system and itself', () => {
    const e = evaluationOf(base);
    const d = comparePaired(e, e, { resamples: 500 })['ndcg@10'];
    expect(d).toEqual({ meanDiff: 0, ci95: [0, 0], pValue: 1 });
  });

  it('detects a clear improvement and is antisymmetric', () => {
    const a = evaluationOf(base, 0.1);
    const b = evaluationOf(base);
    const ab = comparePaired(a, b, { resamples: 2000, seed: 42 })['recall@10'];
    const ba = comparePaired(b, a, { resamples: 2000, seed: 42 })['recall@10'];
    expect(ab?.meanDiff).toBeCloseTo(
      (a.metrics['recall@10'] as number) - (b.metrics['recall@10'] as number),
      12,
    );
    expect(ab?.pValue).toBe(1 / 2001);
    expect(ab?.ci95[0]).toBeGreaterThan(0);
    expect(ba?.meanDiff).toBeCloseTo(-(ab?.meanDiff as number), 15);
    expect(ba?.pValue).toBe(ab?.pValue);
    expect(ba?.ci95[0]).toBeCloseTo(-(ab?.ci95[1] as number), 12);
    expect(ba?.ci95[1]).toBeCloseTo(-(ab?.ci95[0] as number), 12);
  });

  it('shares resamples across metrics: each metric equals a one-metric run bit for bit', () => {
    const a = evaluationOf({ A: [...uniform(31, 90)], B: [...uniform(32, 9)] });
    const b = evaluationOf({ A: [...uniform(33, 90)], B: [...uniform(34, 9)] });
    const records = a.queries.map((q, i) => ({
      ...q,
      metrics: {
        ...q.metrics,
        'ndcg@10': (q.metrics['ndcg@10'] as number) * (i % 3 === 0 ? 0.5 : 1),
      },
    }));
    const a2 = aggregate(records, [], ['A', 'B'], [10], null);
    const both = comparePaired(a2, b, { resamples: 3000, seed: 9 });
    for (const metric of ['recall@10', 'ndcg@10'] as const) {
      const strata = pairedDifferences(a2, b, metric);
      const boot = pairedBootstrap(strata, { resamples: 3000, seed: 9 });
      const test = pairedRandomizationTest(strata, { resamples: 3000, seed: 9 });
      expect(both[metric]).toEqual({
        meanDiff: boot.meanDiff,
        ci95: boot.ci95,
        pValue: test.pValue,
      });
    }
    expect(both['ndcg@10']).not.toEqual(both['recall@10']);
    expect(comparePaired(a2, b, { metrics: [] })).toEqual({});
  });

  it('groups differences by subtask in declared order', () => {
    const strata = pairedDifferences(evaluationOf(base, 0.05), evaluationOf(base), 'ndcg@10');
    expect(strata.map((s) => s.length)).toEqual([120, 15]);
  });

  it('refuses systems evaluated on different queries', () => {
    const a = evaluationOf(base);
    const fewer = evaluationOf({ A: base.A.slice(1), B: base.B });
    expect(() => comparePaired(a, fewer)).toThrow(DataError);
    const renamed = evaluationOf({ A: base.A, C: base.B });
    expect(() => comparePaired(a, renamed)).toThrow(
      /evaluated for the first system but not the second/,
    );
  });

  it('refuses a metric that was not computed', () => {
    const e = evaluationOf(base);
    expect(() => comparePaired(e, e, { metrics: ['ndcg@5'] })).toThrow(ConfigError);
  });
});
