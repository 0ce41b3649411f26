// One probed cluster of the clustered index: the WebAssembly fast scan over its blocks (the
// base layout's, resident or read by position, then its tail list's), the survivors'
// approximate similarities pushed into the row's running top.
import type { ApproxTop } from './scan.js';
import { IVF_BLOCK } from './layout.js';
import type { CodeRegion } from './paged.js';
import type { TailView } from './tails.js';
import type { RowTables } from './tables.js';
import { CHUNK_BLOCKS, MAX_SUM, type ScanLane } from './wasm-scan.js';

/**
 * Where a lane finds blocks of the base layout: `region(cluster, first, end, b)` says where
 * block `b` of a cluster spanning blocks `first..end-1` is, and up to which block that holds
 * (the index's resident codes, or a lane's cache of blocks read by position).
 */
export type BaseCodes = (cluster: number, first: number, end: number, b: number) => CodeRegion;

/** The least sum that can still enter `top` (one below, against float rounding); −1: none. */
function needed(top: ApproxTop, offset: number, scale: number): number {
  const floor = top.floor;
  if (floor === -Infinity) return 0;
  const need = Math.ceil((floor - offset) * scale) - 1;
  return need > MAX_SUM ? -1 : Math.max(0, need);
}

/**
 * Scans layout places `from..to-1` (cluster `cluster`, centroid score `base`) into `top`: a
 * token's approximate similarity is `base + bias + sum / scale`, its `sum` the fast scan's
 * lookups of its code nibbles (`row`: the tables in `lane`). Only sums that can reach the
 * running top's floor come back from the scan; with `allowed`, a place whose memory
 * (`placeMemory[p]`) is not allowed is skipped. The top's key is the place's bank token
 * (`placeToken[p]`; without it, the place), so equal scores keep the smaller token whatever the
 * layout. `codes` says where the blocks are (default: the lane's resident codes). Returns the
 * places that were candidates.
 */
export function scanCluster(
  lane: ScanLane,
  row: RowTables,
  base: number,
  from: number,
  to: number,
  top: ApproxTop,
  allowed: Uint8Array | undefined,
  placeMemory: Int32Array,
  placeToken?: Int32Array,
  codes?: BaseCodes,
  cluster = -1,
): number {
  let seen = to - from;
  if (allowed !== undefined) {
    seen = 0;
    for (let p = from; p < to; p++) seen += allowed[placeMemory[p]!]!;
  }
  if (seen === 0) return 0;
  const { bias, scale } = row;
  const offset = base + bias;
  const first = Math.floor(from / IVF_BLOCK);
  const last = Math.ceil(to / IVF_BLOCK);
  for (let b = first; b < last;) {
    const need = needed(top, offset, scale);
    if (need < 0) return seen;
    // Resident codes: the whole cluster in one region (no object made per cluster).
    const region = codes?.(cluster, first, last, b);
    const regionFirst = region === undefined ? 0 : region.first;
    const stop = Math.min(region === undefined ? last : region.end, b + CHUNK_BLOCKS);
    const n = lane.scan(b - regionFirst, stop - regionFirst, need, region?.at);
    const placeBase = regionFirst * IVF_BLOCK;
    const { places, sums } = lane;
    for (let i = 0; i < n; i++) {
      const p = placeBase + places[i]!;
      if (p < from || p >= to) continue;
      if (allowed !== undefined && allowed[placeMemory[p]!] === 0) continue;
      const s = offset + sums[i]! / scale;
      if (s < top.floor) continue;
      top.push(s, placeToken === undefined ? p : placeToken[p]!);
    }
    b = stop;
  }
  return seen;
}

/**
 * Scans cluster `cluster`'s tail list (appended tokens, `tail`) into `top` as
 * {@link scanCluster} scans its base places: runs of consecutive tail blocks in one segment
 * are one scan call. Returns the tail places that were candidates.
 */
export function scanTail(
  lane: ScanLane,
  row: RowTables,
  base: number,
  cluster: number,
  tail: TailView,
  top: ApproxTop,
  allowed: Uint8Array | undefined,
): number {
  let left = tail.count[cluster]!;
  if (left === 0) return 0;
  const { next, placeToken, placeMemory, segments, segmentBlocks } = tail;
  const { bias, scale } = row;
  const offset = base + bias;
  let seen = 0;
  for (let g = tail.first[cluster]!; g >= 0 && left > 0;) {
    const segment = Math.floor(g / segmentBlocks);
    let e = g + 1;
    while (next[e - 1] === e && Math.floor(e / segmentBlocks) === segment && e - g < CHUNK_BLOCKS) {
      e++;
    }
    const valid = Math.min(left, (e - g) * IVF_BLOCK);
    const from = g * IVF_BLOCK;
    const to = from + valid;
    let live = valid;
    if (allowed !== undefined) {
      live = 0;
      for (let p = from; p < to; p++) live += allowed[placeMemory[p]!]!;
    }
    seen += live;
    const need = live > 0 ? needed(top, offset, scale) : -1;
    if (need >= 0) {
      const local = g - segment * segmentBlocks;
      const n = lane.scan(local, local + e - g, need, segments[segment]!);
      const placeBase = segment * segmentBlocks * IVF_BLOCK;
      const { places, sums } = lane;
      for (let i = 0; i < n; i++) {
        const p = placeBase + places[i]!;
        if (p >= to) continue;
        if (allowed !== undefined && allowed[placeMemory[p]!] === 0) continue;
        const s = offset + sums[i]! / scale;
        if (s < top.floor) continue;
        top.push(s, placeToken[p]!);
      }
    }
    left -= valid;
    g = next[e - 1]!;
  }
  return seen;
}
