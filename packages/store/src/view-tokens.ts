import { dotsInto, flatTokenStore, type TokenStore } from '@bfe/index';
import type { BankView } from './types.js';

/**
 * A bank view's token states as pieces: runs of consecutive tokens, each a `Float32Array
 * [tokens × dim]` of its own — a run of a segment's decoded states or of a memtable batch (a
 * view into their arrays, not a copy), or short runs gathered together — so a view of a bank
 * spread over several segments is never one contiguous copy. A read inside one piece is a
 * zero-copy view; a read across pieces is a new array (never a shared scratch: searches of one
 * view may interleave). {@link pieceEnd} tells a chunked scan where a piece ends, so it reads
 * piece by piece. `dots` sums each token exactly as {@link flatTokenStore} does (float64, in
 * order of the dimension), so scores are bit-identical to the contiguous bank's.
 *
 * @example
 * const tokens = new PieceTokens([segmentRun, memtableRun], 384);
 * tokens.read(0, 10); // Float32Array [10 * 384], a view into the first piece
 */
export class PieceTokens implements TokenStore {
  readonly size: number;
  /** `[pieces + 1]`: piece `p` holds tokens `starts[p]..starts[p+1]-1`. */
  readonly starts: Float64Array;
  readonly #single: TokenStore | undefined;

  /**
   * @param pieces the runs, in token order
   * @param made which pieces the view made itself (gathered copies), not views into a
   *   segment's or a memtable batch's states (for {@link madeBytes})
   */
  constructor(
    readonly pieces: readonly Float32Array[],
    readonly dim: number,
    readonly made: readonly boolean[] = [],
  ) {
    const starts = new Float64Array(pieces.length + 1);
    for (let p = 0; p < pieces.length; p++) {
      const n = pieces[p]!.length / dim;
      if (!Number.isInteger(n)) throw new Error(`PieceTokens: piece ${p} is not rows of ${dim}`);
      starts[p + 1] = starts[p]! + n;
    }
    this.starts = starts;
    this.size = starts[pieces.length]!;
    this.#single = pieces.length === 1 ? flatTokenStore(pieces[0]!, dim) : undefined;
  }

  /** The piece holding token `t`. */
  #pieceOf(t: number): number {
    const starts = this.starts;
    let lo = 0;
    let hi = Math.max(0, this.pieces.length - 1);
    while (lo < hi) {
      const mid = (lo + hi + 1) >>> 1;
      if (starts[mid]! <= t) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  }

  /** The end (exclusive) of the piece holding token `t`: reads up to it are zero-copy views. */
  pieceEnd(t: number): number {
    return this.pieces.length <= 1 ? this.size : this.starts[this.#pieceOf(t) + 1]!;
  }

  read(start: number, end: number): Float32Array {
    const dim = this.dim;
    if (end <= start) return new Float32Array(0);
    const p = this.#pieceOf(start);
    const from = this.starts[p]!;
    if (end <= this.starts[p + 1]!) {
      return this.pieces[p]!.subarray((start - from) * dim, (end - from) * dim);
    }
    const out = new Float32Array((end - start) * dim);
    for (let q = p, t = start; t < end; q++) {
      const to = Math.min(end, this.starts[q + 1]!);
      const at = this.starts[q]!;
      out.set(this.pieces[q]!.subarray((t - at) * dim, (to - at) * dim), (t - start) * dim);
      t = to;
    }
    return out;
  }

  dots(
    tokens: Int32Array,
    count: number,
    query: Float32Array,
    at: number,
    out: Float64Array,
  ): void {
    if (this.#single !== undefined) {
      this.#single.dots(tokens, count, query, at, out);
      return;
    }
    const dim = this.dim;
    const sums = new Float64Array(count);
    const offsets = new Int32Array(count);
    // Consecutive asked tokens of one piece are summed in one call (each token's sum is its
    // own: the grouping changes no bit).
    for (let h = 0; h < count;) {
      const p = this.#pieceOf(tokens[h]!);
      const from = this.starts[p]!;
      const to = this.starts[p + 1]!;
      let e = h;
      while (e < count && tokens[e]! >= from && tokens[e]! < to) e++;
      const n = e - h;
      for (let j = 0; j < n; j++) offsets[j] = (tokens[h + j]! - from) * dim;
      dotsInto(this.pieces[p]!, offsets, n, query, at, sums.subarray(h, e), dim);
      h = e;
    }
    out.set(sums.subarray(0, count));
  }

  /** The tokens as one array: the piece itself when there is one, else a new copy. */
  contiguous(): Float32Array {
    return this.#single !== undefined ? this.pieces[0]! : this.read(0, this.size);
  }

  /** Bytes of the pieces the view made itself (copies gathered from short runs). */
  get madeBytes(): number {
    let b = 0;
    for (let p = 0; p < this.pieces.length; p++) if (this.made[p]) b += this.pieces[p]!.byteLength;
    return b;
  }

  /** Bytes of the pieces' floats. */
  get bytes(): number {
    let b = 0;
    for (const p of this.pieces) b += p.byteLength;
    return b;
  }
}

const flatStores = new WeakMap<BankView, TokenStore>();

/**
 * A view's token states as a {@link TokenStore}: a store's views carry their pieces
 * ({@link BankView.tokens}); a view made elsewhere (one contiguous `tokenVectors`) is wrapped.
 */
export function viewTokens(view: BankView): TokenStore {
  if (view.tokens !== undefined) return view.tokens;
  let s = flatStores.get(view);
  if (s === undefined) {
    s = flatTokenStore(view.tokenVectors, view.dim);
    flatStores.set(view, s);
  }
  return s;
}

/**
 * A view's token states as one contiguous array (what an onnxruntime session packs): the piece
 * itself for a one-piece view, a new copy otherwise (not kept by the view).
 */
export function contiguousTokens(view: BankView): Float32Array {
  const t = view.tokens;
  if (t === undefined) return view.tokenVectors;
  if (t instanceof PieceTokens) return t.contiguous();
  return t.read(0, t.size);
}
