import { DataError } from '@bfe/core';
import { uniformInt } from 'pure-rand/distribution/uniformInt';
import { xoroshiro128plus } from 'pure-rand/generator/xoroshiro128plus';
import type { Evaluation } from './evaluate.js';
import { checkOptions, ci95Of } from './significance-options.js';
import type { PairedTestOptions } from './significance-options.js';

/**
 * Paired tests over clusters of queries (METHOD.md §6 "Intervals"): queries that share a
 * bank (a conversation, a haystack, an article) are not independent, so the resampling unit is
 * the cluster. The statistic is the headline difference, as for the query-level tests: the
 * unweighted mean over subtasks of each subtask's mean per-query difference.
 */

/**
 * The cluster-level figures of one paired difference.
 *
 * @example
 * // { ci95: [-0.004, 0.061], pValue: 0.083 }
 */
export interface ClusterDifference {
  /** Percentile 95% interval of the paired cluster bootstrap. */
  readonly ci95: readonly [number, number];
  /** Two-sided p-value of the cluster sign-flip test (a cluster's queries flip together). */
  readonly pValue: number;
}

/**
 * The cluster id of every paired value, parallel to the strata: `clusters[s][i]` is the cluster
 * of the i-th value (row) of stratum s.
 *
 * @example
 * const clusters: StrataClusters = [['conv-26', 'conv-30'], ['conv-26']];
 */
export type StrataClusters = readonly (readonly string[])[];

/**
 * Per-cluster, per-stratum sums of `m` columns: what both cluster tests read. Clusters are
 * numbered by first appearance (stratum by stratum, value by value), so with one value per
 * cluster the cluster order is the value order.
 */
interface ClusterTable {
  readonly nClusters: number;
  /** Non-empty strata. */
  readonly nStrata: number;
  readonly m: number;
  /** Values per stratum, `[nStrata]`. */
  readonly stratumSizes: Float64Array;
  /** Per cluster: the strata it has values in (ascending). */
  readonly strataOf: readonly Int32Array[];
  /** Per cluster, aligned with `strataOf`: its number of values in that stratum. */
  readonly countsOf: readonly Float64Array[];
  /** Per cluster, aligned with `strataOf`: `[strata × m]` sums in value order. */
  readonly sumsOf: readonly Float64Array[];
}

function clusterTable(
  strata: readonly ArrayLike<number>[],
  clusters: StrataClusters,
  m: number,
): ClusterTable {
  if (strata.length !== clusters.length) {
    throw new Error(`cluster test: ${strata.length} strata but ${clusters.length} cluster lists`);
  }
  const index = new Map<string, number>();
  // Per cluster: stratum → [count, sum_0 … sum_{m−1}].
  const cells: Map<number, Float64Array>[] = [];
  const stratumSizes: number[] = [];
  for (let s = 0; s < strata.length; s++) {
    const values = strata[s] as ArrayLike<number>;
    const ids = clusters[s] as readonly string[];
    if (values.length !== ids.length * m) {
      throw new Error(
        `cluster test: stratum ${s} holds ${values.length} values for ${ids.length} cluster ids`,
      );
    }
    if (ids.length === 0) continue;
    const j = stratumSizes.length;
    stratumSizes.push(ids.length);
    for (let i = 0; i < ids.length; i++) {
      const id = ids[i] as string;
      let k = index.get(id);
      if (k === undefined) {
        k = cells.length;
        index.set(id, k);
        cells.push(new Map());
      }
      const byStratum = cells[k] as Map<number, Float64Array>;
      let cell = byStratum.get(j);
      if (cell === undefined) {
        cell = new Float64Array(1 + m);
        byStratum.set(j, cell);
      }
      cell[0] = (cell[0] as number) + 1;
      for (let c = 0; c < m; c++) {
        const v = values[i * m + c] as number;
        if (!Number.isFinite(v))
          throw new Error(`cluster test: value ${i} of stratum ${s} is ${v}`);
        cell[1 + c] = (cell[1 + c] as number) + v;
      }
    }
  }
  if (stratumSizes.length === 0) throw new Error('cluster test: there are no paired values');
  const strataOf: Int32Array[] = [];
  const countsOf: Float64Array[] = [];
  const sumsOf: Float64Array[] = [];
  for (const byStratum of cells) {
    const js = [...byStratum.keys()].sort((a, b) => a - b);
    const sums = new Float64Array(js.length * m);
    const counts = new Float64Array(js.length);
    js.forEach((j, t) => {
      const cell = byStratum.get(j) as Float64Array;
      counts[t] = cell[0] as number;
      for (let c = 0; c < m; c++) sums[t * m + c] = cell[1 + c] as number;
    });
    strataOf.push(Int32Array.from(js));
    countsOf.push(counts);
    sumsOf.push(sums);
  }
  return {
    nClusters: cells.length,
    nStrata: stratumSizes.length,
    m,
    stratumSizes: Float64Array.from(stratumSizes),
    strataOf,
    countsOf,
    sumsOf,
  };
}

