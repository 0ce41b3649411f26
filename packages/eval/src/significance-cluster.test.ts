import { readFileSync } from 'node:fs';
import { DataError } from '@bfe/core';
import { uniformFloat64 } from 'pure-rand/distribution/uniformFloat64';
import { uniformInt } from 'pure-rand/distribution/uniformInt';
import { xoroshiro128plus } from 'pure-rand/generator/xoroshiro128plus';
import { describe, expect, it } from 'vitest';
import { aggregate } from './evaluate.js';
import type { Evaluation, QueryRecord } from './evaluate.js';
import type { MetricValues } from './metrics.js';
import { comparePaired, pairedBootstrap, pairedRandomizationTest } from './significance.js';
import {
  countClusters,
  pairedClusterBootstrap,
  pairedClusterIds,
  pairedClusterRandomizationTest,
} from './significance-cluster.js';

/** Deterministic test data: uniform doubles in [lo, hi). */
function uniform(seed: number, n: number, lo = 0, hi = 1): Float64Array {
  const rng = xoroshiro128plus(seed);
  const out = new Float64Array(n);
  for (let i = 0; i < n; i++) out[i] = lo + (hi - lo) * uniformFloat64(rng);
  return out;
}

/** Paired values over strata with cluster ids: cluster k shifts all its values by a shared effect. */
function clustered(
  seed: number,
  nClusters: number,
  nStrata: number,
): { strata: Float64Array[]; clusters: string[][] } {
  const rng = xoroshiro128plus(seed);
  const values: number[][] = Array.from({ length: nStrata }, () => []);
  const clusters: string[][] = Array.from({ length: nStrata }, () => []);
  for (let k = 0; k < nClusters; k++) {
    const effect = 0.1 * (uniformFloat64(rng) - 0.3);
    for (let s = 0; s < nStrata; s++) {
      const n = uniformInt(rng, 0, 3);
      for (let i = 0; i < n; i++) {
        (values[s] as number[]).push(effect + 0.2 * (uniformFloat64(rng) - 0.5));
        (clusters[s] as string[]).push(`c${k}`);
      }
    }
  }
  return { strata: values.map((v) => Float64Array.from(v)), clusters };
}

/**
 * Exact two-sided cluster sign-flip p-value: the share of the 2^n cluster sign patterns whose
 * stratified mean is at least as extreme, each computed directly from the values.
 */
function exactClusterP(strata: readonly Float64Array[], clusters: readonly string[][]): number {
  const ids = [...new Set(clusters.flat())];
  const stat = (sign: (id: string) => number): number => {
    let total = 0;
    let present = 0;
    strata.forEach((values, s) => {
      if (values.length === 0) return;
      let sum = 0;
      values.forEach((v, i) => (sum += sign((clusters[s] as string[])[i] as string) * v));
      total += sum / values.length;
      present += 1;
    });
    return total / present;
  };
  const observed = Math.abs(stat(() => 1));
  let extreme = 0;
  const total = 2 ** ids.length;
  for (let mask = 0; mask < total; mask++) {
    const t = stat((id) => ((mask >> ids.indexOf(id)) & 1 ? -1 : 1));
    if (Math.abs(t) >= observed - 1e-12) extreme += 1;
  }
  return extreme / total;
}

/** An evaluation whose per-query ndcg@10 and recall@10 are the given values (recall halved). */
function evaluationOf(values: Record<string, number[]>): Evaluation {
  const records: QueryRecord[] = [];
  for (const [subtask, list] of Object.entries(values)) {
    list.forEach((v, i) => {
      const metrics = { 'recall@10': v / 2, 'ndcg@10': v } as MetricValues;
      records.push({ queryId: `${subtask}-${i}`, subtask, metrics, ranked: [], relevant: ['r'] });
    });
  }
  return aggregate(records, [], Object.keys(values), [10], null);
}

describe('cluster tests with one query per cluster', () => {
  it('equal the query-level tests bit for bit (same draws, same flips)', () => {
    for (const seed of [1, 2, 3]) {
      const values = uniform(seed, 40, -0.5, 0.7);
      const ids = [...values].map((_, i) => `bank-${i}`);
      const options = { resamples: 2000, seed: 100 + seed };
      const cluster = pairedClusterBootstrap([values], [ids], options);
      const query = pairedBootstrap([values], options);
      expect(cluster.ci95).toEqual(query.ci95);
      expect(cluster.meanDiff).toBe(query.meanDiff);
      expect(cluster.nClusters).toBe(40);
      expect(pairedClusterRandomizationTest([values], [ids], options).pValue).toBe(
        pairedRandomizationTest([values], options).pValue,
      );
    }
  });
});

describe('pairedClusterRandomizationTest', () => {
  it('matches exact enumeration over the 2^n cluster sign patterns within MC error', () => {
    const resamples = 20_000;
    for (const [seed, n] of [
      [11, 6],
      [12, 10],
      [13, 12],
    ] as const) {
      const { strata, clusters } = clustered(seed, n, 3);
      const exact = exactClusterP(strata, clusters);
      const got = pairedClusterRandomizationTest(strata, clusters, { resamples, seed }).pValue;
      const sd = Math.sqrt((exact * (1 - exact)) / resamples);
      expect(Math.abs(got - exact)).toBeLessThanOrEqual(4.5 * sd + 2 / resamples);
    }
  });

  it('flips a cluster as one: a single cluster gives p = 1', () => {
    const strata = [Float64Array.of(0.3, 0.2, 0.4), Float64Array.of(0.1)];
    const clusters = [['a', 'a', 'a'], ['a']];
    // Query-level flips would find this difference significant; one cluster cannot.
    expect(pairedRandomizationTest(strata, { resamples: 4000 }).pValue).toBeLessThan(0.2);
    expect(pairedClusterRandomizationTest(strata, clusters, { resamples: 4000 }).pValue).toBe(1);
  });
});

