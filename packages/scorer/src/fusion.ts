import type { TieOrder } from '@bfe/index';

/** σ below this is taken as this (METHOD.md §3), so a constant branch standardises to 0. */
export const SIGMA_FLOOR = 1e-6;

/**
 * Standardises one query's branch scores over its candidate set (METHOD.md §3):
 * `(x − μ) / max(σ, 1e-6)`, with μ the mean and σ the **population** standard deviation
 * (divisor `n`, not `n − 1`) over the candidates. Accumulates in float64.
 *
 * @example
 * standardize(Float64Array.of(1, 2, 3)); // Float64Array [-1.2247…, 0, 1.2247…]
 */
export function standardize(x: ArrayLike<number>): Float64Array {
  return standardizeInto(new Float64Array(x.length), x);
}

/** In-place form of {@link standardize}: writes into `out` (may be `x` itself) and returns it. */
export function standardizeInto(out: Float64Array, x: ArrayLike<number>): Float64Array {
  const n = x.length;
  if (out.length !== n) throw new Error(`standardizeInto: out has ${out.length}, x has ${n}`);
  if (n === 0) return out;
  const { mean, scale } = standardization(x);
  for (let i = 0; i < n; i++) out[i] = (x[i]! - mean) * scale;
  return out;
}

/**
 * The μ and `1 / max(σ, 1e-6)` that {@link standardize} applies (`z = (x − mean)·scale`), so a
 * caller can standardise a changed score with the original candidates' μ and σ held fixed
 * (the token interventions) in exactly the same float64 steps.
 *
 * @example
 * standardization(Float64Array.of(1, 2, 3)); // { mean: 2, scale: 1.2247… }
 */
export function standardization(x: ArrayLike<number>): { mean: number; scale: number } {
  const n = x.length;
  if (n === 0) return { mean: 0, scale: 1 / SIGMA_FLOOR };
  let sum = 0;
  for (let i = 0; i < n; i++) sum += x[i]!;
  const mean = sum / n;
  let ss = 0;
  for (let i = 0; i < n; i++) {
    const d = x[i]! - mean;
    ss += d * d;
  }
  return { mean, scale: 1 / Math.max(Math.sqrt(ss / n), SIGMA_FLOOR) };
}

/**
 * Local–global fusion (METHOD.md §3): `α·z(pool) + (1 − α)·z(sparse)`, each branch standardised
 * over the same candidate set by {@link standardize}. `α = 0` is the no-fusion ablation.
 *
 * @example
 * fuse(Float64Array.of(0.9, 0.1), Float64Array.of(0.2, 0.4), 0.5); // Float64Array [0, 0]
 */
export function fuse(
  pooled: ArrayLike<number>,
  sparse: ArrayLike<number>,
  alpha: number,
): Float64Array {
  if (pooled.length !== sparse.length) {
    throw new Error(`fuse: ${pooled.length} pooled vs ${sparse.length} sparse scores`);
  }
  if (!(alpha >= 0 && alpha <= 1)) throw new Error(`fuse: alpha must be in [0, 1], got ${alpha}`);
  const zp = standardize(pooled);
  const zs = standardize(sparse);
  const out = new Float64Array(zp.length);
  for (let i = 0; i < out.length; i++) out[i] = alpha * zp[i]! + (1 - alpha) * zs[i]!;
  return out;
}

/** Candidates in ranked order. */
export interface RankedCandidates {
  /** Positions into the candidate list, best first. */
  readonly order: Int32Array;
  /** Memory rows, best first. */
  readonly rows: Int32Array;
  /** Their scores, descending. */
  readonly scores: Float64Array;
  /** Memory ids, best first. */
  readonly ids: string[];
}

/**
 * Ranks candidates by score, descending; equal scores rank by the bank's tie order
 * (`tieOrder`: a seeded SHA-256 of each memory id, METHOD.md §8), never by candidate,
 * bank or file order. A ranking is a pure function of the scores and the memory ids.
 *
 * @throws Error when the lengths differ or a row has no id (programmer errors).
 * @example
 * const ties = tieOrder(bank.memories.ids);
 * rankCandidates(Int32Array.of(7, 3, 9), Float64Array.of(0.2, 0.5, 0.2), ties);
 * // { rows: [3, 7, 9] or [3, 9, 7] (by the ids' tie keys), scores: [0.5, 0.2, 0.2], … }
 */
export function rankCandidates(
  candidates: Int32Array,
  scores: Float64Array,
  ties: TieOrder,
): RankedCandidates {
  const n = candidates.length;
  if (scores.length !== n) {
    throw new Error(`rankCandidates: ${n} candidates but ${scores.length} scores`);
  }
  const rank = ties.rank;
  const order = new Int32Array(n);
  for (let i = 0; i < n; i++) {
    const row = candidates[i]!;
    if (!(row >= 0 && row < rank.length)) {
      throw new Error(`rankCandidates: no id for memory row ${row}`);
    }
    order[i] = i;
  }
  order.sort((a, b) => {
    const sa = scores[a]!;
    const sb = scores[b]!;
    return sa > sb ? -1 : sa < sb ? 1 : rank[candidates[a]!]! - rank[candidates[b]!]!;
  });
  const rows = new Int32Array(n);
  const sorted = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    rows[i] = candidates[order[i]!]!;
    sorted[i] = scores[order[i]!]!;
  }
  const ids = Array.from(rows, (row) => ties.ids[row] as string);
  return { order, rows, scores: sorted, ids };
}
