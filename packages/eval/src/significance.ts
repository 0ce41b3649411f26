import { ConfigError, DataError } from '@bfe/core';
import { uniformInt } from 'pure-rand/distribution/uniformInt';
import { xoroshiro128plus } from 'pure-rand/generator/xoroshiro128plus';
import type { Evaluation, QueryRecord } from './evaluate.js';
import type { MetricName } from './metrics.js';
import { clusterColumns, pairedClusterIds } from './significance-cluster.js';
import type { ClusterDifference } from './significance-cluster.js';
import { checkOptions, ci95Of } from './significance-options.js';
import type { PairedTestOptions } from './significance-options.js';

export { DEFAULT_RESAMPLES, DEFAULT_SEED, MAX_SEED } from './significance-options.js';
export type { PairedTestOptions } from './significance-options.js';

/**
 * Paired significance for the difference between two systems on the same queries. The
 * statistic is the headline difference: the unweighted mean over subtasks (strata) of each
 * subtask's mean per-query difference, exactly how the headline metric is built, so the
 * resampling respects the equal weighting of subtasks.
 */

/**
 * The difference between two systems on one metric (first minus second).
 *
 * @example
 * // { meanDiff: 0.031, ci95: [0.012, 0.05], pValue: 0.0013 }
 */
export interface PairedDifference {
  readonly meanDiff: number;
  /** Percentile bootstrap 95% interval of the headline difference. */
  readonly ci95: readonly [number, number];
  /** Two-sided p-value of the paired sign-flip randomisation test. */
  readonly pValue: number;
  /** The same over clusters of queries (banks), when cluster ids were given. */
  readonly cluster?: ClusterDifference | undefined;
}

/**
 * Per-query differences grouped by subtask; empty strata are allowed and ignored.
 *
 * @example
 * const strata: Strata = [Float64Array.of(0.1, -0.2), Float64Array.of(0.5)];
 */
export type Strata = readonly ArrayLike<number>[];

/**
 * Per-query values of `m` metrics over the same queries, grouped by stratum: stratum s is a
 * row-major `[n_s × m]` Float64Array (query-major, so one draw reads one row). Empty strata
 * are removed; non-finite values are a bug upstream.
 */
function prepareColumns(strata: readonly ArrayLike<number>[], m: number): Float64Array[] {
  const out: Float64Array[] = [];
  for (let s = 0; s < strata.length; s++) {
    const values = Float64Array.from(strata[s] as ArrayLike<number>);
    for (let i = 0; i < values.length; i++) {
      if (!Number.isFinite(values[i])) {
        throw new Error(`paired test: difference ${i} of stratum ${s} is ${values[i]}`);
      }
    }
    if (values.length % m !== 0)
      throw new Error(`paired test: stratum ${s} is not a multiple of ${m}`);
    if (values.length > 0) out.push(values);
  }
  if (out.length === 0) throw new Error('paired test: there are no paired values');
  return out;
}

/** The stratified mean of every column. */
function meanOfMeansColumns(strata: readonly Float64Array[], m: number): Float64Array {
  const total = new Float64Array(m);
  const sum = new Float64Array(m);
  for (const values of strata) {
    const n = values.length / m;
    sum.fill(0);
    for (let i = 0; i < n; i++) {
      const row = i * m;
      for (let c = 0; c < m; c++) sum[c] = (sum[c] as number) + (values[row + c] as number);
    }
    for (let c = 0; c < m; c++) total[c] = (total[c] as number) + (sum[c] as number) / n;
  }
  for (let c = 0; c < m; c++) total[c] = (total[c] as number) / strata.length;
  return total;
}

/**
 * Bootstrap replicates of every column's stratified mean, `[resamples × m]` row-major. Draws
 * depend only on the seed and the stratum sizes, never on the values, so the columns share
 * resamples and each column's replicates equal a one-column run bit for bit.
 */
function bootstrapColumns(
  strata: readonly Float64Array[],
  m: number,
  resamples: number,
  seed: number,
): Float64Array {
  const nStrata = strata.length;
  const rng = xoroshiro128plus(seed);
  const replicates = new Float64Array(resamples * m);
  const total = new Float64Array(m);
  const sum = new Float64Array(m);
  for (let r = 0; r < resamples; r++) {
    total.fill(0);
    for (let s = 0; s < nStrata; s++) {
      const values = strata[s] as Float64Array;
      const n = values.length / m;
      sum.fill(0);
      for (let i = 0; i < n; i++) {
        const row = uniformInt(rng, 0, n - 1) * m;
        for (let c = 0; c < m; c++) sum[c] = (sum[c] as number) + (values[row + c] as number);
      }
      for (let c = 0; c < m; c++) total[c] = (total[c] as number) + (sum[c] as number) / n;
    }
    const out = r * m;
    for (let c = 0; c < m; c++) replicates[out + c] = (total[c] as number) / nStrata;
  }
  return replicates;
}

