// The clustered residual index's training: spherical k-means on a seeded sample, per-dimension
// residual buckets, and the tokens laid out by cluster with their packed codes.
import { seededPermutation } from '@bfe/core';
import { fromHalfBits, toHalfBits } from '../codecs/fp16.js';
import type { SimilarityKernel } from '../kernel.js';
import type { TokenStore } from '../token-store.js';
import { ASSIGN_CHUNK, assignRows, layoutIvf } from './assign.js';
import type { IvfData, IvfTrainParams } from './data.js';
import type { ResidualBits } from './layout.js';

export { IVF_BLOCK, blockedCodeAt, blockedCodeBytes, codeBytes } from './layout.js';
export { packResidual } from './assign.js';

export type { ResidualBits } from './layout.js';
export type { IvfCodebook, IvfData, IvfResidualStats, IvfTrainParams } from './data.js';

/** The seed of the k-means sample (a seeded permutation of the bank's rows). */
export const IVF_SAMPLE_SEED = 42;

/** How {@link trainIvf} trains. */
export interface IvfTrainOptions extends IvfTrainParams {
  /** Tokens per kernel call when assigning (default 4096). */
  readonly chunk?: number;
}

/** Unit-normalises row `r` of `x` in place (a zero row stays zero). */
function normaliseRow(x: Float32Array, at: number, dim: number): void {
  let ss = 0;
  for (let j = 0; j < dim; j++) ss += x[at + j]! * x[at + j]!;
  if (ss === 0) return;
  const f = 1 / Math.sqrt(ss);
  for (let j = 0; j < dim; j++) x[at + j]! *= f;
}

/** Rounds every value of `x` to the nearest float16 (ties to even) in place. */
function roundToHalf(x: Float32Array): void {
  for (let i = 0; i < x.length; i++) x[i] = fromHalfBits(toHalfBits(x[i]!));
}

/**
 * Trains and lays out the index over every token of `store`: spherical k-means (centroids
 * initialised from the first `centroids` rows of a seeded permutation, Lloyd steps with the
 * kernel's top-1 as the assignment, float64 means, an empty cluster keeps its centroid), the
 * centroids rounded to float16 (as PLAID keeps them: half their bytes on disk; the residuals are
 * taken from the rounded centroids, so nothing is lost but their unit norm's last bits), every
 * token assigned to its best centroid, residual buckets per dimension at the sample residuals'
 * quantiles (cutoffs at `i / 2^b`, decoded values at `(i + ½) / 2^b`, PLAID's rule per dimension),
 * then the tokens counting-sorted by cluster and their residuals packed ({@link layoutIvf}). With
 * `tokens`, store row `i` is bank token `tokens[i]` (ascending). Deterministic: the same store,
 * options and kernel give the same bytes.
 */
export async function trainIvf(
  store: TokenStore,
  kernel: SimilarityKernel,
  options: IvfTrainOptions,
  tokens?: Int32Array,
): Promise<IvfData> {
  const { size: n, dim } = store;
  const bits = options.residualBits;
  if (bits !== 2 && bits !== 4) throw new Error(`residualBits must be 2 or 4, got ${String(bits)}`);
  if (dim % (8 / bits) !== 0) throw new Error(`dim ${dim} is not a multiple of ${8 / bits}`);
  const c = options.centroids;
  if (!Number.isInteger(c) || c < 1 || c > n) {
    throw new Error(`centroids must be an integer in [1, ${n}], got ${c}`);
  }
  const chunk = options.chunk ?? ASSIGN_CHUNK;
  const s = Math.min(n, Math.max(c, options.sample ?? 64 * c));
  const order = seededPermutation(n, options.seed ?? IVF_SAMPLE_SEED).subarray(0, s);
  const sample = new Float32Array(s * dim);
  for (let i = 0; i < s; i++) sample.set(store.read(order[i]!, order[i]! + 1), i * dim);
  const centroids = sample.slice(0, c * dim);
  for (let j = 0; j < c; j++) normaliseRow(centroids, j * dim, dim);
  const owner = new Int32Array(s);
  const sums = new Float64Array(c * dim);
  const counts = new Int32Array(c);
  const assignSample = async (): Promise<void> => {
    for (let a = 0; a < s; a += chunk) {
      const m = Math.min(chunk, s - a);
      const x = sample.subarray(a * dim, (a + m) * dim);
      await assignRows(kernel, x, m, centroids, c, dim, owner, a);
    }
  };
  for (let it = 0; it < (options.iterations ?? 10); it++) {
    await assignSample();
    sums.fill(0);
    counts.fill(0);
    for (let i = 0; i < s; i++) {
      const o = owner[i]! * dim;
      counts[owner[i]!]!++;
      for (let j = 0; j < dim; j++) sums[o + j]! += sample[i * dim + j]!;
    }
    for (let k = 0; k < c; k++) {
      if (counts[k] === 0) continue;
      for (let j = 0; j < dim; j++) centroids[k * dim + j] = sums[k * dim + j]!;
      normaliseRow(centroids, k * dim, dim);
    }
  }
  roundToHalf(centroids);
  await assignSample();
  const { cutoffs, weights } = residualBuckets(sample, owner, s, centroids, dim, bits);
  const book = { dim, residualBits: bits, centroids, weights, cutoffs };
  const laid = await layoutIvf(store, kernel, book, {
    chunk,
    ...(tokens === undefined ? {} : { tokens }),
  });
  const params: IvfTrainParams = {
    centroids: c,
    residualBits: bits,
    ...(options.sample === undefined ? {} : { sample: options.sample }),
    ...(options.iterations === undefined ? {} : { iterations: options.iterations }),
    ...(options.seed === undefined ? {} : { seed: options.seed }),
  };
  return { ...laid, deleted: new Int32Array(0), params };
}

/**
 * Per dimension: the `2^b − 1` cutoffs (quantiles `i / 2^b`) and `2^b` decoded values
 * (quantiles `(i + ½) / 2^b`) of the sample's residuals `x − centroid`.
 */
function residualBuckets(
  sample: Float32Array,
  owner: Int32Array,
  s: number,
  centroids: Float32Array,
  dim: number,
  bits: ResidualBits,
): { cutoffs: Float32Array; weights: Float32Array } {
  const buckets = 1 << bits;
  const cutoffs = new Float32Array(dim * (buckets - 1));
  const weights = new Float32Array(dim * buckets);
  const column = new Float32Array(s);
  const quantile = (p: number): number => column[Math.min(s - 1, Math.floor(p * s))]!;
  for (let j = 0; j < dim; j++) {
    for (let i = 0; i < s; i++) column[i] = sample[i * dim + j]! - centroids[owner[i]! * dim + j]!;
    column.sort();
    for (let b = 1; b < buckets; b++) cutoffs[j * (buckets - 1) + b - 1] = quantile(b / buckets);
    for (let b = 0; b < buckets; b++) weights[j * buckets + b] = quantile((b + 0.5) / buckets);
  }
  return { cutoffs, weights };
}
