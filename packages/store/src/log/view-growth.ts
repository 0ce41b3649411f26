import { readRows, rowTokensInto, type RowRef } from './live-rows.js';
import type { SegmentRows } from './segment.js';
import { makeView } from './view-build.js';
import { PieceTokens } from '../view-tokens.js';
import type { BankView } from '../types.js';

/**
 * Arrays with room to grow, shared by views of one bank made one from the other by appends:
 * each view reads its own prefix of them, so writing past the last view's rows changes no view.
 * The token states are the pieces of the view the backing was made from (`base`, shared, never
 * copied) and a `tail` piece the appended rows' states are written to.
 */
interface Backing {
  pooled: Float32Array;
  tokenOffsets: Int32Array;
  readonly base: readonly Float32Array[];
  readonly baseMade: readonly boolean[];
  /** The first token held by `tail`. */
  readonly tailStart: number;
  tail: Float32Array;
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

/** Tokens a tail is made for when it must hold `tokens`: twice as many, at least 256. */
const tailRoom = (tokens: number): number => Math.max(256, 2 * tokens);

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
    // The same branch keeps its ids' rows and its base pieces; another view's arrays start
    // their own, its pieces their base.
    const rowOf = tip ? b!.rowOf : new Map(old.ids.map((id, i) => [id, i] as const));
    b = backing(old, tip ? b : undefined, rowOf, rows, allTokens);
  }
  const into: Backing = b;
  if (into.tail.length < (allTokens - into.tailStart) * dim) {
    // The tail alone is full: a larger one, the rows the views made on it hold copied (their
    // pieces keep the old array).
    const tail = new Float32Array(tailRoom(allTokens - into.tailStart) * dim);
    tail.set(into.tail.subarray(0, (oldTokens - into.tailStart) * dim));
    into.tail = tail;
  }
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
    into.pooled.set(w.encoded.pooled.subarray(row * dim, (row + 1) * dim), i * dim);
    const o = w.encoded.tokenOffsets;
    const from = o[row]!;
    const to = o[row + 1]!;
    into.tokenIds.set(w.encoded.tokenIds.subarray(from, to), tok);
    into.tokenPositions.set(w.encoded.tokenPositions.subarray(from, to), tok);
    rowTokensInto(w, row, dim, into.tail, tok - into.tailStart);
    tok += to - from;
    into.tokenOffsets[i + 1] = tok;
  }
  into.rows = rows;
  into.tokens = tok;
  const tailTokens = tok - into.tailStart;
  const view = makeView(
    {
      bank: old.bank,
      dim,
      ids,
      texts,
      metas,
      pooled: into.pooled.subarray(0, rows * dim),
      tokenOffsets: into.tokenOffsets.subarray(0, rows + 1),
      tokenIds: into.tokenIds.subarray(0, tok),
      tokenPositions: into.tokenPositions.subarray(0, tok),
      seqs: into.seqs.subarray(0, rows),
      pieces: tailTokens > 0 ? [...into.base, into.tail.subarray(0, tailTokens * dim)] : into.base,
      made: tailTokens > 0 ? [...into.baseMade, true] : into.baseMade,
    },
    old.model,
    version,
  );
  backingOf.set(view, into);
  return view;
}

/** A view's token pieces (one contiguous array for a view made elsewhere). */
function piecesOf(view: BankView): readonly Float32Array[] {
  if (view.tokens instanceof PieceTokens) return view.tokens.pieces;
  return view.tokenVectors.length > 0 ? [view.tokenVectors] : [];
}

/** Bytes of a grown view's arrays beyond its own rows (room for later appends), else 0. */
export function spareBytes(view: BankView): number {
  const b = backingOf.get(view);
  if (b === undefined) return 0;
  let all = 0;
  for (const a of [b.pooled, b.tokenOffsets, b.tail, b.tokenIds, b.tokenPositions, b.seqs])
    all += a.byteLength;
  const tail = (view.tokenOffsets[view.ids.length]! - b.tailStart) * view.dim * 4;
  const own = [
    view.pooled,
    view.tokenOffsets,
    view.tokenIds,
    view.tokenPositions,
    view.seqs!,
  ].reduce((sum, a) => sum + a.byteLength, 0);
  return all - own - tail;
}

/**
 * New arrays for `old`'s rows and tokens with room for `rows` × `tokens` and half as much again:
 * the tail of `from` (the backing `old` was grown on, when `old` is its last view) copied into a
 * larger tail, else `old`'s pieces as the base and an empty tail.
 */
function backing(
  old: BankView,
  from: Backing | undefined,
  rowOf: Map<string, number>,
  rows: number,
  tokens: number,
): Backing {
  const dim = old.dim;
  const oldRows = old.ids.length;
  const oldTokens = old.tokenOffsets[oldRows]!;
  const base = from?.base ?? piecesOf(old);
  const baseMade =
    from?.baseMade ?? (old.tokens instanceof PieceTokens ? old.tokens.made : base.map(() => true));
  const tailStart = from?.tailStart ?? oldTokens;
  const rowRoom = Math.ceil(rows * GROWTH);
  const tokenRoom = Math.ceil(tokens * GROWTH);
  const b: Backing = {
    pooled: new Float32Array(rowRoom * dim),
    tokenOffsets: new Int32Array(rowRoom + 1),
    base,
    baseMade,
    tailStart,
    tail: new Float32Array(tailRoom(tokens - tailStart) * dim),
    tokenIds: new Int32Array(tokenRoom),
    tokenPositions: new Int32Array(tokenRoom),
    seqs: new Float64Array(rowRoom),
    rows: oldRows,
    tokens: oldTokens,
    rowOf,
  };
  b.pooled.set(old.pooled.subarray(0, oldRows * dim));
  b.tokenOffsets.set(old.tokenOffsets.subarray(0, oldRows + 1));
  if (from !== undefined) b.tail.set(from.tail.subarray(0, (oldTokens - tailStart) * dim));
  b.tokenIds.set(old.tokenIds.subarray(0, oldTokens));
  b.tokenPositions.set(old.tokenPositions.subarray(0, oldTokens));
  b.seqs.set(old.seqs!.subarray(0, oldRows));
  return b;
}
