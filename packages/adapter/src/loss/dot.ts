/** The float arrays the adapter computes on: float32 at rest, float64 for reference checks. */
export type FloatArray = Float32Array | Float64Array;

/**
 * `Σ_k a[ai + k] · b[bi + k]` for `k < dim`, accumulated in float64 in four interleaved sums
 * (`(s0 + s1) + (s2 + s3)`, the tail into `s0`): the one summation order of the adapter's dot
 * products, so every path that uses it rounds the same way.
 */
export function dot(a: FloatArray, ai: number, b: FloatArray, bi: number, dim: number): number {
  const d4 = dim - (dim % 4);
  let s0 = 0;
  let s1 = 0;
  let s2 = 0;
  let s3 = 0;
  let k = 0;
  for (; k < d4; k += 4) {
    s0 += a[ai + k]! * b[bi + k]!;
    s1 += a[ai + k + 1]! * b[bi + k + 1]!;
    s2 += a[ai + k + 2]! * b[bi + k + 2]!;
    s3 += a[ai + k + 3]! * b[bi + k + 3]!;
  }
  for (; k < dim; k++) s0 += a[ai + k]! * b[bi + k]!;
  return s0 + s1 + (s2 + s3);
}
