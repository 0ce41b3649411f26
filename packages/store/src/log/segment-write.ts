import { join } from 'node:path';
import { FileRows } from './file-rows.js';
import type { RowCache } from './row-cache.js';
import { writeSegment, type SegmentCodes, type SegmentRows } from './segment.js';
import type { StoreCodec } from './settings.js';
import { Segment } from './state.js';

/** Where and how a store writes its segments. */
export interface SegmentTarget {
  readonly dir: string;
  readonly model: string;
  readonly dim: number;
  readonly codec: StoreCodec;
  readonly cache: RowCache;
}

/**
 * Writes `rows` of `bank` as segment `file` (relative to the store directory) in the target's
 * codec, and returns the segment read back by parts: its rows leave memory and are read from
 * the file when a search needs them, decoded from the codec as after a reopen. `coded`: the
 * codes to keep (a compaction's copy of its inputs'); without it the rows are encoded now.
 */
export async function writeBankSegment(
  at: SegmentTarget,
  file: string,
  bank: string,
  rows: SegmentRows,
  coded?: SegmentCodes,
): Promise<Segment> {
  const path = join(at.dir, file);
  const facts = await writeSegment(path, rows, at.model, at.codec, coded);
  const e = rows.encoded;
  const entry = { file, bank, rows: rows.ids.length, tokens: e.tokenOffsets[e.count]!, ...facts };
  const keys = {
    ids: [...rows.ids],
    seqs: rows.seqs.slice(),
    tokenOffsets: e.tokenOffsets.slice(0, e.count + 1),
  };
  const expected = { ...entry, model: at.model, dim: at.dim };
  return new Segment(entry, path, new FileRows(bank, path, expected, keys, at.cache));
}
