import { readRows, rowReader, rowTokensInto, soleSource, type RowRef } from './live-rows.js';
import { PieceTokens } from '../view-tokens.js';
import type { BankView } from '../types.js';

/**
 * A run of at least this many tokens of one source becomes a piece of its own (a view into the
 * source's states); shorter runs are gathered into a new piece, so a view has few pieces
 * (a scan reads piece by piece) and copies only what is short.
 */
export const MIN_PIECE_TOKENS = 4096;

/** A bank view's arrays before it is made ({@link makeView}); token states as pieces. */
export interface ViewParts {
  readonly bank: string;
  readonly dim: number;
  readonly ids: readonly string[];
  readonly texts: readonly string[];
  readonly metas: BankView['metas'];
  readonly seqs: Float64Array;
  readonly pooled: Float32Array;
  readonly tokenOffsets: Int32Array;
  readonly tokenIds: Int32Array;
  readonly tokenPositions: Int32Array;
  readonly pieces: readonly Float32Array[];
  /** Which pieces were made for the view (gathered), not views into a source's states. */
  readonly made?: readonly boolean[];
}

/**
 * `refs` (live rows in write order) as a view's parts: the source's own arrays when `refs` are
 * every row of one source in order; otherwise the per-row arrays are gathered and the token
 * states are pieces — each long run of one source's consecutive rows a view into that source's
 * states (a segment's decoded at first use and counted by the row cache), short runs decoded
 * from their codes into a gathered piece. No contiguous copy of the bank's states is made.
 */
export function gatherView(refs: readonly RowRef[], bank: string, dim: number): ViewParts {
  const n = refs.length;
  const only = soleSource(refs);
  if (only !== undefined) {
    const w = readRows(only);
    const e = w.encoded;
    const tokens = e.tokenOffsets[n]!;
    return {
      bank,
      dim,
      ids: w.ids,
      texts: w.texts,
      metas: w.metas,
      seqs: w.seqs,
      pooled: e.pooled,
      tokenOffsets: e.tokenOffsets,
      tokenIds: e.tokenIds,
      tokenPositions: e.tokenPositions,
      // Through the source, so a segment's cache entry counts its decoded states.
      pieces: tokens > 0 ? [only.encoded.tokenVectors.subarray(0, tokens * dim)] : [],
      made: [false],
    };
  }
  let tokens = 0;
  for (const r of refs) {
    const o = r.source.encoded.tokenOffsets;
    tokens += o[r.row + 1]! - o[r.row]!;
  }
  const ids = new Array<string>(n);
  const texts = new Array<string>(n);
  const metas = new Array<BankView['metas'][number]>(n);
  const seqs = new Float64Array(n);
  const pooled = new Float32Array(n * dim);
  const tokenOffsets = new Int32Array(n + 1);
  const tokenIds = new Int32Array(tokens);
  const tokenPositions = new Int32Array(tokens);
  const pieces: Float32Array[] = [];
  const made: boolean[] = [];
  const whole = rowReader();
  // Short runs waiting to be gathered into one piece: [first ref, end ref).
  let pending: [number, number][] = [];
  let pendingTokens = 0;
  const gather = (): void => {
    if (pendingTokens === 0) return;
    const piece = new Float32Array(pendingTokens * dim);
    let at = 0;
    for (const [a, b] of pending) {
      for (let i = a; i < b; i++)
        at += rowTokensInto(whole(refs[i]!.source), refs[i]!.row, dim, piece, at);
    }
    pieces.push(piece);
    made.push(true);
    pending = [];
    pendingTokens = 0;
  };
  let tok = 0;
  for (let i = 0; i < n;) {
    const source = refs[i]!.source;
    let j = i + 1;
    while (j < n && refs[j]!.source === source && refs[j]!.row === refs[j - 1]!.row + 1) j++;
    const w = whole(source);
    const e = w.encoded;
    const o = e.tokenOffsets;
    const first = refs[i]!.row;
    const runFrom = o[first]!;
    for (let k = i; k < j; k++) {
      const { row, seq } = refs[k]!;
      ids[k] = w.ids[row]!;
      texts[k] = w.texts[row]!;
      metas[k] = w.metas[row];
      seqs[k] = seq;
      pooled.set(e.pooled.subarray(row * dim, (row + 1) * dim), k * dim);
      const from = o[row]!;
      const to = o[row + 1]!;
      tokenIds.set(e.tokenIds.subarray(from, to), tok);
      tokenPositions.set(e.tokenPositions.subarray(from, to), tok);
      tok += to - from;
      tokenOffsets[k + 1] = tok;
    }
    const runTo = o[refs[j - 1]!.row + 1]!;
    if (runTo - runFrom >= MIN_PIECE_TOKENS) {
      gather();
      pieces.push(source.encoded.tokenVectors.subarray(runFrom * dim, runTo * dim));
      made.push(false);
    } else if (runTo > runFrom) {
      pending.push([i, j]);
      pendingTokens += runTo - runFrom;
    }
    i = j;
  }
  gather();
  return {
    bank,
    dim,
    ids,
    texts,
    metas,
    seqs,
    pooled,
    tokenOffsets,
    tokenIds,
    tokenPositions,
    pieces,
    made,
  };
}

/**
 * The frozen {@link BankView} of `p`: its token states as {@link PieceTokens}
 * (`view.tokens`); `view.tokenVectors` is one contiguous array made at first use (the piece
 * itself for a one-piece view) for readers that need one.
 */
export function makeView(p: ViewParts, model: string, version: number): BankView {
  const tokens = new PieceTokens(p.pieces, p.dim, p.made);
  let flat: Float32Array | undefined;
  return Object.freeze({
    bank: p.bank,
    model,
    dim: p.dim,
    ids: Object.freeze(p.ids),
    texts: Object.freeze(p.texts),
    metas: Object.freeze(p.metas),
    pooled: p.pooled,
    tokenOffsets: p.tokenOffsets,
    tokenIds: p.tokenIds,
    tokenPositions: p.tokenPositions,
    seqs: p.seqs,
    version,
    tokens,
    get tokenVectors(): Float32Array {
      return (flat ??= tokens.contiguous());
    },
  });
}

/**
 * Bytes a view holds or keeps alive: its arrays, texts and token pieces — all of them, or
 * (`made`) only the pieces it made itself, the others being counted where they live.
 */
export function viewBytes(v: BankView, pieces: 'all' | 'made' = 'all'): number {
  let text = 0;
  for (const t of v.texts) text += 2 * t.length;
  const states =
    v.tokens instanceof PieceTokens
      ? pieces === 'made'
        ? v.tokens.madeBytes
        : v.tokens.bytes
      : v.tokenVectors.byteLength;
  return (
    v.pooled.byteLength +
    states +
    v.tokenIds.byteLength +
    v.tokenPositions.byteLength +
    v.tokenOffsets.byteLength +
    text
  );
}

/**
 * `view` with `extra` properties (e.g. the store's lexicon), its accessors kept as accessors
 * (a spread would make the contiguous `tokenVectors` copy).
 */
export function viewWith(view: BankView, extra: Partial<BankView>): BankView {
  const d: PropertyDescriptorMap = Object.getOwnPropertyDescriptors(view);
  for (const [k, v] of Object.entries(extra))
    d[k] = { value: v, enumerable: true, writable: false, configurable: false };
  return Object.freeze(Object.defineProperties({}, d) as BankView);
}