/**
 * Bootstrap replicates `[resamples × m]`: each draws `nClusters` clusters with replacement
 * (`uniformInt`, a cluster drawn twice counts twice); each subtask's mean is the mean over all
 * drawn values of that subtask; the statistic is the mean over the subtasks present.
 */
function clusterBootstrapColumns(t: ClusterTable, resamples: number, seed: number): Float64Array {
  const { nClusters, nStrata, m, strataOf, countsOf, sumsOf } = t;
  const rng = xoroshiro128plus(seed);
  const replicates = new Float64Array(resamples * m);
  const sum = new Float64Array(nStrata * m);
  const count = new Float64Array(nStrata);
  const total = new Float64Array(m);
  for (let r = 0; r < resamples; r++) {
    sum.fill(0);
    count.fill(0);
    for (let d = 0; d < nClusters; d++) {
      const k = uniformInt(rng, 0, nClusters - 1);
      const js = strataOf[k] as Int32Array;
      const counts = countsOf[k] as Float64Array;
      const sums = sumsOf[k] as Float64Array;
      for (let x = 0; x < js.length; x++) {
        const j = js[x] as number;
        count[j] = (count[j] as number) + (counts[x] as number);
        for (let c = 0; c < m; c++) {
          sum[j * m + c] = (sum[j * m + c] as number) + (sums[x * m + c] as number);
        }
      }
    }
    total.fill(0);
    let present = 0;
    for (let j = 0; j < nStrata; j++) {
      const n = count[j] as number;
      if (n === 0) continue;
      present += 1;
      for (let c = 0; c < m; c++) total[c] = (total[c] as number) + (sum[j * m + c] as number) / n;
    }
    for (let c = 0; c < m; c++) replicates[r * m + c] = (total[c] as number) / present;
  }
  return replicates;
}

/**
 * The stratified mean of every column with cluster k's values multiplied by `signs[k]`
 * (`undefined`: all +1), from the cluster sums; `sum` is `[nStrata × m]` scratch.
 */
function signedStatistic(
  t: ClusterTable,
  signs: Int8Array | undefined,
  sum: Float64Array,
  out: Float64Array,
): void {
  const { nClusters, nStrata, m, strataOf, sumsOf, stratumSizes } = t;
  sum.fill(0);
  for (let k = 0; k < nClusters; k++) {
    const negative = signs !== undefined && signs[k] === -1;
    const js = strataOf[k] as Int32Array;
    const sums = sumsOf[k] as Float64Array;
    for (let x = 0; x < js.length; x++) {
      const j = js[x] as number;
      for (let c = 0; c < m; c++) {
        const v = sums[x * m + c] as number;
        sum[j * m + c] = (sum[j * m + c] as number) + (negative ? -v : v);
      }
    }
  }
  out.fill(0);
  for (let j = 0; j < nStrata; j++) {
    const n = stratumSizes[j] as number;
    for (let c = 0; c < m; c++) out[c] = (out[c] as number) + (sum[j * m + c] as number) / n;
  }
  for (let c = 0; c < m; c++) out[c] = (out[c] as number) / nStrata;
}

