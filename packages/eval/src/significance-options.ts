import { ConfigError } from '@bfe/core';

/**
 * What every paired test shares: the defaults, the option check and the percentile interval,
 * so the query-level tests (`significance.ts`) and the cluster-level ones
 * (`significance-cluster.ts`) read their options and cut their intervals the same way.
 */

/** Resamples by default (METHOD.md asks for a CI; 10,000 keeps the MC error of p near 0.002). */
export const DEFAULT_RESAMPLES = 10_000;
/** Seed by default (METHOD.md §6: 42/43/44 for anything stochastic). */
export const DEFAULT_SEED = 42;
/** Largest accepted seed: xoroshiro128plus is seeded from 32 bits. */
export const MAX_SEED = 0xffff_ffff;

/**
 * Options of the paired tests.
 *
 * @example
 * const options: PairedTestOptions = { resamples: 10_000, seed: 42 };
 */
export interface PairedTestOptions {
  /** Number of bootstrap resamples or random sign flips; default 10,000. */
  readonly resamples?: number;
  /** Integer in `[0, 2^32 − 1]`; default 42. */
  readonly seed?: number;
}

/**
 * The resolved resamples and seed of {@link PairedTestOptions}.
 *
 * @throws ConfigError when `resamples` is not a positive integer or `seed` is out of range.
 * @example
 * checkOptions({}); // { resamples: 10000, seed: 42 }
 */
export function checkOptions(options: PairedTestOptions): { resamples: number; seed: number } {
  const resamples = options.resamples ?? DEFAULT_RESAMPLES;
  const seed = options.seed ?? DEFAULT_SEED;
  if (!Number.isSafeInteger(resamples) || resamples < 1) {
    throw new ConfigError(`The number of resamples must be a positive integer, got ${resamples}.`);
  }
  if (!Number.isInteger(seed) || seed < 0 || seed > MAX_SEED) {
    throw new ConfigError(`The seed must be an integer in [0, ${MAX_SEED}], got ${seed}.`);
  }
  return { resamples, seed };
}

/** Type-7 (linear interpolation) quantile of sorted values, as R's and numpy's default. */
function quantileSorted(sorted: Float64Array, p: number): number {
  const h = (sorted.length - 1) * p;
  const lo = Math.floor(h);
  const a = sorted[lo] as number;
  const b = sorted[Math.min(lo + 1, sorted.length - 1)] as number;
  return a + (h - lo) * (b - a);
}

/**
 * The 95% percentile interval (type-7 2.5% and 97.5% quantiles) of column `c` of
 * `[resamples × m]` row-major replicates.
 *
 * @example
 * ci95Of(Float64Array.of(3, 1, 2), 1, 0); // [1.05, 2.95]
 */
export function ci95Of(replicates: Float64Array, m: number, c: number): [number, number] {
  const column = new Float64Array(replicates.length / m);
  for (let r = 0; r < column.length; r++) column[r] = replicates[r * m + c] as number;
  column.sort();
  return [quantileSorted(column, 0.025), quantileSorted(column, 0.975)];
}
