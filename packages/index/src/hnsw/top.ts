// The rescored proposals' ranking for HnswTokenIndex: plain loops over typed arrays.

/**
 * The best `kk` of `found` by `scores` (descending; equal scores by the memories' tie `rank`,
 * then token index) into `values` / `tokens` at `at`, best first: an insertion into the kept
 * list, plain loops (a comparator sort of every proposal cost more than the rescoring).
 */
export function topInto(
  values: Float64Array,
  tokens: Int32Array,
  at: number,
  kk: number,
  found: Int32Array,
  scores: Float64Array,
  tokenMemory: Int32Array,
  rank: Int32Array | undefined,
): void {
  // `a` (score sa, token ta) ranks before `b`.
  const before = (sa: number, ta: number, sb: number, tb: number): boolean => {
    if (sa !== sb) return sa > sb;
    if (rank !== undefined) {
      const ra = rank[tokenMemory[ta]!]!;
      const rb = rank[tokenMemory[tb]!]!;
      if (ra !== rb) return ra < rb;
    }
    return ta < tb;
  };
  let kept = 0;
  for (let i = 0; i < found.length; i++) {
    const s = scores[i]!;
    const t = found[i]!;
    if (kept === kk && !before(s, t, values[at + kk - 1]!, tokens[at + kk - 1]!)) continue;
    let p = kept === kk ? kk - 1 : kept++;
    while (p > 0 && before(s, t, values[at + p - 1]!, tokens[at + p - 1]!)) {
      values[at + p] = values[at + p - 1]!;
      tokens[at + p] = tokens[at + p - 1]!;
      p--;
    }
    values[at + p] = s;
    tokens[at + p] = t;
  }
}

/** The place of `m` in `sorted` (ascending, distinct; `m` is in it). */
export function positionOf(sorted: Int32Array, m: number): number {
  let lo = 0;
  let hi = sorted.length - 1;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (sorted[mid]! < m) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
