// The clustered index's data: the codebook that assigns and codes a token, and the trained,
// laid-out index a search reads (train.ts makes it, assign.ts lays tokens out with it).
import type { ResidualBits } from './layout.js';

/** The training parameters an index keeps for re-clustering (`IvfTrainOptions` of train.ts). */
export interface IvfTrainParams {
  readonly centroids: number;
  readonly residualBits: ResidualBits;
  readonly sample?: number;
  readonly iterations?: number;
  readonly seed?: number;
}

/**
 * The residual norms the drift is measured on: the mean `‖x − centroid‖²` of the tokens the
 * centroids were laid out over when trained, and the sum and count of it over the tokens
 * appended since (kept through a compaction that does not re-cluster).
 */
export interface IvfResidualStats {
  readonly trainedMean: number;
  readonly appendedSum: number;
  readonly appendedTokens: number;
}

/** What assigns and codes a token: centroids, residual cutoffs and decoded buckets. */
export interface IvfCodebook {
  readonly dim: number;
  readonly residualBits: ResidualBits;
  /** `[centroids × dim]` unit-norm centroids (rounded to float16 when trained). */
  readonly centroids: Float32Array;
  /** `[dim × buckets]` the decoded residual of bucket `b` in dimension `d`. */
  readonly weights: Float32Array;
  /**
   * `[dim × (buckets − 1)]` the residual cutoffs of dimension `d` (ascending); empty in an index
   * read from a `BFEIVF02` file, which can be searched but not appended to.
   */
  readonly cutoffs: Float32Array;
}

/** The trained and laid-out index: everything a search reads besides the rescoring codes. */
export interface IvfData extends IvfCodebook {
  /** `[centroids + 1]`: cluster `c` holds layout places `clusterOffsets[c]..[c+1]-1`. */
  readonly clusterOffsets: Int32Array;
  /** `[tokens]` the bank token at each layout place (ascending within a cluster). */
  readonly tokens: Int32Array;
  /**
   * Packed residual codes, `dim·bits/8` bytes a token, in blocks of `IVF_BLOCK` (16) layout
   * places: byte `j` of place `p` at `((p >> 4) · bytes + j) · 16 + (p & 15)` (the fast scan
   * looks up 16 tokens at once; the last block is zero-padded).
   */
  readonly codes: Uint8Array;
  /**
   * Memory rows deleted (ascending): their tokens are not in the layout, and a search never
   * returns them (the rescoring codes beside the index still hold them).
   */
  readonly deleted: Int32Array;
  readonly residuals: IvfResidualStats;
  /** How the centroids were trained (undefined: a `BFEIVF02` file). */
  readonly params: IvfTrainParams | undefined;
}
