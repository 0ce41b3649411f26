/**
 * MaxSim, bit for bit as {@link maxSimInto} computes it, from a float32 similarity matrix that
 * a fast kernel (onnxruntime's MatMul) produced: the float32 scores only choose, for each
 * query row and memory, the few tokens that can hold the maximum; the maximum itself is then
 * recomputed in float64 with the reference's own summation order. So `best`, `argmax` and
 * `scores` are identical to the JavaScript kernel's, and so is everything downstream.
 *
 * Why the candidates always contain the reference's argmax: the float32 score `s'` of a token
 * differs from the reference's float64 score `s` by at most
 * `δ = ((d + 2) u / (1 − (d + 2) u)) ‖q‖ ‖x‖` (`u = 2⁻²⁴`; the query rounded to float32 costs
 * `u Σ|q||x|`, any float32 summation order of `d` products at most `γ_d Σ|q||x|`, the float64
 * reference `γ_d` of float64 — all `≤ ‖q‖‖x‖` by Cauchy–Schwarz). With `j*` the reference's
 * argmax and `j'` the float32 one, `s'(j*) ≥ s(j*) − δ ≥ s(j') − δ ≥ s'(j') − 2δ`: every token
 * within `2δ` of the float32 maximum is a candidate, every token tied with `j*` included, and
 * the candidates are visited in ascending order with a strict `>` — the reference's tie rule.
 */
import { dot, type FloatArray } from './dot.js';
import {
  EMPTY_MEMORY_SIMILARITY,
  finishMaxSimScores,
  type MaxSimResult,
  type TokenSegments,
} from './loss.js';

const UNIT_ROUNDOFF = 2 ** -24;
/** Absolute slack for float32 products that underflow (flushed to zero at worst). */
const UNDERFLOW_SLACK = 1e-30;

/**
 * The factor `c` of the bound `|s' − s| ≤ c ‖q‖ ‖x‖` at dimension `dim`, rounded up (also
 * covering the float64 rounding of the norms and of the threshold itself).
 * @example similarityErrorFactor(384); // ≈ 2.3e-5
 */
export function similarityErrorFactor(dim: number): number {
  const n = (dim + 2) * UNIT_ROUNDOFF;
  return (n / (1 - n)) * (1 + 2 ** -20);
}

/**
 * The largest Euclidean norm of `tokens` rows `[0, count)` of `tokenVectors [· × dim]`
 * (computed in float64), the `‖x‖` of the bound.
 */
export function maxTokenNorm(tokenVectors: FloatArray, count: number, dim: number): number {
  let most = 0;
  for (let t = 0; t < count; t++) {
    let ss = 0;
    const o = t * dim;
    for (let k = 0; k < dim; k++) ss += tokenVectors[o + k]! * tokenVectors[o + k]!;
    if (ss > most) most = ss;
  }
  return Math.sqrt(most) * (1 + 2 ** -20);
}

/**
 * The candidate window `2δ` of each query row (plus underflow slack): a token whose float32
 * score is within it of the row's float32 maximum may hold the exact maximum.
 */
export function rowSlack(
  query: Float64Array,
  rows: number,
  dim: number,
  tokenNorm: number,
): Float64Array {
  const factor = similarityErrorFactor(dim);
  const slack = new Float64Array(rows);
  for (let i = 0; i < rows; i++) {
    let ss = 0;
    for (let k = 0; k < dim; k++) ss += query[i * dim + k]! * query[i * dim + k]!;
    slack[i] = 2 * factor * Math.sqrt(ss) * (1 + 2 ** -20) * tokenNorm + UNDERFLOW_SLACK;
  }
  return slack;
}

/**
 * Fills `out` (`rows`, `memories` give the shape) as `maxSimInto(out, query, dim, segments)`
 * would, given `sims` (token-major: `sims[t · stride + offset + i]` ≈ `query_i · x_t`, float32
 * or better; by default `stride = rows`, `offset = 0`: `[N × rows]`; a wider matrix holds the
 * columns of several queries against the same tokens) and `tokenNorm ≥` every candidate token's norm ({@link maxTokenNorm}).
 * @throws {Error} when a row of a non-empty memory has no candidate (NaN similarities).
 */
