/** Flag values as numbers: every benchmark parses its integers here. */

export function positive(flag: string, v: string): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n <= 0)
    throw new Error(`${flag}: expected a positive integer, got '${v}'`);
  return n;
}

export function nonNegative(flag: string, v: string): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0)
    throw new Error(`${flag}: expected a non-negative integer, got '${v}'`);
  return n;
}

/** A comma-separated list of positive integers, e.g. `--sizes 10000,100000`. */
export function intList(flag: string, v: string): number[] {
  return v.split(',').map((s) => positive(flag, s.trim()));
}
