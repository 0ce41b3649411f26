import { uniformFloat64 } from 'pure-rand/distribution/uniformFloat64';
import { uniformInt } from 'pure-rand/distribution/uniformInt';
import { xoroshiro128plus } from 'pure-rand/generator/xoroshiro128plus';
import { ConfigError } from './errors.js';

/**
 * The workspace's one seeded shuffle: Fisher–Yates driven by pure-rand's xoroshiro128plus,
 * seeded from 32 bits. The same seed and input always give the same order on every platform
 * (no `Math.random`). Two draws of the swap index exist because their outputs are recorded:
 * {@link seededShuffle} (pure-rand's unbiased `uniformInt`) orders the splits' units, and
 * {@link seededPermutation} (`⌊uniformFloat64 · (i + 1)⌋`) is the HNSW build's insert order,
 * which fixes the index files' bytes. Changing either draw would change those outputs.
 */

/**
 * Largest accepted seed: xoroshiro128plus is seeded from 32 bits.
 * @example
 * fc.integer({ min: 0, max: MAX_SEED }); // every seed seededShuffle accepts
 */
export const MAX_SEED = 0xffff_ffff;

/**
 * Checks that a seed is an integer in `[0, 2^32 − 1]`. pure-rand seeds from `seed | 0`, so two
 * seeds further apart than 32 bits (or −1 and 2^32 − 1) would give the same order; rejecting
 * them keeps "different seed, different order" honest.
 * @throws {ConfigError} for any other seed.
 */
export function checkSeed(seed: number): void {
  if (!Number.isInteger(seed) || seed < 0 || seed > MAX_SEED) {
    throw new ConfigError(`Split seed must be an integer in [0, ${MAX_SEED}], got ${seed}.`);
  }
}

/**
 * A seeded Fisher–Yates shuffle of a copy of `items` (unbiased `uniformInt` draws).
 * @example
 * seededShuffle(['a', 'b', 'c', 'd'], 42); // a fixed permutation of the four
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

/**
 * `0..n-1` in a seeded Fisher–Yates order, the swap index drawn as `⌊uniformFloat64 · (i + 1)⌋`
 * (the HNSW build's insert order).
 * @example
 * seededPermutation(5, 42); // Int32Array of 0..4 in a fixed order
 */
export function seededPermutation(n: number, seed: number): Int32Array {
  const order = Int32Array.from({ length: n }, (_, i) => i);
  const rng = xoroshiro128plus(seed);
  for (let i = n - 1; i > 0; i--) {
    const j = Math.floor(uniformFloat64(rng) * (i + 1));
    const t = order[i]!;
    order[i] = order[j]!;
    order[j] = t;
  }
  return order;
}
