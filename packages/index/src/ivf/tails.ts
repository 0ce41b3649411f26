// The clustered index's appended tokens: per cluster a tail list of code blocks beside the
// contiguous base layout, in segments of the scanner's shared memory, until a compaction lays
// them into the base. An append writes only its own tokens' codes and a few list entries.
import { IVF_BLOCK, codeBytes, type ResidualBits } from './layout.js';
import type { WasmScanner } from './wasm-scan.js';

/** Tail blocks a segment of shared memory holds (4,096 tokens; ≤ 768 KiB at 384 dims, 4 bits). */
const SEGMENT_BLOCKS = 256;

/** The most blocks a cluster's new extent takes ahead of its need (its tail doubles up to it). */
const EXTENT_BLOCKS = 64;

/**
 * What a scan reads of the tails (a search's snapshot: appends wait for searches, and replace
 * a grown array rather than write past its end, so a job's arrays stay valid while it runs).
 * Tail place `16 · g + i` is slot `i` of tail block `g`; block `g` lies in segment
 * `⌊g / segmentBlocks⌋` at byte `segments[s] + (g mod segmentBlocks) · 16 · bytes`, laid out as
 * the base codes are (byte `j` of its 16 tokens side by side). Every array is on a
 * `SharedArrayBuffer`, so scan threads see it without a copy.
 */
export interface TailView {
  /** `[clusters]` the cluster's first tail block (−1: none). */
  readonly first: Int32Array;
  /** `[clusters]` tokens in the cluster's tail (only its last block is partly filled). */
  readonly count: Int32Array;
  /** `[blocks]` the next tail block of the same cluster (−1: the last). */
  readonly next: Int32Array;
  /** `[blocks · 16]` the bank token and memory row at each tail place. */
  readonly placeToken: Int32Array;
  readonly placeMemory: Int32Array;
  /** `[segments]` each segment's byte address in the shared memory. */
  readonly segments: Float64Array;
  readonly segmentBlocks: number;
}

const shared = (length: number): Int32Array =>
  new Int32Array(new SharedArrayBuffer(4 * Math.max(1, length)));

/** `a` in a shared array of at least `length` (doubled), its tail filled with `fill`. */
function grown(a: Int32Array, length: number, fill: number): Int32Array {
  if (a.length >= length) return a;
  const out = shared(Math.max(length, 2 * a.length));
  out.set(a);
  out.fill(fill, a.length);
  return out;
}

/**
 * The tail lists of one index's clusters. {@link reserve} hands out tail places: the rest of a
 * cluster's last block, then the blocks after it in the cluster's extent, then a new extent of
 * consecutive blocks as large as the cluster's tail so far (up to {@link EXTENT_BLOCKS}), so a
 * tail grown by many small appends is a few runs the scan reads in one call each, not a block a
 * call. The caller writes each token's code at {@link codeAt} and its ids with {@link place}.
 */
export class TailLists {
  readonly #scanner: WasmScanner;
  readonly #bytes: number;
  readonly #segmentBytes: number;
  readonly #first: Int32Array;
  readonly #last: Int32Array;
  /** `[clusters]` one past the cluster's extent: its blocks `last + 1 .. end − 1` are unused. */
  readonly #end: Int32Array;
  /** `[clusters]` blocks the cluster's extents hold. */
  readonly #owned: Int32Array;
  readonly #count: Int32Array;
  #next: Int32Array;
  #placeToken: Int32Array;
  #placeMemory: Int32Array;
  #segments = new Float64Array(new SharedArrayBuffer(0));
  #blocks = 0;
  #tokens = 0;

  constructor(scanner: WasmScanner, clusters: number, dim: number, bits: ResidualBits) {
    this.#scanner = scanner;
    this.#bytes = codeBytes(dim, bits);
    this.#segmentBytes = SEGMENT_BLOCKS * IVF_BLOCK * this.#bytes;
    this.#first = shared(clusters).fill(-1);
    this.#last = shared(clusters).fill(-1);
    this.#end = new Int32Array(clusters);
    this.#owned = new Int32Array(clusters);
    this.#count = shared(clusters);
    this.#next = shared(64).fill(-1);
    this.#placeToken = shared(64 * IVF_BLOCK).fill(-1);
    this.#placeMemory = shared(64 * IVF_BLOCK).fill(-1);
  }