/** Sign-flip counts `#{|T*| ≥ |T| − 1e-12}` of every column; the flips are shared by columns. */
function signFlipColumns(
  strata: readonly Float64Array[],
  m: number,
  resamples: number,
  seed: number,
  observed: Float64Array,
): Float64Array {
  const nStrata = strata.length;
  const rng = xoroshiro128plus(seed);
  const threshold = observed.map((t) => Math.abs(t) - 1e-12);
  const extreme = new Float64Array(m);
  const total = new Float64Array(m);
  const sum = new Float64Array(m);
  for (let r = 0; r < resamples; r++) {
    total.fill(0);
    for (let s = 0; s < nStrata; s++) {
      const values = strata[s] as Float64Array;
      const n = values.length / m;
      sum.fill(0);
      for (let i = 0; i < n; i++) {
        const row = i * m;
        // The sign bit: the best bit of xoroshiro128+ output.
        if (rng.next() < 0) {
          for (let c = 0; c < m; c++) sum[c] = (sum[c] as number) - (values[row + c] as number);
        } else {
          for (let c = 0; c < m; c++) sum[c] = (sum[c] as number) + (values[row + c] as number);
        }
      }
      for (let c = 0; c < m; c++) total[c] = (total[c] as number) + (sum[c] as number) / n;
    }
    for (let c = 0; c < m; c++) {
      if (Math.abs((total[c] as number) / nStrata) >= (threshold[c] as number)) {
        extreme[c] = (extreme[c] as number) + 1;
      }
    }
  }
  return extreme;
}

/**
 * The stratified mean: the unweighted mean over non-empty strata of each stratum's mean.
 *
 * @example
 * stratifiedMean([[1, 0], [1]]); // (0.5 + 1) / 2 = 0.75
 */
export function stratifiedMean(strata: Strata): number {
  return meanOfMeansColumns(prepareColumns(strata, 1), 1)[0] as number;
}

/**
 * Stratified paired bootstrap: each resample draws, within every subtask, as many per-query
 * differences as it holds, with replacement, and recomputes the mean over subtasks of the
 * subtask means. The CI is the 2.5% and 97.5% type-7 percentiles of the resampled statistic.
 * Draws use pure-rand `xoroshiro128plus(seed)` and `uniformInt`, stratum by stratum, so the
 * same seed and the same stratum sizes give the same resamples (and thus the same indices
 * for every metric).
 *
 * @throws ConfigError when `resamples` or `seed` is malformed.
 * @example
 * pairedBootstrap([Float64Array.of(0.1, 0.2, 0.0)], { seed: 42 });
 * // { meanDiff: 0.1, ci95: [0, 0.2] (approximately), resamples: 10000, seed: 42 }
 */
export function pairedBootstrap(
  strata: Strata,
  options: PairedTestOptions = {},
): { meanDiff: number; ci95: [number, number]; resamples: number; seed: number } {
  const { resamples, seed } = checkOptions(options);
  const data = prepareColumns(strata, 1);
  const replicates = bootstrapColumns(data, 1, resamples, seed);
  return {
    meanDiff: meanOfMeansColumns(data, 1)[0] as number,
    ci95: ci95Of(replicates, 1, 0),
    resamples,
    seed,
  };
}

/**
 * Paired randomisation (sign-flip) test of "no difference": under the null hypothesis the two
 * systems are exchangeable on each query, so each per-query difference keeps or flips its sign
 * with probability ½. The two-sided p-value is `(1 + #{|T*| ≥ |T|}) / (1 + resamples)` for
 * the stratified mean T, never 0 (Phipson & Smyth 2010). `|T*| ≥ |T|` is tested with a 1e-12
 * tolerance so that summation-order noise does not decide exact ties (all-zero differences give
 * p = 1). Each flip is the sign bit of one `xoroshiro128plus(seed)` output.
 *
 * @throws ConfigError when `resamples` or `seed` is malformed.
 * @example
 * pairedRandomizationTest([Float64Array.of(0.3, 0.2, 0.4, 0.1)], { seed: 42 });
 * // { meanDiff: 0.25, pValue: ≈ 0.125 (exact: 2/16), resamples: 10000, seed: 42 }
 */
export function pairedRandomizationTest(
  strata: Strata,
  options: PairedTestOptions = {},
): { meanDiff: number; pValue: number; resamples: number; seed: number } {
  const { resamples, seed } = checkOptions(options);
  const data = prepareColumns(strata, 1);
  const observed = meanOfMeansColumns(data, 1);
  const extreme = signFlipColumns(data, 1, resamples, seed, observed)[0] as number;
  return {
    meanDiff: observed[0] as number,
    pValue: (1 + extreme) / (1 + resamples),
    resamples,
    seed,
  };
}

