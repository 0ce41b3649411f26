// The clustered residual index's training: spherical k-means on a seeded sample, per-dimension
// residual buckets, and the tokens laid out by cluster with their packed codes.
import { seededPermutation } from '@bfe/core';
import type { SimilarityKernel } from '../kernel.js';
import type { TokenStore } from '../token-store.js';
import {
  IVF_BLOCK,
  blockedCodeAt,
  blockedCodeBytes,
  codeBytes,
  type ResidualBits,
} from './layout.js';

export { IVF_BLOCK, blockedCodeAt, blockedCodeBytes, codeBytes } from './layout.js';

export type { ResidualBits } from './layout.js';

/** The seed of the k-means sample (a seeded permutation of the bank's rows). */
export const IVF_SAMPLE_SEED = 42;

/** The trained and laid-out index: everything a search reads besides the rescoring codes. */
export interface IvfData {
  readonly dim: number;
  readonly residualBits: ResidualBits;
  /** `[centroids × dim]` unit-norm centroids. */
  readonly centroids: Float32Array;
  /** `[dim × buckets]` the decoded residual of bucket `b` in dimension `d`. */
  readonly weights: Float32Array;
  /** `[centroids + 1]`: cluster `c` holds layout places `clusterOffsets[c]..[c+1]-1`. */
  readonly clusterOffsets: Int32Array;
  /** `[tokens]` the bank token at each layout place (ascending within a cluster). */
  readonly tokens: Int32Array;
  /**
   * Packed residual codes, `dim·bits/8` bytes a token, in blocks of {@link IVF_BLOCK} layout
   * places: byte `j` of place `p` at `((p >> 4) · bytes + j) · 16 + (p & 15)` (the fast scan
   * looks up 16 tokens at once; the last block is zero-padded).
   */
  readonly codes: Uint8Array;
}

/** How {@link trainIvf} trains. */
export interface IvfTrainOptions {
  readonly centroids: number;
  readonly residualBits: ResidualBits;
  /** k-means sample: at most this many tokens (default `64 · centroids`). */
  readonly sample?: number;
  /** Lloyd iterations (default 10). */
  readonly iterations?: number;
  /** The sample's seed (default {@link IVF_SAMPLE_SEED}). */
  readonly seed?: number;
  /** Tokens per kernel call when assigning (default 4096). */
  readonly chunk?: number;
}

/** Per row of `x [n × dim]`: the centroid of largest inner product (the kernel's top-1). */
async function assign(
  kernel: SimilarityKernel,
  x: Float32Array,
  n: number,
  centroids: Float32Array,
  c: number,
  dim: number,
  out: Int32Array,
  at: number,
): Promise<void> {
  const top = await kernel.topK(x, n, centroids, c, dim, 1);
  for (let i = 0; i < n; i++) out[at + i] = top.indices[i]!;
}

/** Unit-normalises row `r` of `x` in place (a zero row stays zero). */
function normaliseRow(x: Float32Array, at: number, dim: number): void {
  let ss = 0;
  for (let j = 0; j < dim; j++) ss += x[at + j]! * x[at + j]!;
  if (ss === 0) return;
  const f = 1 / Math.sqrt(ss);
  for (let j = 0; j < dim; j++) x[at + j]! *= f;
}

/**
 * Trains and lays out the index over every token of `store`: spherical k-means (centroids
 * initialised from the first `centroids` rows of a seeded permutation, Lloyd steps with the
 * kernel's top-1 as the assignment, float64 means, an empty cluster keeps its centroid), every
 * token assigned to its best centroid, residual buckets per dimension at the sample residuals'
 * quantiles (cutoffs at `i / 2^b`, decoded values at `(i + ½) / 2^b`, PLAID's rule per dimension),
 * then the tokens counting-sorted by cluster and their residuals packed. Deterministic: the same
 * store, options and kernel give the same bytes.
 */