/**
 * Sign-flip counts `#{|T*| ≥ |T| − 1e-12}` of every column: each resample gives every cluster
 * one sign (the sign bit of one `xoroshiro128plus` output, clusters in order) that all its
 * values share. `T` is the unflipped statistic from the same sums.
 */
function clusterSignFlipColumns(t: ClusterTable, resamples: number, seed: number): Float64Array {
  const { nClusters, m } = t;
  const rng = xoroshiro128plus(seed);
  const scratch = new Float64Array(t.nStrata * m);
  const observed = new Float64Array(m);
  signedStatistic(t, undefined, scratch, observed);
  const threshold = observed.map((x) => Math.abs(x) - 1e-12);
  const signs = new Int8Array(nClusters);
  const flipped = new Float64Array(m);
  const extreme = new Float64Array(m);
  for (let r = 0; r < resamples; r++) {
    for (let k = 0; k < nClusters; k++) signs[k] = rng.next() < 0 ? -1 : 1;
    signedStatistic(t, signs, scratch, flipped);
    for (let c = 0; c < m; c++) {
      if (Math.abs(flipped[c] as number) >= (threshold[c] as number)) {
        extreme[c] = (extreme[c] as number) + 1;
      }
    }
  }
  return extreme;
}

/** The stratified mean of the values in value order (as the query-level tests sum them). */
function valueMean(strata: readonly ArrayLike<number>[]): number {
  let total = 0;
  let present = 0;
  for (const values of strata) {
    if (values.length === 0) continue;
    let sum = 0;
    for (let i = 0; i < values.length; i++) sum += values[i] as number;
    total += sum / values.length;
    present += 1;
  }
  return total / present;
}

/**
 * Cluster-level CI and p-value of each of `m` columns: `strata[s]` is a row-major
 * `[n_s × m]` matrix of paired differences and `clusters[s]` its rows' cluster ids. The
 * bootstrap and the flips use `xoroshiro128plus(seed)` each, as the query-level tests do.
 *
 * @throws Error when the shapes disagree or a value is not finite (programmer errors).
 * @example
 * clusterColumns([Float64Array.of(0.1, 0.2, 0.0, 0.1)], [['a', 'b']], 2, 10_000, 42);
 * // { nClusters: 2, differences: [{ ci95: […], pValue: … }, { ci95: […], pValue: … }] }
 */
export function clusterColumns(
  strata: readonly ArrayLike<number>[],
  clusters: StrataClusters,
  m: number,
  resamples: number,
  seed: number,
): { nClusters: number; differences: ClusterDifference[] } {
  const table = clusterTable(strata, clusters, m);
  const replicates = clusterBootstrapColumns(table, resamples, seed);
  const extreme = clusterSignFlipColumns(table, resamples, seed);
  const differences: ClusterDifference[] = [];
  for (let c = 0; c < m; c++) {
    differences.push({
      ci95: ci95Of(replicates, m, c),
      pValue: (1 + (extreme[c] as number)) / (1 + resamples),
    });
  }
  return { nClusters: table.nClusters, differences };
}

/**
 * Paired cluster bootstrap of the headline difference: each resample draws as many clusters as
 * there are, with replacement; each subtask's mean is the mean over every value of that subtask
 * in the drawn clusters (a cluster drawn twice counts twice), and the statistic is the
 * unweighted mean over the subtasks present. The CI is the 2.5% and 97.5% type-7 percentiles.
 * With one value per cluster and one stratum the replicates equal {@link pairedBootstrap}'s
 * bit for bit (same seed, same draws).
 *
 * @throws ConfigError when `resamples` or `seed` is malformed.
 * @example
 * pairedClusterBootstrap([Float64Array.of(0.1, 0.3, 0.0)], [['a', 'a', 'b']], { seed: 42 });
 * // { meanDiff: 0.1333, ci95: [0, 0.2], resamples: 10000, seed: 42, nClusters: 2 }
 */