export function maxSimFromSimilarities(
  out: MaxSimResult,
  sims: Float32Array,
  query: Float64Array,
  dim: number,
  segments: TokenSegments,
  tokenNorm: number,
  columns: { readonly stride: number; readonly offset: number } = { stride: out.rows, offset: 0 },
): MaxSimResult {
  const { rows, memories, best, argmax } = out;
  const { stride, offset } = columns;
  const x = segments.tokenVectors;
  const offsets = segments.memoryOffsets;
  if (offsets.length !== memories + 1) {
    throw new Error(`maxSimFromSimilarities: ${offsets.length} offsets for ${memories} memories`);
  }
  if (offset + rows > stride || sims.length < offsets[memories]! * stride) {
    throw new Error('maxSimFromSimilarities: the similarity matrix is too small');
  }
  // The reference sums rows in blocks of four sequentially, the remaining rows with dot().
  const blocked = rows - (rows % 4);
  const slack = rowSlack(query, rows, dim, tokenNorm);
  const top = new Float64Array(rows);
  const second = new Float64Array(rows);
  const threshold = new Float64Array(rows);
  // 1: one candidate, `first`; 2: several, found again by exactRow; 0: none (NaN scores)
  const count = new Int32Array(rows);
  const first = new Int32Array(rows);
  for (let m = 0; m < memories; m++) {
    const start = offsets[m]!;
    const end = offsets[m + 1]!;
    if (end <= start) {
      for (let i = 0; i < rows; i++) {
        best[i * memories + m] = EMPTY_MEMORY_SIMILARITY;
        argmax[i * memories + m] = -1;
      }
      continue;
    }
    // Pass 1: the largest and second largest float32 score of each row, and where the
    // largest is. A row whose runner-up is below the threshold has one candidate: its argmax.
    top.fill(-Infinity);
    second.fill(-Infinity);
    for (let t = start; t < end; t++) {
      const o = t * stride + offset;
      for (let i = 0; i < rows; i++) {
        const v = sims[o + i]!;
        if (v > top[i]!) {
          second[i] = top[i]!;
          top[i] = v;
          first[i] = t;
        } else if (v > second[i]!) second[i] = v;
      }
    }
    let crowded = false;
    for (let i = 0; i < rows; i++) {
      threshold[i] = top[i]! - slack[i]!;
      count[i] = second[i]! < threshold[i]! ? 1 : 0;
      if (count[i] === 0) crowded = true;
    }
    // Pass 2, only where needed: count the candidates of the other rows.
    if (crowded) {
      for (let t = start; t < end; t++) {
        const o = t * stride + offset;
        for (let i = 0; i < rows; i++) {
          if (count[i] !== 1 && sims[o + i]! >= threshold[i]!) count[i] = 2;
        }
      }
    }
    let i = 0;
    for (; i < blocked; i += 4) {
      if (count[i] === 1 && count[i + 1] === 1 && count[i + 2] === 1 && count[i + 3] === 1) {
        sequentialDots4(out, m, i, query, x, dim, first);
        continue;
      }
      for (let r = i; r < i + 4; r++) {
        const one = count[r] === 1;
        const from = one ? first[r]! : start;
        exactRow(
          out,
          m,
          r,
          true,
          query,
          x,
          dim,
          sims,
          columns,
          threshold[r]!,
          from,
          one ? from + 1 : end,
        );
      }
    }
    for (; i < rows; i++) {
      const one = count[i] === 1;
      const from = one ? first[i]! : start;
      exactRow(
        out,
        m,
        i,
        false,
        query,
        x,
        dim,
        sims,
        columns,
        threshold[i]!,
        from,
        one ? from + 1 : end,
      );
    }
  }
  return finishMaxSimScores(out);
}

/** Rows `i .. i + 3` of memory `m`, one candidate each: four sequential float64 sums at once. */
function sequentialDots4(
  out: MaxSimResult,
  m: number,
  i: number,
  query: Float64Array,
  x: FloatArray,
  dim: number,
  first: Int32Array,
): void {
  const q0 = i * dim;
  const q1 = q0 + dim;
  const q2 = q1 + dim;
  const q3 = q2 + dim;
  const x0 = first[i]! * dim;
  const x1 = first[i + 1]! * dim;
  const x2 = first[i + 2]! * dim;
  const x3 = first[i + 3]! * dim;
  let s0 = 0;
  let s1 = 0;
  let s2 = 0;
  let s3 = 0;
  for (let k = 0; k < dim; k++) {
    s0 += query[q0 + k]! * x[x0 + k]!;
    s1 += query[q1 + k]! * x[x1 + k]!;
    s2 += query[q2 + k]! * x[x2 + k]!;
    s3 += query[q3 + k]! * x[x3 + k]!;
  }
  const { memories, best, argmax } = out;
  const o = i * memories + m;
  best[o] = s0;
  best[o + memories] = s1;
  best[o + 2 * memories] = s2;
  best[o + 3 * memories] = s3;
  argmax[o] = first[i]!;
  argmax[o + memories] = first[i + 1]!;
  argmax[o + 2 * memories] = first[i + 2]!;
  argmax[o + 3 * memories] = first[i + 3]!;
}

