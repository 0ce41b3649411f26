import { readFileSync } from 'node:fs';
import type { RowCache } from './row-cache.js';
import {
  decodeSegmentBytes,
  segmentCorrupt,
  type ExpectedSegment,
  type SegmentRows,
} from './segment.js';
import type { SegmentKeys } from './segment-read.js';
import type { EncodedTexts, MemoryMeta } from '../types.js';

/** Segment rows whose decoded token states the cache counts. */
const counted = new WeakSet<SegmentRows>();

/**
 * A flushed segment's rows, read by parts: the ids, write sequences and token offsets stay in
 * memory (what opening a store reads); texts, metadata and vectors are read from the file
 * (whole, its SHA-256 checked, token states decoded from the segment's codec) when first asked
 * for and held in the store's {@link RowCache}, so memory follows what is searched, not what is
 * stored. Reads are synchronous: they serve synchronous snapshot views.
 */
export class FileRows implements SegmentRows {
  readonly ids: readonly string[];
  readonly seqs: Float64Array;
  readonly encoded: EncodedTexts;
  /** Set once the segment is retired: its rows, held here since its file is going away. */
  #pinned: SegmentRows | undefined;

  constructor(
    readonly bank: string,
    readonly path: string,
    readonly expected: ExpectedSegment,
    keys: SegmentKeys,
    readonly cache: RowCache,
  ) {
    this.ids = keys.ids;
    this.seqs = keys.seqs;
    const load = (): EncodedTexts => this.#load().encoded;
    const vectors = (): Float32Array => this.#vectors();
    const tokenOffsets = keys.tokenOffsets;
    const dim = expected.dim;
    const count = keys.ids.length;
    this.encoded = {
      count,
      dim,
      tokenOffsets,
      get pooled() {
        return load().pooled;
      },
      get tokenVectors() {
        return vectors();
      },
      get tokenIds() {
        return load().tokenIds;
      },
      get tokenPositions() {
        return load().tokenPositions;
      },
      get truncated() {
        return load().truncated;
      },
    };
  }

  get texts(): readonly string[] {
    return this.#load().texts;
  }

  get metas(): readonly (MemoryMeta | undefined)[] {
    return this.#load().metas;
  }

  /** The whole rows, read now if the cache does not hold them. */
  rows(): SegmentRows {
    return this.#load();
  }

  /** Keeps the rows in this object (not the cache) before the file is deleted. */
  pin(): void {
    this.#pinned ??= this.#load();
  }

  /**
   * The token states, decoded from the segment's codes at first use; their bytes are then
   * counted in the cache's entry (a view gathered from several segments decodes its rows from
   * the codes and never makes them whole).
   */
  #vectors(): Float32Array {
    const rows = this.#load();
    const vectors = rows.encoded.tokenVectors;
    if (
      !counted.has(rows) &&
      rows.codes !== undefined &&
      vectors.buffer !== rows.codes.codes.buffer
    ) {
      counted.add(rows);
      if (this.#pinned !== rows) this.cache.grow(this, rows, vectors.byteLength);
    }
    return vectors;
  }

  #load(): SegmentRows {
    if (this.#pinned !== undefined) return this.#pinned;
    const hit = this.cache.get<SegmentRows>(this);
    if (hit !== undefined) return hit;
    let bytes: Buffer;
    try {
      bytes = readFileSync(this.path);
    } catch (error) {
      const why =
        (error as NodeJS.ErrnoException).code === 'ENOENT' ? 'the file is missing' : String(error);
      throw segmentCorrupt(this.path, why);
    }
    const rows = decodeSegmentBytes(bytes, this.path, this.expected);
    // The file's bytes; the token states decoded from its codes are added at first use.
    this.cache.set(this, rows, bytes.byteLength);
    return rows;
  }
}
