/**
 * The slow, obviously correct float64 reference of the exact token top-k (METHOD.md §2) that the
 * kernels are tested against: full sorts, no streaming. Test helpers only (`@bfe/index/testing`),
 * not part of the package API; the scorer's reference of §2–3 builds on it.
 */

export interface ReferenceBank {
  readonly dim: number;
  readonly tokenVectors: Float32Array;
  readonly tokenOffsets: ArrayLike<number>;
  readonly pooled: Float32Array;
}

/** `Σ_j a[ai·dim + j] · b[bi·dim + j]` in float64. */
export function referenceDot(
  a: Float32Array,
  ai: number,
  b: Float32Array,
  bi: number,
  dim: number,
): number {
  let s = 0;
  for (let j = 0; j < dim; j++) s += a[ai * dim + j]! * b[bi * dim + j]!;
  return s;
}

/**
 * Top-k of each query vector over `bank [n × dim]`: full sort by score descending, then index
 * ascending. Scores in float64.
 */
export function referenceTopK(
  queries: Float32Array,
  bank: Float32Array,
  dim: number,
  k: number,
): { indices: number[][]; values: number[][] } {
  const rows = queries.length / dim;
  const n = bank.length / dim;
  const indices: number[][] = [];
  const values: number[][] = [];
  for (let r = 0; r < rows; r++) {
    const all = Array.from({ length: n }, (_, j) => ({
      j,
      s: referenceDot(queries, r, bank, j, dim),
    }));
    all.sort((x, y) => (y.s !== x.s ? y.s - x.s : x.j - y.j));
    indices.push(all.slice(0, k).map((e) => e.j));
    values.push(all.slice(0, k).map((e) => e.s));
  }
  return { indices, values };
}
