/**
 * The adapter's training objective (METHOD.md §4): all-memory MaxSim multi-positive
 * cross-entropy,
 *
 *   `MaxSim(q,m) = (1/n_q) Σ_i max_j T(h_{q,i})·h_{m,j}`,
 *   `loss(q) = −log( Σ_{m∈P} exp(MaxSim(q,m)/τ) / Σ_{m∈C} exp(MaxSim(q,m)/τ) )`,
 *
 * forward and backward. The max is differentiated through its argmax (the subgradient that
 * picks the chosen token; on exact ties the smallest token index). MaxSim is the training
 * surrogate only: inference still uses the sparse top-k search of METHOD.md §2.
 */
import { multiPositiveCrossEntropy } from './cross-entropy.js';
import { dot } from './dot.js';
import {
  adapterBackward,
  applyAdapterInto,
  createForwardCache,
  type AdapterForwardCache,
  type AdapterParams,
  type FloatArray,
} from '../model.js';

export { logSumExps, multiPositiveCrossEntropy } from './cross-entropy.js';

/** METHOD.md §4's temperature. */
export const DEFAULT_TEMPERATURE = 0.07;
/**
 * Per-query-token similarity of a memory without content tokens (max over an empty set): −1,
 * the lowest a unit-vector cosine can be, as the scorer's MaxSim baseline does. It carries no
 * gradient.
 */
export const EMPTY_MEMORY_SIMILARITY = -1;

/** A query's candidate memories as one concatenated token matrix with segment offsets. */
export interface TokenSegments {
  /** Unit-norm token states of all candidate memories, concatenated: `[N × dim]`. */
  readonly tokenVectors: FloatArray;
  /** Memory `m` owns token rows `memoryOffsets[m] .. memoryOffsets[m+1]`; length `M + 1`. */
  readonly memoryOffsets: ArrayLike<number>;
}

/** MaxSim of one query against its candidates, with what the backward pass needs. */
export interface MaxSimResult {
  readonly rows: number;
  readonly memories: number;
  /** `MaxSim(q, m)` per memory, `[M]`. */
  readonly scores: Float64Array;
  /** `max_j T(h_i)·h_{m,j}` per query row and memory, `[rows × M]`. */
  readonly best: Float64Array;
  /** The token row (in `tokenVectors`) of each max, `[rows × M]`; −1 for an empty memory. */
  readonly argmax: Int32Array;
}

/**
 * MaxSim of `query [rows × dim]` (already adapted) against every candidate memory, in one pass
 * over the concatenated candidate tokens: for each memory segment, blocks of four query rows
 * are dotted with two memory tokens at a time (eight float64 accumulators; measured 1.7× the
 * speed of one token at a time), leftover rows one by one with a 4-way unrolled dot product,
 * and the running max per row and memory is kept — no per-memory copies, no `[rows × N]`
 * product matrix. Ties keep the smaller token index (strict `>`, ascending tokens).
 * @example
 * const r = maxSim(adaptedQuery, 12, 384, { tokenVectors, memoryOffsets }); // Float32Array [N * 384]
 * r.scores; // Float64Array [M]
 */
export function maxSim(
  query: FloatArray,
  rows: number,
  dim: number,
  segments: TokenSegments,
): MaxSimResult {
  const memories = segments.memoryOffsets.length - 1;
  if (memories < 0) throw new Error('maxSim: memoryOffsets is empty');
  return maxSimInto(emptyMaxSim(rows, memories), query, dim, segments);
}

/** Zeroed buffers of a {@link MaxSimResult} of `rows` query tokens against `memories` memories. */
export function emptyMaxSim(rows: number, memories: number): MaxSimResult {
  return {
    rows,
    memories,
    scores: new Float64Array(memories),
    best: new Float64Array(rows * memories),
    argmax: new Int32Array(rows * memories),
  };
}

