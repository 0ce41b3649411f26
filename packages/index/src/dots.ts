/** Float64 inner products and the non-finite check shared by the top-k search and the scorer. */
import { ROWS_PER_CALL, wasmDots, type RowDots } from './dots-wasm.js';

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
 * in order of `j` for every row (so equal vectors score bit-identically, whichever path). Rows
 * that come in runs (a memory's tokens, a chunk) go to the WebAssembly SIMD kernel
 * (`dots-wasm.ts`: copied in a run at a time, two rows to an instruction; ×2 on runs of 128
 * rows); rows at random stay in JavaScript, whose eight interleaved rows hide the memory
 * latency that copying them one by one does not (`pnpm bench:dots`).
 */
export const dotsInto: RowDots = (vectors, offsets, count, query, at, out, dim) => {
  if (runsOf(offsets, count, dim)) {
    wasmDots().dotsInto(vectors, offsets, count, query, at, out, dim);
  } else {
    dotsIntoJs(vectors, offsets, count, query, at, out, dim);
  }
};

/** {@link dotsInto} on the WebAssembly kernel whatever the rows (tests and `pnpm bench:dots`). */
export const dotsIntoWasm: RowDots = (...args) => wasmDots().dotsInto(...args);

/** Rows a call needs for the WebAssembly kernel, and rows its runs hold on average at least. */
const MIN_WASM_ROWS = 8;
const MIN_RUN = 8;

/**
 * Whether {@link dotsInto} takes the WebAssembly kernel for these rows: at least
 * {@link MIN_WASM_ROWS}, in runs of consecutive rows {@link MIN_RUN} long on average.
 */
export function runsOf(offsets: Int32Array, count: number, dim: number): boolean {
  if (count < MIN_WASM_ROWS) return false;
  let breaks = 0;
  for (let h = 1; h < count; h++) if (offsets[h] !== offsets[h - 1]! + dim) breaks++;
  return breaks * MIN_RUN <= count;
}

/**
 * {@link dotsInto} in JavaScript, for rows at random: eight rows at a time
 * share each query load, about twice as fast in V8 as one {@link dot64} per row. The query row
 * is first widened into a float64 scratch read from index 0 (the same values, so the same
 * products and sums; measured ≈ 20 % faster in V8 than reading `query[at + j]` in the loop).
 */
export const dotsIntoJs: RowDots = (vectors, offsets, count, query, at, out, dim) => {
  const q = widenedQuery(query, at, dim);
  let h = 0;
  for (; h + 7 < count; h += 8) {
    const a0 = offsets[h]!;
    const a1 = offsets[h + 1]!;
    const a2 = offsets[h + 2]!;
    const a3 = offsets[h + 3]!;
    const a4 = offsets[h + 4]!;
    const a5 = offsets[h + 5]!;
    const a6 = offsets[h + 6]!;
    const a7 = offsets[h + 7]!;
    let s0 = 0;
    let s1 = 0;
    let s2 = 0;
    let s3 = 0;
    let s4 = 0;
    let s5 = 0;
    let s6 = 0;
    let s7 = 0;
    for (let j = 0; j < dim; j++) {
      const v = q[j]!;
      s0 += v * vectors[a0 + j]!;
      s1 += v * vectors[a1 + j]!;
      s2 += v * vectors[a2 + j]!;
      s3 += v * vectors[a3 + j]!;
      s4 += v * vectors[a4 + j]!;
      s5 += v * vectors[a5 + j]!;
      s6 += v * vectors[a6 + j]!;
      s7 += v * vectors[a7 + j]!;
    }
    out[h] = s0;
    out[h + 1] = s1;
    out[h + 2] = s2;
    out[h + 3] = s3;
    out[h + 4] = s4;
    out[h + 5] = s5;
    out[h + 6] = s6;
    out[h + 7] = s7;
  }
  // The same summation order as above, so duplicate vectors get bit-identical scores
  // wherever they fall.
  for (; h < count; h++) {
    const a = offsets[h]!;
    let s = 0;
    for (let j = 0; j < dim; j++) s += q[j]! * vectors[a + j]!;
    out[h] = s;
  }
};

/** Unit roundoffs of float32 and float64. */
const U32 = 2 ** -24;
const U64 = 2 ** -53;
/** γ(m) = m·u / (1 − m·u): the relative bound of a sum of m rounded operations. */
const gamma = (m: number, u: number): number => (m * u) / (1 - m * u);

/**
 * For each quadruple `[slot, row, start, end)` of `quads`: the token of `start..end-1` (rows of
 * `vectors`) with the largest {@link dotsInto} similarity to row `row` of `queries`, the first
 * of equals, written as `token[q]` (relative to `start`; -1 for an empty range) and
 * `similarity[q]` for the `q`-th quadruple (`slot` is the caller's). The same float64 dots as a
 * token store's `dots`, so the same bests wherever they are computed (e.g. on the thread that
 * holds a resident bank).
 *
 * With `maxAbs`, a bound on every component of the rows the quadruples name (a resident bank's
 * largest |component|), a range of at least {@link MIN_WASM_ROWS} rows is first scored in
 * float32 (`estimatesInto`; ×2.16 in all, `pnpm bench:dots`), and only the rows whose
 * estimate lies within 2ε of the largest are scored in float64, where ε = 2(γ₃₂(d + 2) +
 * γ₆₄(d))·‖q‖₁·maxAbs bounds both sums' distance to the exact one. The best row and every row
 * equal to it are among them, so the token and similarity are the ones without `maxAbs`.
 */
export function bestTokensInto(
  vectors: Float32Array,
  dim: number,
  queries: Float32Array,
  quads: Int32Array,
  token: Int32Array,
  similarity: Float64Array,
  maxAbs?: number,
): void {
  let offsets = new Int32Array(64);
  let sims = new Float64Array(64);
  let estimates = new Float32Array(64);
  const count4 = quads.length >> 2;
  // With maxAbs, the quadruples of one range in a row, so that its rows are copied in once.
  const order = Array.from({ length: count4 }, (_, q) => q);
  if (maxAbs !== undefined) {
    wasmDots().forgetRun();
    order.sort(
      (a, b) =>
        quads[4 * a + 2]! - quads[4 * b + 2]! || quads[4 * a + 3]! - quads[4 * b + 3]! || a - b,
    );
  }
  // ‖row‖₁ of each query row asked, computed once.
  const l1: number[] = [];
  for (const q of order) {
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
      estimates = new Float32Array(2 * size);
    }
    let count = 0;
    if (maxAbs !== undefined && size >= MIN_WASM_ROWS && size <= ROWS_PER_CALL) {
      wasmDots().estimatesInto(vectors, start * dim, size, queries, row * dim, estimates, dim);
      l1[row] ??= l1Norm(queries, row * dim, dim);
      count = candidates(estimates, size, l1[row], dim, maxAbs, start, offsets);
    }
    if (count > 0) {
      // The few rows left, each the float64 sum in order of j (as dotsInto's, bit for bit).
      const at = row * dim;
      for (let h = 0; h < count; h++) {
        const v = offsets[h]!;
        let sum = 0;
        for (let j = 0; j < dim; j++) sum += queries[at + j]! * vectors[v + j]!;
        sims[h] = sum;
      }
    } else {
      // Every row, in float64.
      for (let j = 0; j < size; j++) offsets[j] = (start + j) * dim;
      count = size;
      dotsInto(vectors, offsets, count, queries, row * dim, sims, dim);
    }
    let best = 0;
    for (let j = 1; j < count; j++) if (sims[j]! > sims[best]!) best = j;
    token[q] = offsets[best]! / dim - start;
    similarity[q] = sims[best]!;
  }
}

