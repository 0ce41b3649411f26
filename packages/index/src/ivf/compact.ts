// The clustered index's compaction: the base layout and the tail lists merged into one
// contiguous layout without the deleted memories' tokens (the codes copied, not re-coded), or,
// when the appended tokens' residuals drifted, the centroids trained again on the live tokens.
import { tokensOf } from '../hnsw/layout.js';
import type { SimilarityKernel } from '../kernel.js';
import { subsetStore } from './assign.js';
import { IVF_BLOCK, blockedCodeAt, blockedCodeBytes, codeBytes } from './layout.js';
import { readFully } from './paged.js';
import type { IvfState } from './state.js';
import { trainIvf, type IvfData, type IvfResidualStats, type IvfTrainParams } from './train.js';

/**
 * The drift past which a compaction re-clusters by default. The appended tokens' mean squared
 * residual over the training one: tokens of the training distribution stay within a few per cent
 * of 1 (k-means' residual on held-out tokens of the same distribution; tested), while 1.25 means
 * the appended residuals' spread grew by about 12 % (√1.25), so more of them fall in the outer
 * residual buckets, fitted at the training residuals' quantiles, and the codes coarsen. Well above
 * the noise, and well below a new topic's tokens (ratios of 2 or more in the tests).
 */
export const IVF_DRIFT_THRESHOLD = 1.25;

/** How {@link compactIvf} compacts. */
export interface IvfCompactOptions {
  /**
   * `true`: train the centroids again on the live tokens; `false`: lay the index out again with
   * its centroids; left out: train again when {@link driftOf} exceeds `driftThreshold`.
   */
  readonly recluster?: boolean;
  /** Default {@link IVF_DRIFT_THRESHOLD}. */
  readonly driftThreshold?: number;
  /** The training of a re-clustering (default: the index's own parameters). */
  readonly params?: IvfTrainParams;
}

/**
 * The appended tokens' mean squared residual over the training tokens' (1 when nothing was
 * appended since the centroids were trained).
 */
export function driftOf(r: IvfResidualStats): number {
  if (r.appendedTokens === 0) return 1;
  return r.appendedSum / r.appendedTokens / r.trainedMean;
}

/** The deleted memory rows of `state`, ascending. */
function deletedRows(state: IvfState): Int32Array {
  const out: number[] = [];
  for (let m = 0; m < state.memories; m++) if (state.deleted[m] === 1) out.push(m);
  return Int32Array.from(out);
}

/**
 * The compacted layout of `state` (not yet installed) and whether it was re-clustered. Without
 * re-clustering it is the layout a build with the same codebook gives over the live tokens
 * (`layoutIvf`; tested byte for byte): per cluster its base tokens, then its tail's, both
 * ascending, every code copied from where it lies (resident, the file, a tail block).
 */
export async function compactIvf(
  state: IvfState,
  kernel: SimilarityKernel,
  options: IvfCompactOptions = {},
): Promise<{ data: IvfData; reclustered: boolean }> {
  const threshold = options.driftThreshold ?? IVF_DRIFT_THRESHOLD;
  const recluster = options.recluster ?? driftOf(state.residuals) > threshold;
  const deleted = deletedRows(state);
  if (recluster) {
    const params = options.params ?? state.base.data.params;
    if (params === undefined) {
      throw new Error('IVF compact: the index keeps no training parameters; pass params');
    }
    const offsets = state.side.tokenOffsets;
    const liveMemories = new Int32Array(state.memories - deleted.length);
    for (let m = 0, w = 0; m < state.memories; m++)
      if (state.deleted[m] === 0) liveMemories[w++] = m;
    const live = deleted.length === 0 ? undefined : tokensOf(offsets, liveMemories);
    const store = live === undefined ? state.store : subsetStore(state.store, live);
    const data = await trainIvf(store, kernel, params, live);
    return { data: { ...data, deleted }, reclustered: true };
  }
  return { data: { ...relayout(state), deleted }, reclustered: false };
}

/** The base and tails merged per cluster, deleted memories' tokens dropped. */
function relayout(state: IvfState): Omit<IvfData, 'deleted'> {
  const { data, tails, scanner, paged } = state.base;
  const { dim, residualBits: bits } = data;
  const bytes = codeBytes(dim, bits);
  const live = state.store.size - state.deletedTokens;
  const c = data.clusterOffsets.length - 1;
  const clusterOffsets = new Int32Array(c + 1);
  const tokens = new Int32Array(live);
  const codes = new Uint8Array(blockedCodeBytes(live, dim, bits));
  const memory = new Uint8Array(scanner.share.memory.buffer);
  const { tokenMemory, deleted } = state;
  const fd = state.fd();
  let buffer = new Uint8Array(0);
  let w = 0;
  // Copies the code of the token at `src[at + 16 j]` to layout place `w`.
  const copy = (src: Uint8Array, at: number): void => {
    const to = blockedCodeAt(w, bytes);
    for (let j = 0; j < bytes; j++) codes[to + IVF_BLOCK * j] = src[at + IVF_BLOCK * j]!;
  };
  for (let k = 0; k < c; k++) {
    clusterOffsets[k] = w;
    const from = data.clusterOffsets[k]!;
    const to = data.clusterOffsets[k + 1]!;
    let src = memory;
    let origin = scanner.share.codesAt;
    if (paged !== undefined && to > from) {
      // The cluster's blocks read by position; place p at its block's offset from the first.
      const first = Math.floor(from / IVF_BLOCK);
      const length = (Math.ceil(to / IVF_BLOCK) - first) * IVF_BLOCK * bytes;
      if (buffer.length < length) buffer = new Uint8Array(Math.max(length, 2 * buffer.length));
      readFully(fd, buffer, 0, length, paged.codes.fileAt + first * IVF_BLOCK * bytes);
      src = buffer;
      origin = -first * IVF_BLOCK * bytes;
    }
    for (let p = from; p < to; p++) {
      const t = data.tokens[p]!;
      if (deleted[tokenMemory[t]!] === 1) continue;
      copy(src, origin + blockedCodeAt(p, bytes));
      tokens[w++] = t;
    }
    for (const p of tails.places(k)) {
      const t = tails.tokenAt(p);
      if (deleted[tokenMemory[t]!] === 1) continue;
      copy(memory, tails.codeAt(p));
      tokens[w++] = t;
    }
  }
  clusterOffsets[c] = w;
  if (w !== live) throw new Error(`IVF compact: laid out ${w} tokens, expected ${live}`);
  const { centroids, weights, cutoffs, params } = data;
  const residuals = state.residuals;
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
    params,
  };
}