export async function trainIvf(
  store: TokenStore,
  kernel: SimilarityKernel,
  options: IvfTrainOptions,
): Promise<IvfData> {
  const { size: n, dim } = store;
  const bits = options.residualBits;
  if (bits !== 2 && bits !== 4) throw new Error(`residualBits must be 2 or 4, got ${String(bits)}`);
  if (dim % (8 / bits) !== 0) throw new Error(`dim ${dim} is not a multiple of ${8 / bits}`);
  const c = options.centroids;
  if (!Number.isInteger(c) || c < 1 || c > n) {
    throw new Error(`centroids must be an integer in [1, ${n}], got ${c}`);
  }
  const chunk = options.chunk ?? 4096;
  const s = Math.min(n, Math.max(c, options.sample ?? 64 * c));
  const order = seededPermutation(n, options.seed ?? IVF_SAMPLE_SEED).subarray(0, s);
  const sample = new Float32Array(s * dim);
  for (let i = 0; i < s; i++) sample.set(store.read(order[i]!, order[i]! + 1), i * dim);
  const centroids = sample.slice(0, c * dim);
  for (let j = 0; j < c; j++) normaliseRow(centroids, j * dim, dim);
  const owner = new Int32Array(s);
  const sums = new Float64Array(c * dim);
  const counts = new Int32Array(c);
  for (let it = 0; it < (options.iterations ?? 10); it++) {
    for (let a = 0; a < s; a += chunk) {
      const m = Math.min(chunk, s - a);
      await assign(kernel, sample.subarray(a * dim, (a + m) * dim), m, centroids, c, dim, owner, a);
    }
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
  for (let a = 0; a < s; a += chunk) {
    const m = Math.min(chunk, s - a);
    await assign(kernel, sample.subarray(a * dim, (a + m) * dim), m, centroids, c, dim, owner, a);
  }
  const { cutoffs, weights } = residualBuckets(sample, owner, s, centroids, dim, bits);

  const cluster = new Int32Array(n);
  for (let a = 0; a < n; a += chunk) {
    const m = Math.min(chunk, n - a);
    await assign(kernel, store.read(a, a + m), m, centroids, c, dim, cluster, a);
  }
  const clusterOffsets = new Int32Array(c + 1);
  for (let t = 0; t < n; t++) clusterOffsets[cluster[t]! + 1]!++;
  for (let k = 0; k < c; k++) clusterOffsets[k + 1]! += clusterOffsets[k]!;
  const place = clusterOffsets.slice(0, c);
  const tokens = new Int32Array(n);
  const bpt = codeBytes(dim, bits);
  const codes = new Uint8Array(blockedCodeBytes(n, dim, bits));
  for (let a = 0; a < n; a += chunk) {
    const m = Math.min(chunk, n - a);
    const x = store.read(a, a + m);
    for (let i = 0; i < m; i++) {
      const t = a + i;
      const p = place[cluster[t]!]!++;
      tokens[p] = t;
      const at = blockedCodeAt(p, bpt);
      packResidual(
        x,
        i * dim,
        centroids,
        cluster[t]! * dim,
        cutoffs,
        dim,
        bits,
        codes,
        at,
        IVF_BLOCK,
      );
    }
  }
  return { dim, residualBits: bits, centroids, weights, clusterOffsets, tokens, codes };
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

/**
 * Packs the residual of row `x[at..]` against the centroid at `centroids[cAt..]`: dimension `d`'s
 * bucket (the count of its cutoffs ≤ the residual; they ascend) at bits `(d mod 8/b) · b` of byte
 * `d / (8/b)`, byte `j` written at `out[outAt + j · step]`.
 */
export function packResidual(
  x: Float32Array,
  at: number,
  centroids: Float32Array,
  cAt: number,
  cutoffs: Float32Array,
  dim: number,
  bits: ResidualBits,
  out: Uint8Array,
  outAt: number,
  step = 1,
): void {
  const cuts = (1 << bits) - 1;
  const perByte = 8 / bits;
  for (let byte = 0; byte < dim / perByte; byte++) {
    let v = 0;
    for (let i = 0; i < perByte; i++) {
      const d = byte * perByte + i;
      const r = x[at + d]! - centroids[cAt + d]!;
      // The count of cutoffs ≤ r (they ascend): a binary search, 2 or 4 comparisons.
      let lo = 0;
      let hi = cuts;
      while (lo < hi) {
        const mid = (lo + hi) >> 1;
        if (cutoffs[d * cuts + mid]! <= r) lo = mid + 1;
        else hi = mid;
      }
      v |= lo << (i * bits);
    }
    out[outAt + byte * step] = v;
  }
}
