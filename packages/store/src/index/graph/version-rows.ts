import type { RowRef } from '../../log/live-rows.js';
import type { SegmentRows } from '../../log/segment.js';
import { pooledFingerprint, type BankGraph, type VersionRows } from './bank-graph.js';

const asVersions = new WeakMap<SegmentRows, VersionRows>();

/** A store batch or segment as {@link VersionRows}. */
export function versionRows(rows: SegmentRows): VersionRows {
  let v = asVersions.get(rows);
  if (v === undefined) {
    const e = rows.encoded;
    v = {
      dim: e.dim,
      ids: rows.ids,
      seqs: rows.seqs,
      pooled: e.pooled,
      tokenOffsets: e.tokenOffsets,
      tokenVectors: e.tokenVectors,
    };
    asVersions.set(rows, v);
  }
  return v;
}

export function fingerprint(ref: RowRef, dim: number): number {
  return pooledFingerprint(ref.source.encoded.pooled, ref.row, dim);
}

export function liveTokens(rows: ReadonlyMap<string, RowRef> | undefined): number {
  let n = 0;
  if (rows !== undefined)
    for (const { source, row } of rows.values())
      n += source.encoded.tokenOffsets[row + 1]! - source.encoded.tokenOffsets[row]!;
  return n;
}

/** Whether most versions a loaded graph holds are not live (another store's file, say). */
export function mostlyStale(
  live: ReadonlyMap<string, RowRef> | undefined,
  graph: BankGraph,
  dim: number,
): boolean {
  let stale = 0;
  for (const e of graph.entries()) {
    const ref = live?.get(e.id);
    if (ref === undefined || ref.seq !== e.seq || fingerprint(ref, dim) !== e.fp) stale++;
  }
  return stale * 2 > graph.versions;
}