describe('pairedClusterBootstrap', () => {
  interface Fixture {
    strata: number[][];
    clusters: string[][];
    meanDiff: number;
    resamples: number;
    ci95Mean: [number, number];
    ci95Sd: [number, number];
    exactP: number;
  }
  const fixture = JSON.parse(
    readFileSync(new URL('../fixtures/reference-cluster.json', import.meta.url), 'utf8'),
  ) as Fixture;

  it('matches a numpy percentile cluster bootstrap within MC error (fixtures/reference-cluster.json)', () => {
    const got = pairedClusterBootstrap(fixture.strata, fixture.clusters, {
      resamples: fixture.resamples,
      seed: 42,
    });
    expect(got.meanDiff).toBeCloseTo(fixture.meanDiff, 12);
    for (const e of [0, 1] as const) {
      // A single run against the mean of the reference's runs: sd × √(1 + 1/repeats) < 1.02 sd.
      expect(Math.abs(got.ci95[e] - fixture.ci95Mean[e])).toBeLessThanOrEqual(
        5 * fixture.ci95Sd[e],
      );
    }
    // The fixture's exact p-value, enumerated in Python, agrees with the enumeration here.
    const strata = fixture.strata.map((s) => Float64Array.from(s));
    expect(exactClusterP(strata, fixture.clusters)).toBeCloseTo(fixture.exactP, 12);
  });

  it('is wider than the query-level interval when clusters share an effect', () => {
    const { strata, clusters } = clustered(7, 8, 2);
    const cluster = pairedClusterBootstrap(strata, clusters, { resamples: 4000 }).ci95;
    const query = pairedBootstrap(strata, { resamples: 4000 }).ci95;
    expect(cluster[1] - cluster[0]).toBeGreaterThan(query[1] - query[0]);
  });

  it('collapses to the observed difference with a single cluster', () => {
    const strata = [Float64Array.of(0.25, 0.5), Float64Array.of(1)];
    const got = pairedClusterBootstrap(strata, [['a', 'a'], ['a']], { resamples: 500 });
    expect(got.ci95[0]).toBeCloseTo(0.6875, 15);
    expect(got.ci95[1]).toBeCloseTo(0.6875, 15);
  });

  it('refuses malformed shapes', () => {
    expect(() => pairedClusterBootstrap([Float64Array.of(1, 2)], [['a']])).toThrow(/cluster ids/);
    expect(() => pairedClusterBootstrap([Float64Array.of(1)], [['a'], []])).toThrow(/strata/);
  });
});

describe('comparePaired with clusters', () => {
  const a = evaluationOf({ s1: [0.9, 0.4, 0.8, 0.7, 0.6, 0.9], s2: [0.5, 0.9, 0.7, 1] });
  const b = evaluationOf({ s1: [0.5, 0.5, 0.6, 0.2, 0.6, 0.4], s2: [0.5, 0.4, 0.8, 0.3] });
  const clusters = new Map([
    ['s1-0', 'x'],
    ['s1-1', 'x'],
    ['s1-2', 'y'],
    ['s1-3', 'z'],
    ['s1-4', 'z'],
    ['s1-5', 'w'],
    ['s2-0', 'x'],
    ['s2-1', 'y'],
    ['s2-2', 'w'],
    ['s2-3', 'v'],
  ]);
  const options = { resamples: 3000, seed: 9 };

  it('keeps the query-level figures bit for bit and adds the one-metric cluster figures', () => {
    const plain = comparePaired(a, b, options);
    const withClusters = comparePaired(a, b, { ...options, clusters });
    const ids = pairedClusterIds(a, clusters);
    expect(ids).toEqual([
      ['x', 'x', 'y', 'z', 'z', 'w'],
      ['x', 'y', 'w', 'v'],
    ]);
    for (const metric of ['recall@10', 'ndcg@10'] as const) {
      const p = plain[metric];
      const c = withClusters[metric];
      expect(p?.cluster).toBeUndefined();
      expect({ meanDiff: c?.meanDiff, ci95: c?.ci95, pValue: c?.pValue }).toEqual(p);
      const strata = [0, 1].map((s) => {
        const subtask = `s${s + 1}`;
        return Float64Array.from(
          a.queries
            .filter((q) => q.subtask === subtask)
            .map((q, i) => {
              const other = b.queries.find((r) => r.queryId === q.queryId);
              expect(other?.queryId).toBe(`${subtask}-${i}`);
              return (q.metrics[metric] as number) - (other?.metrics[metric] as number);
            }),
        );
      });
      expect(c?.cluster).toEqual({
        ci95: pairedClusterBootstrap(strata, ids, options).ci95,
        pValue: pairedClusterRandomizationTest(strata, ids, options).pValue,
      });
    }
  });

  it('refuses an evaluated query without a cluster id', () => {
    const partial = new Map([...clusters].filter(([q]) => q !== 's2-3'));
    expect(() => comparePaired(a, b, { ...options, clusters: partial })).toThrow(DataError);
    expect(countClusters(['s1-0', 's1-1', 's2-3'], partial)).toBe(1);
  });
});
