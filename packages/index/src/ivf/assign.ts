// The clustered index's assignment with a fixed codebook: each token to its best centroid, its
// residual packed with the codebook's cutoffs, and the tokens laid out by cluster. A build, an
// append and a compaction all assign through here, so they agree token for token.
import type { SimilarityKernel } from '../kernel.js';
import type { TokenStore } from '../token-store.js';
import { IVF_BLOCK, blockedCodeAt, blockedCodeBytes, codeBytes } from './layout.js';
import type { IvfCodebook, IvfData, IvfResidualStats } from './data.js';

/** Tokens per kernel call when assigning (the default of `chunk` options). */
export const ASSIGN_CHUNK = 4096;

/** Per row of `x [n × dim]`: the centroid of largest inner product (the kernel's top-1). */
export async function assignRows(
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

/** `‖x[at..] − centroids[cAt..]‖²` in float64. */
export function squaredResidual(
  x: Float32Array,
  at: number,
  centroids: Float32Array,
  cAt: number,
  dim: number,
): number {
  let s = 0;
  for (let j = 0; j < dim; j++) {
    const r = x[at + j]! - centroids[cAt + j]!;
    s += r * r;
  }
  return s;
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
  bits: 2 | 4,
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

/**
 * The rows `tokens[i]` of `store` as a store of `tokens.length` rows (ascending tokens: runs of
 * consecutive ones read in one call). Reads only; what a build over some of a bank's tokens reads.
 */
export function subsetStore(store: TokenStore, tokens: Int32Array): TokenStore {
  const dim = store.dim;
  let scratch = new Float32Array(0);
  return {
    size: tokens.length,
    dim,
    read: (start, end) => {
      const n = end - start;
      if (scratch.length < n * dim)
        scratch = new Float32Array(Math.max(n * dim, 2 * scratch.length));
      for (let i = start; i < end;) {
        let j = i + 1;
        while (j < end && tokens[j] === tokens[j - 1]! + 1) j++;
        scratch.set(store.read(tokens[i]!, tokens[j - 1]! + 1), (i - start) * dim);
        i = j;
      }
      return scratch.subarray(0, n * dim);
    },
    dots: () => {
      throw new Error('subsetStore: reads only');
    },
  };
}

/**
 * Lays out the rows of `store` with a fixed codebook: every row assigned to its best centroid
 * ({@link assignRows}, chunks of `chunk`), the rows counting-sorted by cluster (ascending row
 * within a cluster) and their residuals packed in the blocked layout. With `tokens`, row `i` is
 * bank token `tokens[i]` (ascending), which is what the layout's token ids say. The residual
 * statistics are the layout's own: its mean squared residual, nothing appended.
 */
export async function layoutIvf(
  store: TokenStore,
  kernel: SimilarityKernel,
  book: IvfCodebook,
  options: { readonly chunk?: number; readonly tokens?: Int32Array } = {},
): Promise<Omit<IvfData, 'deleted' | 'params'>> {
  const { dim, residualBits: bits, centroids, cutoffs } = book;
  const n = store.size;
  const c = centroids.length / dim;
  const chunk = options.chunk ?? ASSIGN_CHUNK;
  const ids = options.tokens;
  if (ids !== undefined && ids.length !== n) throw new Error('layoutIvf: one token id a row');
  if (cutoffs.length !== dim * ((1 << bits) - 1)) {
    throw new Error('layoutIvf: the codebook has no residual cutoffs (a BFEIVF02 file)');
  }
  const cluster = new Int32Array(n);
  for (let a = 0; a < n; a += chunk) {
    const m = Math.min(chunk, n - a);
    await assignRows(kernel, store.read(a, a + m), m, centroids, c, dim, cluster, a);
  }
  const clusterOffsets = new Int32Array(c + 1);
  for (let t = 0; t < n; t++) clusterOffsets[cluster[t]! + 1]!++;
  for (let k = 0; k < c; k++) clusterOffsets[k + 1]! += clusterOffsets[k]!;
  const place = clusterOffsets.slice(0, c);
  const tokens = new Int32Array(n);
  const bpt = codeBytes(dim, bits);
  const codes = new Uint8Array(blockedCodeBytes(n, dim, bits));
  let residual = 0;
  for (let a = 0; a < n; a += chunk) {
    const m = Math.min(chunk, n - a);
    const x = store.read(a, a + m);
    for (let i = 0; i < m; i++) {
      const t = a + i;
      const k = cluster[t]!;
      const p = place[k]!++;
      tokens[p] = ids === undefined ? t : ids[t]!;
      residual += squaredResidual(x, i * dim, centroids, k * dim, dim);
      const at = blockedCodeAt(p, bpt);
      packResidual(x, i * dim, centroids, k * dim, cutoffs, dim, bits, codes, at, IVF_BLOCK);
    }
  }
  const residuals: IvfResidualStats = {
    trainedMean: n === 0 ? 0 : residual / n,
    appendedSum: 0,
    appendedTokens: 0,
  };
  const weights = book.weights;
  return {
    dim,
    residualBits: bits,
    centroids,
    weights,
    cutoffs,
    clusterOffsets,
    tokens,
    codes,
    residuals,
  };
}