/**
 * Per-query differences `a − b` of one metric, grouped by `a`'s subtasks in declared order.
 *
 * @throws DataError when the two evaluations do not hold the same queries with the same
 *   subtasks (they must come from the same queries and labels).
 * @throws ConfigError when the metric was not computed.
 * @example
 * pairedDifferences(fusion, pooled, 'ndcg@10'); // [Float64Array [...], Float64Array [...], …]
 */
export function pairedDifferences(
  a: Evaluation,
  b: Evaluation,
  metric: MetricName,
): Float64Array[] {
  if (!a.metricNames.includes(metric) || !b.metricNames.includes(metric)) {
    throw new ConfigError(
      `Metric '${metric}' was not computed for both systems (computed: ${a.metricNames.join(', ')}).`,
    );
  }
  const byId = new Map<string, QueryRecord>();
  for (const record of b.queries) byId.set(record.queryId, record);
  if (a.queries.length !== b.queries.length) {
    throw new DataError(
      `The two systems were evaluated on different queries (${a.queries.length} vs ${b.queries.length}).`,
    );
  }
  const stratum = new Map(a.subtasks.map((s, i) => [s.subtask, i]));
  const groups: number[][] = a.subtasks.map(() => []);
  for (const record of a.queries) {
    const other = byId.get(record.queryId);
    if (other === undefined) {
      throw new DataError(
        `Query '${record.queryId}' was evaluated for the first system but not the second.`,
      );
    }
    if (other.subtask !== record.subtask) {
      throw new DataError(
        `Query '${record.queryId}' is in subtask '${record.subtask}' for one system and '${other.subtask}' for the other.`,
      );
    }
    const s = stratum.get(record.subtask);
    if (s === undefined) throw new Error(`pairedDifferences: unknown subtask '${record.subtask}'`);
    (groups[s] as number[]).push(
      (record.metrics[metric] as number) - (other.metrics[metric] as number),
    );
  }
  return groups.map((g) => Float64Array.from(g));
}

/**
 * Compares two evaluations of the same queries, metric by metric: the headline difference
 * `a − b`, its stratified bootstrap CI ({@link pairedBootstrap}) and the randomisation-test
 * p-value ({@link pairedRandomizationTest}), all with the same seed. With `clusters` (query id
 * → cluster id, e.g. `queryClusters(benchmark).of` of `@bfe/split`) each difference also gets
 * `cluster`: the paired cluster bootstrap CI and cluster sign-flip p-value
 * (`pairedClusterBootstrap`, `pairedClusterRandomizationTest`); the query-level figures are
 * the same with or without it.
 *
 * @throws DataError / ConfigError as {@link pairedDifferences} and the tests.
 * @example
 * comparePaired(fusion, pooled, { metrics: ['recall@10', 'ndcg@10'] });
 * // { 'recall@10': { meanDiff: 0.052, ci95: [0.031, 0.073], pValue: 0.0001 }, 'ndcg@10': {…} }
 */
export function comparePaired(
  a: Evaluation,
  b: Evaluation,
  options: PairedTestOptions & {
    readonly metrics?: readonly MetricName[];
    readonly clusters?: ReadonlyMap<string, string>;
  } = {},
): Partial<Record<MetricName, PairedDifference>> {
  const { resamples, seed } = checkOptions(options);
  const metrics = options.metrics ?? (['recall@10', 'ndcg@10'] as const);
  const m = metrics.length;
  const out: Partial<Record<MetricName, PairedDifference>> = {};
  if (m === 0) return out;
  // One [n_s × m] matrix per stratum, so all metrics share the resamples and the flips (each
  // metric's figures equal a one-metric run bit for bit, at a fraction of the cost).
  const perMetric = metrics.map((metric) => pairedDifferences(a, b, metric));
  const strata = (perMetric[0] as Float64Array[]).map((first, s) => {
    const matrix = new Float64Array(first.length * m);
    for (let c = 0; c < m; c++) {
      const column = (perMetric[c] as Float64Array[])[s] as Float64Array;
      for (let i = 0; i < column.length; i++) matrix[i * m + c] = column[i] as number;
    }
    return matrix;
  });
  const data = prepareColumns(strata, m);
  const observed = meanOfMeansColumns(data, m);
  const replicates = bootstrapColumns(data, m, resamples, seed);
  const extreme = signFlipColumns(data, m, resamples, seed, observed);
  const cluster =
    options.clusters === undefined
      ? undefined
      : clusterColumns(strata, pairedClusterIds(a, options.clusters), m, resamples, seed);
  metrics.forEach((metric, c) => {
    const byCluster = cluster?.differences[c];
    out[metric] = {
      meanDiff: observed[c] as number,
      ci95: ci95Of(replicates, m, c),
      pValue: (1 + (extreme[c] as number)) / (1 + resamples),
      ...(byCluster === undefined ? {} : { cluster: byCluster }),
    };
  });
  return out;
}
