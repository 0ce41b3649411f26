import { emptyEncoded } from './encoded.js';
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

/** Copies `refs` into one contiguous {@link SegmentRows} of `bank` (vectors, offsets rebased). */
export function gatherRows(refs: readonly RowRef[], bank: string, dim: number): SegmentRows {
  const n = refs.length;
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
  let tok = 0;
  for (let i = 0; i < n; i++) {
    const { source, row, seq } = refs[i]!;
    const s = source.encoded;
    ids[i] = source.ids[row]!;
    texts[i] = source.texts[row]!;
    metas[i] = source.metas[row];
    seqs[i] = seq;
    e.pooled.set(s.pooled.subarray(row * dim, (row + 1) * dim), i * dim);
    e.truncated[i] = s.truncated[row]!;
    const from = s.tokenOffsets[row]!;
    const to = s.tokenOffsets[row + 1]!;
    e.tokenVectors.set(s.tokenVectors.subarray(from * dim, to * dim), tok * dim);
    e.tokenIds.set(s.tokenIds.subarray(from, to), tok);
    e.tokenPositions.set(s.tokenPositions.subarray(from, to), tok);
    tok += to - from;
    e.tokenOffsets[i + 1] = tok;
  }
  return { bank, ids, texts, metas, seqs, encoded: e };
}
