/**
 * The largest `i` in `[0, hi]` with `sorted[i] <= value` (0 when none is), by binary search
 * over ascending `sorted`; among equal entries the last one. The segment or slot that owns a
 * row, given each one's first row.
 */
export function lastAtMost(sorted: ArrayLike<number>, value: number, hi: number): number {
  let lo = 0;
  while (lo < hi) {
    const mid = (lo + hi + 1) >>> 1;
    if (sorted[mid]! <= value) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}
