// The clustered index's codes read by position: an `ivf.bin` opened with `IvfTokenIndex.open`
// keeps its centroids, offsets and ids resident and leaves the codes in the file; each scan
// thread reads a probed cluster's blocks into a small cache of its own in the shared memory
// (`pread` into the bytes the scan reads; the OS page cache does what a mapping would).
import { closeSync, openSync, readSync } from 'node:fs';
import { IVF_BLOCK } from './layout.js';
import { CHUNK_BLOCKS, type ScanLane } from './wasm-scan.js';

/** Each scan thread's cache of code blocks when the options leave it out (4 MiB). */
export const DEFAULT_CACHE_BYTES = 4 << 20;

/** Where the codes are in the file and how a lane's cache is cut ({@link pagedCodes}). */
export interface PagedCodes {
  /** The file's byte offset of the codes (blocked layout) and their length. */
  readonly fileAt: number;
  readonly codesLength: number;
  /** Blocks a cache slot holds: a cluster spanning more is read through the streaming slot. */
  readonly slotBlocks: number;
  /** Cache slots of whole clusters per lane (least recently used evicted). */
  readonly slots: number;
  /** A lane's cache bytes: `slots` slots plus one streaming slot. */
  readonly laneBytes: number;
}

/**
 * Cuts `cacheBytes` of a lane into slots of twice the mean cluster's blocks (a typical cluster
 * fits one; at least one slot and a streaming slot, at most {@link CHUNK_BLOCKS} blocks a slot).
 */
export function pagedCodes(
  clusterOffsets: Int32Array,
  bytes: number,
  file: { readonly codesAt: number; readonly codesLength: number },
  cacheBytes: number,
): PagedCodes {
  if (!Number.isInteger(cacheBytes) || cacheBytes < 1) {
    throw new Error(`IVF cacheBytes must be a positive integer, got ${cacheBytes}`);
  }
  const c = clusterOffsets.length - 1;
  let spans = 0;
  for (let k = 0; k < c; k++) spans += blockSpan(clusterOffsets[k]!, clusterOffsets[k + 1]!);
  const stride = IVF_BLOCK * bytes;
  const fit = Math.max(1, Math.floor(cacheBytes / stride / 2));
  const slotBlocks = Math.max(1, Math.min(CHUNK_BLOCKS, fit, Math.ceil((2 * spans) / c)));
  const slots = Math.max(1, Math.floor(cacheBytes / (slotBlocks * stride)) - 1);
  const laneBytes = (slots + 1) * slotBlocks * stride;
  return { fileAt: file.codesAt, codesLength: file.codesLength, slotBlocks, slots, laneBytes };
}

/** Blocks places `from..to-1` touch. */
function blockSpan(from: number, to: number): number {
  return to > from ? Math.ceil(to / IVF_BLOCK) - Math.floor(from / IVF_BLOCK) : 0;
}

/** Blocks `first..end-1` of the layout are at byte `at` of the shared memory. */
export interface CodeRegion {
  readonly at: number;
  readonly first: number;
  readonly end: number;
}

/**
 * One lane's cache of code blocks read by position. A cluster that fits a slot is read whole
 * into the least recently used slot and kept; a larger one is read a slot at a time through
 * the streaming slot. `blocksRead` counts the blocks read from the file.
 */
export class BlockCache {
  readonly #lane: ScanLane;
  readonly #layout: PagedCodes;
  readonly #stride: number;
  readonly #slotCluster: Int32Array;
  readonly #slotUsed: Float64Array;
  readonly #where = new Map<number, number>();
  #clock = 0;
  blocksRead = 0;

  constructor(lane: ScanLane, layout: PagedCodes, bytes: number) {
    this.#lane = lane;
    this.#layout = layout;
    this.#stride = IVF_BLOCK * bytes;
    this.#slotCluster = new Int32Array(layout.slots).fill(-1);
    this.#slotUsed = new Float64Array(layout.slots);
  }

  /**
   * Where block `b` of cluster `cluster` (its blocks `first..end-1`) and those after it are:
   * the whole cluster from its slot (read on a miss), or up to a slot's worth from `b` on.
   */
  region(fd: number, cluster: number, first: number, end: number, b: number): CodeRegion {
    const { slotBlocks, slots } = this.#layout;
    const slotBytes = slotBlocks * this.#stride;
    if (end - first > slotBlocks) {
      const stop = Math.min(end, b + slotBlocks);
      const at = this.#lane.cacheAt + slots * slotBytes;
      this.#read(fd, at, b, stop);
      return { at, first: b, end: stop };
    }
    let slot = this.#where.get(cluster);
    if (slot === undefined) {
      slot = 0;
      for (let s = 1; s < slots; s++) if (this.#slotUsed[s]! < this.#slotUsed[slot]!) slot = s;
      const old = this.#slotCluster[slot]!;
      if (old >= 0) this.#where.delete(old);
      this.#read(fd, this.#lane.cacheAt + slot * slotBytes, first, end);
      this.#slotCluster[slot] = cluster;
      this.#where.set(cluster, slot);
    }
    this.#slotUsed[slot] = ++this.#clock;
    return { at: this.#lane.cacheAt + slot * slotBytes, first, end };
  }

  /** Blocks `from..to-1` from the file to byte `at` of the shared memory. */
  #read(fd: number, at: number, from: number, to: number): void {
    const target = new Uint8Array(this.#lane.memory.buffer);
    const stride = this.#stride;
    readFully(fd, target, at, (to - from) * stride, this.#layout.fileAt + from * stride);
    this.blocksRead += to - from;
  }
}

const caches = new WeakMap<ScanLane, BlockCache>();

/** `lane`'s cache (made on first use; one index's lane, one layout). */
export function blockCache(lane: ScanLane, layout: PagedCodes, bytes: number): BlockCache {
  let cache = caches.get(lane);
  if (cache === undefined) {
    cache = new BlockCache(lane, layout, bytes);
    caches.set(lane, cache);
  }
  return cache;
}

/**
 * Reads `length` bytes at file offset `at` of `fd` into `target[offset..]` (every byte, or a
 * thrown error on a short file).
 */
export function readFully(
  fd: number,
  target: Uint8Array,
  offset: number,
  length: number,
  at: number,
): void {
  for (let done = 0; done < length;) {
    const n = readSync(fd, target, offset + done, length - done, at + done);
    if (n === 0) throw new Error('IVF file is truncated');
    done += n;
  }
}

/** Bytes a `read` call is given at most (the file system's calls take under 2 GiB). */
const READ_BYTES = 1 << 30;

/** Fills `target` from byte `at` of the file at `path` (every byte, in calls of at most 1 GiB). */
export function readFileRange(path: string, target: Uint8Array, at: number): void {
  const fd = openSync(path, 'r');
  try {
    for (let done = 0; done < target.length; done += READ_BYTES) {
      const n = Math.min(READ_BYTES, target.length - done);
      readFully(fd, target, done, n, at + done);
    }
  } finally {
    closeSync(fd);
  }
}