/** {@link maxSim} into preallocated buffers (`out.rows`, `out.memories` give the shape). */
export function maxSimInto(
  out: MaxSimResult,
  query: FloatArray,
  dim: number,
  segments: TokenSegments,
): MaxSimResult {
  const { rows, memories, best, argmax } = out;
  const x = segments.tokenVectors;
  const offsets = segments.memoryOffsets;
  if (query.length < rows * dim) throw new Error(`maxSim: query holds < ${rows} × ${dim}`);
  if (offsets.length !== memories + 1) {
    throw new Error(`maxSim: ${offsets.length} offsets for ${memories} memories`);
  }
  if (offsets[memories]! * dim > x.length) {
    throw new Error(`maxSim: offsets reach token ${offsets[memories]}, beyond the token matrix`);
  }
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
    let i = 0;
    for (; i + 4 <= rows; i += 4) {
      const q0 = i * dim;
      const q1 = q0 + dim;
      const q2 = q1 + dim;
      const q3 = q2 + dim;
      let b0 = -Infinity;
      let b1 = -Infinity;
      let b2 = -Infinity;
      let b3 = -Infinity;
      let a0 = start;
      let a1 = start;
      let a2 = start;
      let a3 = start;
      let t = start;
      // two memory tokens at a time: 8 accumulators, 4 query and 2 token values in registers
      for (; t + 2 <= end; t += 2) {
        const xo = t * dim;
        const xp = xo + dim;
        let s0 = 0;
        let s1 = 0;
        let s2 = 0;
        let s3 = 0;
        let r0 = 0;
        let r1 = 0;
        let r2 = 0;
        let r3 = 0;
        for (let k = 0; k < dim; k++) {
          const xv = x[xo + k]!;
          const xw = x[xp + k]!;
          const u0 = query[q0 + k]!;
          const u1 = query[q1 + k]!;
          const u2 = query[q2 + k]!;
          const u3 = query[q3 + k]!;
          s0 += u0 * xv;
          s1 += u1 * xv;
          s2 += u2 * xv;
          s3 += u3 * xv;
          r0 += u0 * xw;
          r1 += u1 * xw;
          r2 += u2 * xw;
          r3 += u3 * xw;
        }
        // token t before t + 1 with a strict `>`: ties keep the smaller index
        if (s0 > b0) {
          b0 = s0;
          a0 = t;
        }
        if (r0 > b0) {
          b0 = r0;
          a0 = t + 1;
        }
        if (s1 > b1) {
          b1 = s1;
          a1 = t;
        }
        if (r1 > b1) {
          b1 = r1;
          a1 = t + 1;
        }
        if (s2 > b2) {
          b2 = s2;
          a2 = t;
        }
        if (r2 > b2) {
          b2 = r2;
          a2 = t + 1;
        }
        if (s3 > b3) {
          b3 = s3;
          a3 = t;
        }
        if (r3 > b3) {
          b3 = r3;
          a3 = t + 1;
        }
      }
      if (t < end) {
        const xo = t * dim;
        let s0 = 0;
        let s1 = 0;
        let s2 = 0;
        let s3 = 0;
        for (let k = 0; k < dim; k++) {
          const xv = x[xo + k]!;
          s0 += query[q0 + k]! * xv;
          s1 += query[q1 + k]! * xv;
          s2 += query[q2 + k]! * xv;
          s3 += query[q3 + k]! * xv;
        }
        if (s0 > b0) {
          b0 = s0;
          a0 = t;
        }
        if (s1 > b1) {
          b1 = s1;
          a1 = t;
        }
        if (s2 > b2) {
          b2 = s2;
          a2 = t;
        }
        if (s3 > b3) {
          b3 = s3;
          a3 = t;
        }
      }
      const o = i * memories + m;
      best[o] = b0;
      best[o + memories] = b1;
      best[o + 2 * memories] = b2;
      best[o + 3 * memories] = b3;
      argmax[o] = a0;
      argmax[o + memories] = a1;
      argmax[o + 2 * memories] = a2;
      argmax[o + 3 * memories] = a3;
    }
    for (; i < rows; i++) {
      const q0 = i * dim;
      let b = -Infinity;
      let arg = start;
      for (let t = start; t < end; t++) {
        const s = dot(query, q0, x, t * dim, dim);
        if (s > b) {
          b = s;
          arg = t;
        }
      }
      best[i * memories + m] = b;
      argmax[i * memories + m] = arg;
    }
  }
  return finishMaxSimScores(out);
}