export function pairedClusterBootstrap(
  strata: readonly ArrayLike<number>[],
  clusters: StrataClusters,
  options: PairedTestOptions = {},
): {
  meanDiff: number;
  ci95: [number, number];
  resamples: number;
  seed: number;
  nClusters: number;
} {
  const { resamples, seed } = checkOptions(options);
  const table = clusterTable(strata, clusters, 1);
  const replicates = clusterBootstrapColumns(table, resamples, seed);
  return {
    meanDiff: valueMean(strata),
    ci95: ci95Of(replicates, 1, 0),
    resamples,
    seed,
    nClusters: table.nClusters,
  };
}

/**
 * Paired cluster sign-flip test of "no difference": under the null hypothesis the two systems
 * are exchangeable on each cluster, so all of a cluster's differences keep or flip their sign
 * together with probability ½. p = `(1 + #{|T*| ≥ |T|}) / (1 + resamples)`, never 0; the
 * exact p-value is `#{sign patterns with |T*| ≥ |T|} / 2^nClusters`, which this estimates.
 *
 * @throws ConfigError when `resamples` or `seed` is malformed.
 * @example
 * pairedClusterRandomizationTest([Float64Array.of(0.3, 0.2, 0.4)], [['a', 'b', 'c']]);
 * // { meanDiff: 0.3, pValue: ≈ 0.25 (exact: 2/8), resamples: 10000, seed: 42, nClusters: 3 }
 */
export function pairedClusterRandomizationTest(
  strata: readonly ArrayLike<number>[],
  clusters: StrataClusters,
  options: PairedTestOptions = {},
): { meanDiff: number; pValue: number; resamples: number; seed: number; nClusters: number } {
  const { resamples, seed } = checkOptions(options);
  const table = clusterTable(strata, clusters, 1);
  const extreme = clusterSignFlipColumns(table, resamples, seed)[0] as number;
  return {
    meanDiff: valueMean(strata),
    pValue: (1 + extreme) / (1 + resamples),
    resamples,
    seed,
    nClusters: table.nClusters,
  };
}

/**
 * The cluster id of every evaluated query of `a`, grouped by subtask exactly as
 * `pairedDifferences(a, b, metric)` groups the differences (declared subtask order, query
 * order within a subtask), so the two line up row for row.
 *
 * @throws DataError when an evaluated query has no cluster id.
 * @example
 * pairedClusterIds(fusion, new Map([['q1', 'conv-26'], ['q2', 'conv-30']]));
 * // [['conv-26'], ['conv-30']]
 */
export function pairedClusterIds(a: Evaluation, clusters: ReadonlyMap<string, string>): string[][] {
  const stratum = new Map(a.subtasks.map((s, i) => [s.subtask, i]));
  const groups: string[][] = a.subtasks.map(() => []);
  for (const record of a.queries) {
    const id = clusters.get(record.queryId);
    if (id === undefined) {
      throw new DataError(`Query '${record.queryId}' has no cluster id.`, {
        suggestion: 'Pass the cluster of every evaluated query (queryClusters of @bfe/split).',
      });
    }
    const s = stratum.get(record.subtask);
    if (s === undefined) throw new Error(`pairedClusterIds: unknown subtask '${record.subtask}'`);
    (groups[s] as string[]).push(id);
  }
  return groups;
}

/**
 * The number of distinct clusters among `queryIds`; queries without a cluster id are not
 * counted.
 *
 * @example
 * countClusters(['q1', 'q2', 'q3'], new Map([['q1', 'a'], ['q2', 'a'], ['q3', 'b']])); // 2
 */
export function countClusters(
  queryIds: Iterable<string>,
  clusters: ReadonlyMap<string, string>,
): number {
  const seen = new Set<string>();
  for (const q of queryIds) {
    const id = clusters.get(q);
    if (id !== undefined) seen.add(id);
  }
  return seen.size;
}