/**
 * The rows (offsets into `vectors`, in row order, into `offsets`) whose float32 estimate lies
 * within 2ε of the largest (`bestTokensInto`); 0 when the bound cannot be used (a non-finite
 * estimate or bound), so that the caller scores every row.
 */
function candidates(
  estimates: Float32Array,
  size: number,
  l1: number,
  dim: number,
  maxAbs: number,
  start: number,
  offsets: Int32Array,
): number {
  let top = -Infinity;
  for (let j = 0; j < size; j++) {
    const e = estimates[j]!;
    if (e - e !== 0) return 0;
    if (e > top) top = e;
  }
  const epsilon = 2 * (gamma(dim + 2, U32) + gamma(dim, U64)) * l1 * maxAbs;
  if (!Number.isFinite(epsilon) || l1 * maxAbs > 1e30) return 0;
  const cut = top - 2 * epsilon;
  let count = 0;
  for (let j = 0; j < size; j++) if (estimates[j]! >= cut) offsets[count++] = (start + j) * dim;
  return count;
}

/** `Σ_j |a[at + j]|` for `j < dim`. */
function l1Norm(a: Float32Array, at: number, dim: number): number {
  let sum = 0;
  for (let j = 0; j < dim; j++) sum += Math.abs(a[at + j]!);
  return sum;
}
