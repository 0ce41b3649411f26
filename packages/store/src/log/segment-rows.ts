import type { CodecModel } from '@bfe/index';
import type { EncodedTexts, MemoryMeta } from '../types.js';

/** Rows of one bank in write order, with their encoded vectors. */
export interface SegmentRows {
  readonly bank: string;
  readonly ids: readonly string[];
  readonly texts: readonly string[];
  readonly metas: readonly (MemoryMeta | undefined)[];
  /** Write sequence of each row: the later of two rows with one id is the live one. */
  readonly seqs: Float64Array;
  readonly encoded: EncodedTexts;
  /** A read segment's token codes as stored (format 2), which a compaction copies. */
  readonly codes?: SegmentCodes;
}

/**
 * A segment's token codes: one or more codec models (blocks), the block of each row, and the
 * code bytes of every token. A flush fits one model on its rows; a compaction copies its
 * inputs' codes and models as they are (no second rounding), up to {@link MAX_CODEC_BLOCKS}.
 */
export interface SegmentCodes {
  readonly models: readonly CodecModel[];
  /** `[rows]`: the model of each row's tokens. */
  readonly blocks: Uint16Array;
  /** `[tokens × bytes per token]`. */
  readonly codes: Uint8Array;
}

/** Most codec models one segment holds; a merge past it fits one model again. */
export const MAX_CODEC_BLOCKS = 64;
