// WARP's estimate of a missing similarity (Scheerer et al., 2025, WARP_SELECT; `xtr-warp`'s
// CentroidSelector): per query row, the centroids in probe order are taken until the tokens they
// hold reach t′; the score of the last one taken is what a token the search did not return is
// assumed to score. An option of the clustered index beside METHOD.md's tail floor.
import { prepareQuery } from '../codecs/codec.js';
import type { SimilarityKernel } from '../kernel.js';
import type { TokenHits } from '../token-index.js';
import { probeOrder } from './scan.js';
import type { IvfState } from './state.js';

/** Centroids an estimate looks at, at most (WARP's `bound`). */
export const WARP_BOUND = 128;

/** WARP's t′ for a search over `tokens` tokens: `⌊√(8·tokens) / 1000⌋ · 1000`, at least 1000. */
export function warpTPrime(tokens: number): number {
  const t = Math.floor(Math.sqrt(8 * tokens) / 1000) * 1000;
  return t === 0 ? 1000 : t;
}

/**
 * Per row of `scores` (`[rows × clusters]` centroid scores): the score of the centroid at which
 * the cumulative `sizes` (tokens per cluster, in probe order: score descending, equal scores by
 * the smaller cluster) first reach `tPrime`, looking at the best `bound` centroids at most (the
 * last of them when they hold fewer); 0 for no cluster.
 */
export function missingEstimates(
  scores: Float32Array,
  rows: number,
  sizes: ArrayLike<number>,
  tPrime: number,
  bound = WARP_BOUND,
): Float64Array {
  const c = sizes.length;
  const out = new Float64Array(rows);
  for (let r = 0; r < rows; r++) {
    const order = probeOrder(scores, r * c, c, Math.min(bound, c));
    let sum = 0;
    let taken = 0;
    while (sum < tPrime && taken < order.length) sum += sizes[order[taken++]!]!;
    out[r] = taken === 0 ? 0 : scores[r * c + order[taken - 1]!]!;
  }
  return out;
}

/** The candidate set a floor is estimated over. */
export interface FloorSet {
  readonly memories: Int32Array;
  /** Every memory of the bank and none deleted: the clusters' own sizes count. */
  readonly all: boolean;
  /** Tokens of the candidate memories. */
  readonly tokens: number;
}

/**
 * `hits` with WARP's estimate per row as their `floor`: t′ from the candidates' tokens, each
 * cluster's size counted over the candidates' tokens only (`scores`: the search's centroid
 * scores, else computed here, when the search probed none).
 */
export async function warpFloor(
  state: IvfState,
  kernel: SimilarityKernel,
  hits: TokenHits,
  queries: Float32Array,
  rows: number,
  set: FloorSet,
  scores?: Float32Array,
): Promise<TokenHits> {
  const { data, tails } = state.base;
  const c = data.clusterOffsets.length - 1;
  const sizes = new Int32Array(c);
  if (set.all) {
    const tail = tails.view();
    for (let j = 0; j < c; j++) {
      sizes[j] = data.clusterOffsets[j + 1]! - data.clusterOffsets[j]! + tail.count[j]!;
    }
  } else {
    const cluster = tokenClusters(state);
    const offsets = state.side.tokenOffsets;
    for (const m of set.memories) {
      for (let t = offsets[m]!; t < offsets[m + 1]!; t++) {
        if (cluster[t]! >= 0) sizes[cluster[t]!]!++;
      }
    }
  }
  const cs =
    scores ??
    (await kernel.scores(
      prepareQuery(state.side.model, queries, rows),
      rows,
      data.centroids,
      c,
      data.dim,
    ));
  return { ...hits, floor: missingEstimates(cs, rows, sizes, warpTPrime(set.tokens)) };
}

/** Each state's token → cluster map and the state version it is of. */
const clusterMaps = new WeakMap<IvfState, { version: number; map: Int32Array }>();

/** Each bank token's cluster (−1: not laid out, a deleted memory's), kept until a change. */
function tokenClusters(state: IvfState): Int32Array {
  const kept = clusterMaps.get(state);
  if (kept?.version === state.version) return kept.map;
  const { data, tails } = state.base;
  const map = new Int32Array(state.store.size).fill(-1);
  const c = data.clusterOffsets.length - 1;
  for (let j = 0; j < c; j++) {
    for (let p = data.clusterOffsets[j]!; p < data.clusterOffsets[j + 1]!; p++) {
      map[data.tokens[p]!] = j;
    }
  }
  for (let j = 0; j < c; j++) for (const p of tails.places(j)) map[tails.tokenAt(p)] = j;
  clusterMaps.set(state, { version: state.version, map });
  return map;
}
