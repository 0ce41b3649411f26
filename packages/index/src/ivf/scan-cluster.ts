// One probed cluster of the clustered index: the WebAssembly fast scan over its blocks, then
// the survivors' approximate similarities pushed into the row's running top.
import type { ApproxTop } from './scan.js';
import { IVF_BLOCK } from './layout.js';
import { CHUNK_BLOCKS, MAX_SUM, type RowTables, type ScanLane } from './wasm-scan.js';

/**
 * Scans layout places `from..to-1` (one cluster, centroid score `base`) into `top`: a token's
 * approximate similarity is `base + bias + sum / scale`, its `sum` the fast scan's lookups of
 * its code nibbles (`row`: the tables in `scanner`). Only sums that can reach the running
 * top's floor come back from the scan; with `allowed`, a place whose memory (`placeMemory[p]`)
 * is not allowed is skipped. Returns the places that were candidates.
 */
export function scanCluster(
  scanner: ScanLane,
  row: RowTables,
  base: number,
  from: number,
  to: number,
  top: ApproxTop,
  allowed: Uint8Array | undefined,
  placeMemory: Int32Array,
): number {
  let seen = to - from;
  if (allowed !== undefined) {
    seen = 0;
    for (let p = from; p < to; p++) seen += allowed[placeMemory[p]!]!;
    if (seen === 0) return 0;
  }
  const { bias, scale } = row;
  const offset = base + bias;
  const last = Math.ceil(to / IVF_BLOCK);
  for (let b = Math.floor(from / IVF_BLOCK); b < last; b += CHUNK_BLOCKS) {
    // The least sum that can still enter the top (one below, against float rounding).
    const floor = top.floor;
    const need = floor === -Infinity ? 0 : Math.ceil((floor - offset) * scale) - 1;
    if (need > MAX_SUM) return seen;
    const n = scanner.scan(b, Math.min(last, b + CHUNK_BLOCKS), Math.max(0, need));
    const { places, sums } = scanner;
    for (let i = 0; i < n; i++) {
      const p = places[i]!;
      if (p < from || p >= to) continue;
      if (allowed !== undefined && allowed[placeMemory[p]!] === 0) continue;
      const s = offset + sums[i]! / scale;
      if (s < top.floor) continue;
      top.push(s, p);
    }
  }
  return seen;
}
