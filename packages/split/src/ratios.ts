import { ConfigError } from '@bfe/core';

/**
 * Requested sizes of train, validation and test, in that order.
 *
 * @example
 * const fractions: SplitRatios = [0.6, 0.2, 0.2];
 * const counts: SplitRatios = [6, 2, 2]; // with exactly 10 units
 */
export type SplitRatios = readonly [train: number, validation: number, test: number];

/**
 * How a {@link SplitRatios} triple was read; see {@link allocateUnits}.
 *
 * @example
 * allocateUnits([60, 20, 20], 7).reading; // 'percentages'
 */
export type RatioReading = 'counts' | 'fractions' | 'percentages';

/**
 * Units per split after rounding, and how the ratios were read.
 *
 * @example
 * const a: UnitAllocation = { reading: 'fractions', counts: [4, 2, 1] }; // 0.6/0.2/0.2 of 7
 */
export interface UnitAllocation {
  readonly reading: RatioReading;
  readonly counts: readonly [train: number, validation: number, test: number];
}

// Fractions may be written as decimals that do not sum to exactly 1 in binary (0.7+0.2+0.1).
const SUM_TOLERANCE = 1e-9;

/**
 * Turns requested ratios into whole unit counts. The triple is read by the first rule that
 * fits, so a triple never means two different things:
 *
 * 1. **counts** — three integers summing to exactly `units` (e.g. `[6, 2, 2]` with 10 units);
 * 2. **fractions** — summing to 1 within 1e-9 (e.g. `[0.6, 0.2, 0.2]`);
 * 3. **percentages** — summing to 100 within 1e-7 (e.g. `[60, 20, 20]` with any number of units).
 *
 * Anything else is rejected rather than normalised: `[6, 2, 2]` with 9 units most likely
 * means the caller expected a different number of units, and silently reading it as weights
 * would hide that. Negative, non-finite or all-zero entries are rejected too.
 *
 * Fractions and percentages are rounded with the largest-remainder method: each split gets
 * the floor of its quota `ratio / sum × units`, and the units left over go, one each, to the
 * largest fractional parts, ties broken in the order train, validation, test. The result
 * always sums to `units` and never depends on anything but the inputs.
 *
 * @throws ConfigError when the ratios are malformed or fit none of the three readings.
 * @example
 * allocateUnits([0.6, 0.2, 0.2], 7); // { reading: 'fractions', counts: [4, 2, 1] }
 * allocateUnits([6, 2, 2], 10);      // { reading: 'counts', counts: [6, 2, 2] }
 * allocateUnits([60, 20, 20], 500);  // { reading: 'percentages', counts: [300, 100, 100] }
 */
export function allocateUnits(ratios: SplitRatios, units: number): UnitAllocation {
  if (!Number.isInteger(units) || units < 0) {
    throw new Error(`allocateUnits: units must be a non-negative integer, got ${units}`);
  }
  if (ratios.length !== 3 || ratios.some((r) => !Number.isFinite(r) || r < 0)) {
    throw new ConfigError(
      `Split ratios must be three finite, non-negative numbers (train, validation, test); ` +
        `got [${ratios.join(', ')}].`,
    );
  }
  const [train, validation, test] = ratios;
  const sum = train + validation + test;
  if (sum <= 0) {
    throw new ConfigError(`Split ratios [${ratios.join(', ')}] sum to zero; nothing to allocate.`);
  }
  if (ratios.every((r) => Number.isInteger(r)) && sum === units) {
    return { reading: 'counts', counts: [train, validation, test] };
  }
  if (Math.abs(sum - 1) <= SUM_TOLERANCE) {
    return { reading: 'fractions', counts: largestRemainder(ratios, sum, units) };
  }
  if (Math.abs(sum - 100) <= 100 * SUM_TOLERANCE) {
    return { reading: 'percentages', counts: largestRemainder(ratios, sum, units) };
  }
  throw new ConfigError(
    `Split ratios [${ratios.join(', ')}] sum to ${sum}: not 1 (fractions), not 100 ` +
      `(percentages), and not ${units}, the number of units to split (integer counts).`,
    {
      suggestion:
        `Give fractions such as [0.6, 0.2, 0.2], percentages such as [60, 20, 20], or three ` +
        `integers that sum to ${units}.`,
    },
  );
}

function largestRemainder(
  ratios: SplitRatios,
  sum: number,
  units: number,
): [number, number, number] {
  const counts: [number, number, number] = [0, 0, 0];
  const remainders: [number, number, number] = [0, 0, 0];
  let assigned = 0;
  for (let k = 0; k < 3; k++) {
    let quota = ((ratios[k] as number) / sum) * units;
    // 0.3 × 10 is 3.0000000000000004 in binary; snap so that exact quotas stay exact and a
    // rounding artefact cannot win a leftover unit over a real remainder.
    const nearest = Math.round(quota);
    if (Math.abs(quota - nearest) <= SUM_TOLERANCE * Math.max(1, units)) quota = nearest;
    const whole = Math.floor(quota);
    counts[k] = whole;
    remainders[k] = quota - whole;
    assigned += whole;
  }
  // Stable sort keeps train < validation < test among equal remainders.
  const order = [0, 1, 2].sort((a, b) => (remainders[b] as number) - (remainders[a] as number));
  for (let i = 0; assigned < units; i++) {
    const k = order[i % 3] as number;
    counts[k] = (counts[k] as number) + 1;
    assigned += 1;
  }
  return counts;
}
