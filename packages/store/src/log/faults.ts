// Test failpoints of the store, read from the environment (never set outside tests):
//
// `BFE_STORE_FAULT_KILL=<point>` ends the process with SIGKILL (no clean-up of any kind) when
// the store reaches `<point>`:
//   `wal-written`          a group of write records is written to the WAL, not yet fsynced;
//   `wal-group-partial`    a group of two or more records: its first is written, the rest not;
//   `wal-group-synced`     a group of two or more records is fsynced, none of its calls
//                          applied or acknowledged yet;
//   `flush-segments`       a flush wrote its segments, the manifest not yet swapped;
//   `flush-manifest`       a flush swapped the manifest, the old WAL not yet removed;
//   `compact-segment`      a compaction wrote its merged segment, the manifest not yet swapped;
//   `compact-manifest`     a compaction swapped the manifest, old segments not yet removed;
//   `graph-file`           an HNSW graph's usearch file is written and fsynced, its meta not yet;
//   `graph-meta`           a graph's meta is swapped, the previous generation's file not yet removed;
//   `ivf-file`             a bank's IVF index file is written and fsynced, its meta not yet;
//   `ivf-meta`             an IVF index's meta is swapped, the previous generation's file not yet
//                          removed;
//   `graph-apply`          a graph applied an acknowledged write in the background, later
//                          acknowledged writes still queued for the graphs.

/** Ends the process with SIGKILL when `BFE_STORE_FAULT_KILL` names `point` (see above). */
export function failpoint(point: string): void {
  const wanted = process.env.BFE_STORE_FAULT_KILL;
  if (wanted !== undefined && wanted !== '' && wanted === point) {
    process.stderr.write(`fault: killed at ${point}\n`);
    process.kill(process.pid, 'SIGKILL');
  }
}