/**
 * Fills `out.scores` from `out.best`: `MaxSim(q, m)` = the mean over query rows (summed in row
 * order, then scaled by `1 / rows`) — the one place every MaxSim path computes it.
 */
export function finishMaxSimScores(out: MaxSimResult): MaxSimResult {
  const { rows, memories, scores, best } = out;
  const inv = rows > 0 ? 1 / rows : 0;
  for (let m = 0; m < memories; m++) {
    let sum = 0;
    for (let r = 0; r < rows; r++) sum += best[r * memories + m]!;
    scores[m] = sum * inv;
  }
  return out;
}

/**
 * Backward pass of MaxSim: adds `∂L/∂query [rows × dim]` into `gradQuery`, given
 * `∂L/∂MaxSim` per memory. Each memory sends `(∂L/∂MaxSim_m / n_q) · h_{m, argmax}` to each
 * query row; empty memories send nothing.
 */
export function maxSimBackward(
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
  for (let m = 0; m < memories; m++) {
    const g = gradScores[m]! * inv;
    if (g === 0) continue;
    for (let i = 0; i < rows; i++) {
      const t = argmax[i * memories + m]!;
      if (t < 0) continue;
      const xo = t * dim;
      const q0 = i * dim;
      for (let k = 0; k < dim; k++) gradQuery[q0 + k]! += g * x[xo + k]!;
    }
  }
  return gradQuery;
}

/** One query as the loss sees it. */
export interface LossQuery {
  /** Raw (unadapted) query token states `[rows × dim]`. */
  readonly tokens: FloatArray;
  readonly rows: number;
  readonly candidates: TokenSegments;
  /** Indices of the relevant memories among the candidates. */
  readonly positives: readonly number[];
}

/** Gradient accumulators of the adapter's parameters (float64, same layout as A and B). */
export interface AdapterGradients {
  readonly a: Float64Array;
  readonly b: Float64Array;
}

/**
 * `loss(q)` end to end — adapter, MaxSim against every candidate, cross-entropy — and, when
 * `grads` is given, its gradient with respect to A and B **added** into `grads`.
 * @example
 * const grads = { a: new Float64Array(32 * 384), b: new Float64Array(384 * 32) };
 * const loss = queryLoss(params, { tokens, rows: 12, candidates, positives: [3] }, 0.07, grads);
 */
export function queryLoss(
  params: AdapterParams,
  query: LossQuery,
  temperature: number = DEFAULT_TEMPERATURE,
  grads?: AdapterGradients,
): number {
  const { dim, rank } = params;
  const { tokens, rows, candidates } = query;
  const cache = createForwardCache(rows, dim, rank);
  const adapted = applyAdapterInto(new Float64Array(rows * dim), params, tokens, rows, cache);
  const result = maxSim(adapted, rows, dim, candidates);
  return lossFromMaxSim(params, query, cache, result, temperature, grads);
}

/**
 * The rest of {@link queryLoss} once MaxSim is known (by whichever kernel computed it, from
 * the adapted query of `cache`): the cross-entropy, and with `grads` its gradient through
 * MaxSim (by `backward`, which must equal {@link maxSimBackward} bit for bit on a zeroed
 * gradient) and the adapter (by `adapterBack`, which must equal {@link adapterBackward} bit for
 * bit), added into `grads`.
 */
export function lossFromMaxSim(
  params: AdapterParams,
  query: LossQuery,
  cache: AdapterForwardCache,
  result: MaxSimResult,
  temperature: number,
  grads?: AdapterGradients,
  backward: typeof maxSimBackward = maxSimBackward,
  adapterBack: typeof adapterBackward = adapterBackward,
): number {
  const { dim } = params;
  const { tokens, rows, candidates, positives } = query;
  if (grads === undefined) return multiPositiveCrossEntropy(result.scores, positives, temperature);
  const gradScores = new Float64Array(result.memories);
  const loss = multiPositiveCrossEntropy(result.scores, positives, temperature, gradScores);
  const gradAdapted = backward(result, gradScores, dim, candidates, new Float64Array(rows * dim));
  adapterBack(params, tokens, rows, cache, gradAdapted, grads.a, grads.b);
  return loss;
}
