import { ConfigError } from '@bfe/core';
import { uniformInt } from 'pure-rand/distribution/uniformInt';
import { xoroshiro128plus } from 'pure-rand/generator/xoroshiro128plus';

/**
 * Largest accepted seed: xoroshiro128plus is seeded from 32 bits.
 *
 * @example
 * fc.integer({ min: 0, max: MAX_SEED }); // every seed makeSplit accepts
 */
export const MAX_SEED = 0xffff_ffff;

/**
 * Checks that a seed is an integer in `[0, 2^32 − 1]`. pure-rand seeds from `seed | 0`, so two
 * seeds further apart than 32 bits (or −1 and 2^32 − 1) would give the same split; rejecting
 * them keeps "different seed, different split" honest.
 */
export function checkSeed(seed: number): void {
  if (!Number.isInteger(seed) || seed < 0 || seed > MAX_SEED) {
    throw new ConfigError(`Split seed must be an integer in [0, ${MAX_SEED}], got ${seed}.`);
  }
}

/**
 * A seeded Fisher–Yates shuffle (pure-rand xoroshiro128plus, unbiased `uniformInt`) of a copy
 * of `items`. The same seed and the same input order always give the same output order, on
 * every platform: no `Math.random`, no floating point.
 *
 * @example
 * seededShuffle(['a', 'b', 'c', 'd'], 42); // a fixed permutation of the four, e.g. ['c', 'a', 'd', 'b']
 */
export function seededShuffle<T>(items: readonly T[], seed: number): T[] {
  checkSeed(seed);
  const out = [...items];
  const rng = xoroshiro128plus(seed);
  for (let i = out.length - 1; i > 0; i--) {
    const j = uniformInt(rng, 0, i);
    const swap = out[i] as T;
    out[i] = out[j] as T;
    out[j] = swap;
  }
  return out;
}