  /** Tokens in the tails. */
  get tokens(): number {
    return this.#tokens;
  }

  /** The arrays a search's scan reads now. */
  view(): TailView {
    return {
      first: this.#first,
      count: this.#count,
      next: this.#next,
      placeToken: this.#placeToken,
      placeMemory: this.#placeMemory,
      segments: this.#segments,
      segmentBlocks: SEGMENT_BLOCKS,
    };
  }

  /** The tail places of cluster `c` in list order (ascending bank token: appends come last). */
  *places(c: number): Generator<number> {
    let left = this.#count[c]!;
    for (let g = this.#first[c]!; g >= 0 && left > 0; g = this.#next[g]!) {
      const n = Math.min(IVF_BLOCK, left);
      for (let i = 0; i < n; i++) yield g * IVF_BLOCK + i;
      left -= n;
    }
  }

  /** The bank token at tail place `p`. */
  tokenAt(p: number): number {
    return this.#placeToken[p]!;
  }

  /**
   * `n` new tail places of cluster `c` into `out[at..at+n)`: the rest of its last block, then
   * the unused blocks of its extent, then new extents (in new shared memory segments as needed).
   */
  reserve(c: number, n: number, out: Int32Array, at: number): void {
    let w = at;
    const end = at + n;
    let last = this.#last[c]!;
    const used = this.#count[c]! % IVF_BLOCK;
    if (used > 0) {
      const fill = Math.min(n, IVF_BLOCK - used);
      for (let i = 0; i < fill; i++) out[w++] = last * IVF_BLOCK + used + i;
    }
    while (w < end) {
      let g = last + 1;
      if (last < 0 || g >= this.#end[c]!) {
        const need = Math.ceil((end - w) / IVF_BLOCK);
        const size = Math.max(need, Math.min(EXTENT_BLOCKS, this.#owned[c]!));
        g = this.#allocate(size);
        this.#end[c] = g + size;
        this.#owned[c]! += size;
      }
      if (last < 0) this.#first[c] = g;
      else this.#next[last] = g;
      this.#next[g] = -1;
      last = g;
      for (let p = g * IVF_BLOCK; w < end && p < (g + 1) * IVF_BLOCK; p++) out[w++] = p;
    }
    this.#last[c] = last;
    this.#count[c]! += n;
    this.#tokens += n;
  }

  /** Records the bank token and memory row of tail place `p`. */
  place(p: number, token: number, memory: number): void {
    this.#placeToken[p] = token;
    this.#placeMemory[p] = memory;
  }

  /** The shared memory's byte of code byte 0 of tail place `p` (byte `j` at `+ 16 · j`). */
  codeAt(p: number): number {
    const g = p >> 4;
    const s = Math.floor(g / SEGMENT_BLOCKS);
    return this.#segments[s]! + (g % SEGMENT_BLOCKS) * IVF_BLOCK * this.#bytes + (p & 15);
  }

  /** `blocks` new consecutive block ids (their segments allocated); returns the first. */
  #allocate(blocks: number): number {
    const g0 = this.#blocks;
    const end = g0 + blocks;
    this.#next = grown(this.#next, end, -1);
    this.#placeToken = grown(this.#placeToken, end * IVF_BLOCK, -1);
    this.#placeMemory = grown(this.#placeMemory, end * IVF_BLOCK, -1);
    const need = Math.ceil(end / SEGMENT_BLOCKS);
    if (need > this.#segments.length) {
      const segments = new Float64Array(new SharedArrayBuffer(8 * need));
      segments.set(this.#segments);
      for (let s = this.#segments.length; s < need; s++) {
        segments[s] = this.#scanner.grow(this.#segmentBytes);
      }
      this.#segments = segments;
    }
    this.#blocks = end;
    return g0;
  }
}
