import { copyRow, readRows, type RowRef } from './live-rows.js';
import type { SegmentRows } from './segment.js';
import type { BankView } from '../types.js';

/**
 * Arrays with room to grow, shared by views of one bank made one from the other by appends:
 * each view reads its own prefix of them, so writing past the last view's rows changes no view.
 */
interface Backing {
  pooled: Float32Array;
  tokenOffsets: Int32Array;
  tokenVectors: Float32Array;
  tokenIds: Int32Array;
  tokenPositions: Int32Array;
  seqs: Float64Array;
  /** Rows and tokens written (those of the last view made on it). */
  rows: number;
  tokens: number;
  /** Row of each id written. */
  readonly rowOf: Map<string, number>;
}

const backingOf = new WeakMap<BankView, Backing>();

/** Room a backing is made with: what it must hold, and half as much again. */
const GROWTH = 1.5;

/**
 * `old` with the rows of `extra` (sources written after `old`'s, under the same tombstones)
 * appended, or undefined when they do not simply append: an id of `old` written again (an
 * update) or written twice in `extra`, or `old` without write sequences. The result equals the
 * view built from every source (same rows in the same order, same values) and is made in time
 * proportional to the appended rows: written into the spare room of `old`'s arrays when `old`
 * is the last view made on them, else into new arrays with room to grow.
 */
export function grownView(
  old: BankView,
  extra: readonly SegmentRows[],
  stones: ReadonlyMap<string, number> | undefined,
  dim: number,
): BankView | undefined {
  const seqs = old.seqs;
  if (seqs === undefined) return undefined;
  const oldRows = old.ids.length;
  const oldTokens = old.tokenOffsets[oldRows]!;
  let b = backingOf.get(old);
  const tip = b !== undefined && b.rows === oldRows && b.tokens === oldTokens;
  const inOld = (id: string): boolean =>
    b !== undefined ? (b.rowOf.get(id) ?? oldRows) < oldRows : old.ids.includes(id);
  const refs: RowRef[] = [];
  const seen = new Set<string>();
  let tokens = 0;
  for (const source of extra) {
    for (let row = 0; row < source.ids.length; row++) {
      const id = source.ids[row]!;
      if (seen.has(id) || inOld(id)) return undefined;
      seen.add(id);
      const seq = source.seqs[row]!;
      const deletedAt = stones?.get(id);
      if (deletedAt !== undefined && deletedAt >= seq) continue;
      refs.push({ source, row, seq });
      const o = source.encoded.tokenOffsets;
      tokens += o[row + 1]! - o[row]!;
    }
  }
  refs.sort((x, y) => x.seq - y.seq);
  const rows = oldRows + refs.length;
  const allTokens = oldTokens + tokens;
  if (b === undefined || !tip || b.seqs.length < rows || b.tokenIds.length < allTokens) {
    // The same branch keeps its ids' rows; another view's arrays start their own.
    const rowOf = tip ? b!.rowOf : new Map(old.ids.map((id, i) => [id, i] as const));
    b = backing(old, rowOf, Math.ceil(rows * GROWTH), Math.ceil(allTokens * GROWTH));
  }
  const into: Backing = b;
  const ids = [...old.ids];
  const texts = [...old.texts];
  const metas = [...old.metas];
  let version = old.version ?? -1;
  let tok = oldTokens;
  for (let k = 0; k < refs.length; k++) {
    const { source, row, seq } = refs[k]!;
    const w = readRows(source);
    const i = oldRows + k;
    ids.push(w.ids[row]!);
    texts.push(w.texts[row]!);
    metas.push(w.metas[row]);
    into.seqs[i] = seq;
    into.rowOf.set(w.ids[row]!, i);
    version = Math.max(version, seq);
    tok += copyRow(w, row, dim, into, i, tok);
    into.tokenOffsets[i + 1] = tok;
  }
  into.rows = rows;
  into.tokens = tok;
  const view: BankView = Object.freeze({
    bank: old.bank,
    model: old.model,
    dim,
    ids: Object.freeze(ids),
    texts: Object.freeze(texts),
    metas: Object.freeze(metas),
    pooled: into.pooled.subarray(0, rows * dim),
    tokenOffsets: into.tokenOffsets.subarray(0, rows + 1),
    tokenVectors: into.tokenVectors.subarray(0, tok * dim),
    tokenIds: into.tokenIds.subarray(0, tok),
    tokenPositions: into.tokenPositions.subarray(0, tok),
    seqs: into.seqs.subarray(0, rows),
    version,
  });
  backingOf.set(view, into);
  return view;
}

/** Bytes of a grown view's arrays beyond its own rows (room for later appends), else 0. */
export function spareBytes(view: BankView): number {
  const b = backingOf.get(view);
  if (b === undefined) return 0;
  let all = 0;
  for (const a of [b.pooled, b.tokenOffsets, b.tokenVectors, b.tokenIds, b.tokenPositions, b.seqs])
    all += a.byteLength;
  const own = [
    view.pooled,
    view.tokenOffsets,
    view.tokenVectors,
    view.tokenIds,
    view.tokenPositions,
    view.seqs!,
  ].reduce((sum, a) => sum + a.byteLength, 0);
  return all - own;
}

/** New arrays of room `rowRoom` × `tokenRoom` holding `old`'s rows and tokens. */
function backing(
  old: BankView,
  rowOf: Map<string, number>,
  rowRoom: number,
  tokenRoom: number,
): Backing {
  const dim = old.dim;
  const rows = old.ids.length;
  const tokens = old.tokenOffsets[rows]!;
  const b: Backing = {
    pooled: new Float32Array(rowRoom * dim),
    tokenOffsets: new Int32Array(rowRoom + 1),
    tokenVectors: new Float32Array(tokenRoom * dim),
    tokenIds: new Int32Array(tokenRoom),
    tokenPositions: new Int32Array(tokenRoom),
    seqs: new Float64Array(rowRoom),
    rows,
    tokens,
    rowOf,
  };
  b.pooled.set(old.pooled.subarray(0, rows * dim));
  b.tokenOffsets.set(old.tokenOffsets.subarray(0, rows + 1));
  b.tokenVectors.set(old.tokenVectors.subarray(0, tokens * dim));
  b.tokenIds.set(old.tokenIds.subarray(0, tokens));
  b.tokenPositions.set(old.tokenPositions.subarray(0, tokens));
  b.seqs.set(old.seqs!.subarray(0, rows));
  return b;
}
