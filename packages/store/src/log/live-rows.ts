import { decodeTokens } from '@bfe/index';
import { emptyEncoded } from './encoded.js';
import { FileRows } from './file-rows.js';
import type { SegmentRows } from './segment.js';

/** One row of one source. */
export interface RowRef {
  readonly source: SegmentRows;
  readonly row: number;
  readonly seq: number;
}

/**
 * The live rows among `sources` (one bank's segments and memtable batches): for each id the row
 * with the highest write sequence, unless a tombstone with a higher sequence deleted it. In
 * write order (ascending sequence), so a bank's rows keep a stable order across flushes and
 * compactions.
 */
export function liveRows(
  sources: readonly SegmentRows[],
  tombstones: ReadonlyMap<string, number> | undefined,
): RowRef[] {
  const latest = new Map<string, RowRef>();
  for (const source of sources) {
    const { ids, seqs } = source;
    for (let row = 0; row < ids.length; row++) {
      const seq = seqs[row]!;
      const id = ids[row]!;
      const seen = latest.get(id);
      if (seen === undefined || seen.seq < seq) latest.set(id, { source, row, seq });
    }
  }
  const out: RowRef[] = [];
  for (const [id, ref] of latest) {
    const deletedAt = tombstones?.get(id);
    if (deletedAt === undefined || deletedAt < ref.seq) out.push(ref);
  }
  return out.sort((a, b) => a.seq - b.seq);
}

/**
 * `refs` as one contiguous {@link SegmentRows} of `bank` (vectors, offsets rebased): the
 * source's own arrays when `refs` are every row of one source in order, a copy otherwise.
 */
export function gatherRows(refs: readonly RowRef[], bank: string, dim: number): SegmentRows {
  const n = refs.length;
  const only = soleSource(refs);
  if (only !== undefined) {
    const whole = readRows(only);
    return { ...whole, bank, encoded: whole.encoded };
  }
  let tokens = 0;
  for (const r of refs) {
    const o = r.source.encoded.tokenOffsets;
    tokens += o[r.row + 1]! - o[r.row]!;
  }
  const e = emptyEncoded(n, tokens, dim);
  const ids: string[] = new Array<string>(n);
  const texts: string[] = new Array<string>(n);
  const metas: SegmentRows['metas'][number][] = new Array<SegmentRows['metas'][number]>(n);
  const seqs = new Float64Array(n);
  const whole = rowReader();
  let tok = 0;
  for (let i = 0; i < n; i++) {
    const { source, row, seq } = refs[i]!;
    const w = whole(source);
    ids[i] = w.ids[row]!;
    texts[i] = w.texts[row]!;
    metas[i] = w.metas[row];
    seqs[i] = seq;
    tok += copyRow(w, row, dim, e, i, tok);
    e.tokenOffsets[i + 1] = tok;
  }
  return { bank, ids, texts, metas, seqs, encoded: e };
}

/** Where {@link copyRow} writes: a view's arrays (and the rows' truncation flags, if kept). */
export interface RowTarget {
  readonly pooled: Float32Array;
  readonly tokenVectors: Float32Array;
  readonly tokenIds: Int32Array;
  readonly tokenPositions: Int32Array;
  readonly truncated?: Uint8Array;
}

/**
 * Copies row `row` of the read rows `w` to row `i` of `e`, its tokens from token `tok` on;
 * returns the tokens copied. A segment's codes are decoded straight into `e`: its float32
 * states are never made whole.
 */
export function copyRow(
  w: SegmentRows,
  row: number,
  dim: number,
  e: RowTarget,
  i: number,
  tok: number,
): number {
  const s = w.encoded;
  e.pooled.set(s.pooled.subarray(row * dim, (row + 1) * dim), i * dim);
  if (e.truncated !== undefined) e.truncated[i] = s.truncated[row]!;
  const from = s.tokenOffsets[row]!;
  const to = s.tokenOffsets[row + 1]!;
  rowTokensInto(w, row, dim, e.tokenVectors, tok);
  e.tokenIds.set(s.tokenIds.subarray(from, to), tok);
  e.tokenPositions.set(s.tokenPositions.subarray(from, to), tok);
  return to - from;
}

/**
 * Writes row `row`'s token states of the read rows `w` into `into` from token `at` (decoded from
 * the segment's codes when it has them: its float32 states are never made whole); returns the
 * tokens written.
 */
export function rowTokensInto(
  w: SegmentRows,
  row: number,
  dim: number,
  into: Float32Array,
  at: number,
): number {
  const s = w.encoded;
  const from = s.tokenOffsets[row]!;
  const to = s.tokenOffsets[row + 1]!;
  const out = into.subarray(at * dim, (at + to - from) * dim);
  const codes = w.codes;
  if (codes === undefined) out.set(s.tokenVectors.subarray(from * dim, to * dim));
  else {
    const model = codes.models[codes.blocks[row]!];
    if (model === undefined) throw new Error(`row ${row} names codec block ${codes.blocks[row]}`);
    decodeTokens(model, codes.codes, from, to, out);
  }
  return to - from;
}

/** The source `refs` are every row of, in order, if they are. */
export function soleSource(refs: readonly RowRef[]): SegmentRows | undefined {
  const only = refs[0]?.source;
  if (only === undefined || only.ids.length !== refs.length) return undefined;
  return refs.every((r, i) => r.source === only && r.row === i) ? only : undefined;
}

/** A source's rows as read (a segment's read from its file on first use). */
export function readRows(source: SegmentRows): SegmentRows {
  return source instanceof FileRows ? source.rows() : source;
}

/** {@link readRows}, each source read once per reader (a segment's from its file on first use). */
export function rowReader(): (source: SegmentRows) => SegmentRows {
  const wholes = new Map<SegmentRows, SegmentRows>();
  return (source) => {
    let w = wholes.get(source);
    if (w === undefined) {
      w = readRows(source);
      wholes.set(source, w);
    }
    return w;
  };
}