/**
 * Row `i` of memory `m`: the exact maximum over its candidates among tokens `start .. end`, in
 * ascending token order.
 */
function exactRow(
  out: MaxSimResult,
  m: number,
  i: number,
  sequential: boolean,
  query: Float64Array,
  x: FloatArray,
  dim: number,
  sims: Float32Array,
  columns: { readonly stride: number; readonly offset: number },
  threshold: number,
  start: number,
  end: number,
): void {
  const { memories } = out;
  const { stride, offset } = columns;
  let b = -Infinity;
  let arg = -1;
  const q0 = i * dim;
  for (let t = start; t < end; t++) {
    if (!(sims[t * stride + offset + i]! >= threshold)) continue;
    let s: number;
    if (sequential) {
      s = 0;
      const xo = t * dim;
      for (let k = 0; k < dim; k++) s += query[q0 + k]! * x[xo + k]!;
    } else s = dot(query, q0, x, t * dim, dim);
    if (s > b) {
      b = s;
      arg = t;
    }
  }
  if (arg < 0) throw new Error(`maxSimFromSimilarities: no candidate for row ${i}, memory ${m}`);
  out.best[i * memories + m] = b;
  out.argmax[i * memories + m] = arg;
}

/**
 * {@link maxSimBackward} with the same result bit for bit, faster: each query row's gradient is
 * summed eight entries at a time in registers over the memories in ascending order (the
 * reference's order for every entry), instead of read-modify-writing the gradient row once per
 * memory. Adds into `gradQuery` (bit for bit the reference's sums when it starts at zero, as in
 * `lossFromMaxSim`).
 */
export function maxSimBackwardBlocked(
  result: MaxSimResult,
  gradScores: ArrayLike<number>,
  dim: number,
  segments: TokenSegments,
  gradQuery: Float64Array,
): Float64Array {
  const { rows, memories, argmax } = result;
  const x = segments.tokenVectors;
  if (gradQuery.length < rows * dim) throw new Error(`maxSimBackward: gradQuery < ${rows * dim}`);
  if (rows === 0) return gradQuery;
  const inv = 1 / rows;
  const weight = new Float64Array(memories);
  const offset = new Int32Array(memories);
  const d8 = dim - (dim % 8);
  for (let i = 0; i < rows; i++) {
    let n = 0;
    for (let m = 0; m < memories; m++) {
      const g = gradScores[m]! * inv;
      const t = argmax[i * memories + m]!;
      if (g === 0 || t < 0) continue; // as the reference: no term at all
      weight[n] = g;
      offset[n] = t * dim;
      n += 1;
    }
    const q0 = i * dim;
    let k = 0;
    for (; k < d8; k += 8) {
      let a0 = 0;
      let a1 = 0;
      let a2 = 0;
      let a3 = 0;
      let a4 = 0;
      let a5 = 0;
      let a6 = 0;
      let a7 = 0;
      for (let j = 0; j < n; j++) {
        const g = weight[j]!;
        const o = offset[j]! + k;
        a0 += g * x[o]!;
        a1 += g * x[o + 1]!;
        a2 += g * x[o + 2]!;
        a3 += g * x[o + 3]!;
        a4 += g * x[o + 4]!;
        a5 += g * x[o + 5]!;
        a6 += g * x[o + 6]!;
        a7 += g * x[o + 7]!;
      }
      gradQuery[q0 + k]! += a0;
      gradQuery[q0 + k + 1]! += a1;
      gradQuery[q0 + k + 2]! += a2;
      gradQuery[q0 + k + 3]! += a3;
      gradQuery[q0 + k + 4]! += a4;
      gradQuery[q0 + k + 5]! += a5;
      gradQuery[q0 + k + 6]! += a6;
      gradQuery[q0 + k + 7]! += a7;
    }
    for (; k < dim; k++) {
      let a = 0;
      for (let j = 0; j < n; j++) a += weight[j]! * x[offset[j]! + k]!;
      gradQuery[q0 + k]! += a;
    }
  }
  return gradQuery;
}
