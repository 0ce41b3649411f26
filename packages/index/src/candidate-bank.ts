import { tieOrder } from './ties.js';
import type { BankChunkSource } from './top-k.js';
import type { TokenStore } from './token-store.js';
import { lastAtMost } from './sorted.js';

/**
 * The tokens of a query's candidate memories, seen as one virtual bank: candidates in
 * ascending memory row order, each contributing its token range `tokenOffsets[m]..[m+1]`.
 * Virtual token `v` therefore sorts exactly like its bank token index, so the top-k tie rule
 * ("smaller bank token index first") holds for the bank as a whole, whatever order the caller
 * listed the candidates in. Runs of consecutive memories are read as one range of the store (a
 * zero-copy view for an in-memory store); a chunk that spans a gap is gathered into a scratch
 * buffer.
 */
export class CandidateBank implements BankChunkSource {
  readonly dim: number;
  readonly size: number;
  /** Candidate memory rows, ascending. */
  readonly rows: Int32Array;
  /** `[rows.length + 1]`: candidate `s` owns virtual tokens `start[s]..start[s+1]-1`. */
  readonly start: Int32Array;
  readonly #store: TokenStore;
  readonly #offsets: ArrayLike<number>;
  /** Maximal runs of contiguous bank tokens: virtual start, and bank token start. */
  readonly #runVirtual: Int32Array;
  readonly #runBank: Int32Array;
  #scratch = new Float32Array(0);
  #tokens = new Int32Array(0);

  /**
   * @param store the memories' token vectors `[tokens * dim]`
   * @param offsets `[memories + 1]` token offsets
   * @param sortedRows distinct candidate memory rows in ascending order (checked by the caller)
   */
  constructor(store: TokenStore, offsets: ArrayLike<number>, sortedRows: Int32Array) {
    this.dim = store.dim;
    this.rows = sortedRows;
    this.#store = store;
    this.#offsets = offsets;
    const m = sortedRows.length;
    const start = new Int32Array(m + 1);
    const runVirtual: number[] = [];
    const runBank: number[] = [];
    let lastEnd = -1;
    for (let s = 0; s < m; s++) {
      const row = sortedRows[s]!;
      const a = offsets[row]!;
      const b = offsets[row + 1]!;
      start[s + 1] = start[s]! + (b - a);
      if (b > a && a !== lastEnd) {
        runVirtual.push(start[s]!);
        runBank.push(a);
      }
      if (b > a) lastEnd = b;
    }
    runVirtual.push(start[m]!);
    this.start = start;
    this.size = start[m]!;
    this.#runVirtual = Int32Array.from(runVirtual);
    this.#runBank = Int32Array.from(runBank);
  }

  /** Candidate slot (index into {@link rows}) owning virtual token `v`. */
  slotOf(v: number): number {
    // Largest s with start[s] <= v; empty memories share a start with the next one, and the
    // last of such a tie is the one whose range is non-empty.
    return lastAtMost(this.start, v, this.start.length - 2);
  }

  /** Bank token index (into the memories' `tokenVectors` rows) of virtual token `v`. */
  bankToken(v: number, slot = this.slotOf(v)): number {
    return this.#offsets[this.rows[slot]!]! + (v - this.start[slot]!);
  }

  /**
   * Each virtual token's place when memories are in their tie order (`tieOrder(ids)`: a seeded
   * hash of each memory id) and a memory's tokens by position: `exactTopK`'s `tieOrder`, so
   * equal token scores rank by memory id hash, not by bank row. Undefined without ids.
   */
  tokenPlaces(ids: readonly string[] | undefined): Int32Array | undefined {
    if (ids === undefined) return undefined;
    const memoryRank = tieOrder(ids).rank;
    const m = this.rows.length;
    const slots = Int32Array.from({ length: m }, (_, s) => s).sort(
      (a, b) => memoryRank[this.rows[a]!]! - memoryRank[this.rows[b]!]!,
    );
    const places = new Int32Array(this.size);
    let next = 0;
    for (const s of slots) {
      for (let v = this.start[s]!; v < this.start[s + 1]!; v++) places[v] = next++;
    }
    return places;
  }

  dots(
    indices: Int32Array,
    from: number,
    count: number,
    query: Float32Array,
    at: number,
    out: Float64Array,
  ): void {
    if (this.#tokens.length < count)
      this.#tokens = new Int32Array(Math.max(count, 2 * this.#tokens.length));
    const tokens = this.#tokens;
    for (let h = 0; h < count; h++) tokens[h] = this.bankToken(indices[from + h]!);
    this.#store.dots(tokens, count, query, at, out);
  }

  /**
   * `end`, or the end of the store's piece holding virtual token `start` when that piece ends
   * sooner inside the same run of contiguous bank tokens (see {@link TokenStore.pieceEnd}).
   */
  chunkEnd(start: number, end: number): number {
    const store = this.#store;
    if (store.pieceEnd === undefined) return end;
    const run = this.#runOf(start);
    const at = this.#runBank[run]! + (start - this.#runVirtual[run]!);
    const cut = start + (store.pieceEnd(at) - at);
    return cut > start && cut < end && cut <= this.#runVirtual[run + 1]! ? cut : end;
  }

  read(start: number, end: number): Float32Array {
    const dim = this.dim;
    const rv = this.#runVirtual;
    const run = this.#runOf(start);
    if (end <= rv[run + 1]!) {
      const at = this.#runBank[run]! + (start - rv[run]!);
      return this.#store.read(at, at + end - start);
    }
    const need = (end - start) * dim;
    if (this.#scratch.length < need) this.#scratch = new Float32Array(need);
    const out = this.#scratch.subarray(0, need);
    let o = 0;
    this.forEachRun(start, end, (a, b) => {
      out.set(this.#store.read(a, b), o);
      o += (b - a) * dim;
    });
    return out;
  }

  /**
   * The bank token ranges `[a, b)` holding virtual tokens `start..end-1`, in order: what a
   * reader of another form of the tokens (a codec's codes) gathers for one chunk.
   */
  forEachRun(start: number, end: number, visit: (a: number, b: number) => void): void {
    const rv = this.#runVirtual;
    const rb = this.#runBank;
    let run = this.#runOf(start);
    let v = start;
    while (v < end) {
      const runEnd = Math.min(end, rv[run + 1]!);
      const at = rb[run]! + (v - rv[run]!);
      visit(at, at + runEnd - v);
      v = runEnd;
      run++;
    }
  }

  #runOf(v: number): number {
    const rv = this.#runVirtual;
    let lo = 0;
    let hi = rv.length - 2;
    while (lo < hi) {
      const mid = (lo + hi + 1) >>> 1;
      if (rv[mid]! <= v) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  }
}
