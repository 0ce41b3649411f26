/** Float64 inner products and the non-finite check shared by the top-k search and the scorer. */
import { wasmDots } from './dots-wasm.js';

/** Index of the first NaN/±Inf in `a[at..at+len)`, or -1. */
export function firstNonFinite(a: Float32Array, at: number, len: number): number {
  for (let i = 0; i < len; i++) {
    const v = a[at + i]!;
    if (v - v !== 0) return i;
  }
  return -1;
}

/**
 * `Σ a[aAt + j] · b[bAt + j]` for `j < dim`, accumulated in float64 (float32 × float32 products
 * are exact in float64; four partial sums, so the rounding is ~dim·2⁻⁵³, far below float32's).
 */
export function dot64(
  a: Float32Array,
  aAt: number,
  b: Float32Array,
  bAt: number,
  dim: number,
): number {
  let s0 = 0;
  let s1 = 0;
  let s2 = 0;
  let s3 = 0;
  let j = 0;
  for (; j + 3 < dim; j += 4) {
    s0 += a[aAt + j]! * b[bAt + j]!;
    s1 += a[aAt + j + 1]! * b[bAt + j + 1]!;
    s2 += a[aAt + j + 2]! * b[bAt + j + 2]!;
    s3 += a[aAt + j + 3]! * b[bAt + j + 3]!;
  }
  for (; j < dim; j++) s0 += a[aAt + j]! * b[bAt + j]!;
  return s0 + s1 + (s2 + s3);
}

let offsetScratch = new Int32Array(256);

/** A module-level scratch of at least `count` offsets (grown by doubling). */
export function scratchOffsets(count: number): Int32Array {
  if (offsetScratch.length < count) {
    let size = offsetScratch.length;
    while (size < count) size *= 2;
    offsetScratch = new Int32Array(size);
  }
  return offsetScratch;
}

let queryScratch = new Float64Array(384);

/**
 * `query[at .. at + dim)` widened to float64 into a module-level scratch read from index 0
 * (valid until the next call): the query row every float64 dot kernel reads.
 */
export function widenedQuery(query: Float32Array, at: number, dim: number): Float64Array {
  if (queryScratch.length < dim) queryScratch = new Float64Array(dim);
  for (let j = 0; j < dim; j++) queryScratch[j] = query[at + j]!;
  return queryScratch;
}

/**
 * `out[h] = Σ_j vectors[offsets[h] + j] · query[at + j]` for `h < count`, in float64, summed
 * in order of `j` for every row (so equal vectors score bit-identically): the WebAssembly SIMD
 * kernel (`dots-wasm.ts`, two rows to an instruction, eight at a time).
 */
export function dotsInto(
  vectors: Float32Array,
  offsets: Int32Array,
  count: number,
  query: Float32Array,
  at: number,
  out: Float64Array,
  dim: number,
): void {
  wasmDots().dotsInto(vectors, offsets, count, query, at, out, dim);
}

/**
 * For each quadruple `[slot, row, start, end)` of `quads`: the token of `start..end-1` (rows of
 * `vectors`) with the largest {@link dotsInto} similarity to row `row` of `queries`, the first
 * of equals, written as `token[q]` (relative to `start`; -1 for an empty range) and
 * `similarity[q]` for the `q`-th quadruple (`slot` is the caller's). The same float64 dots as a
 * token store's `dots`, so the same bests wherever they are computed (e.g. on the thread that
 * holds a resident bank).
 */
export function bestTokensInto(
  vectors: Float32Array,
  dim: number,
  queries: Float32Array,
  quads: Int32Array,
  token: Int32Array,
  similarity: Float64Array,
): void {
  let offsets = new Int32Array(64);
  let sims = new Float64Array(64);
  for (let q = 0; 4 * q + 3 < quads.length; q++) {
    const row = quads[4 * q + 1]!;
    const start = quads[4 * q + 2]!;
    const size = quads[4 * q + 3]! - start;
    if (size <= 0) {
      token[q] = -1;
      similarity[q] = Number.NaN;
      continue;
    }
    if (offsets.length < size) {
      offsets = new Int32Array(2 * size);
      sims = new Float64Array(2 * size);
    }
    for (let j = 0; j < size; j++) offsets[j] = (start + j) * dim;
    dotsInto(vectors, offsets, size, queries, row * dim, sims, dim);
    let best = 0;
    for (let j = 1; j < size; j++) if (sims[j]! > sims[best]!) best = j;
    token[q] = best;
    similarity[q] = sims[best]!;
  }
}
