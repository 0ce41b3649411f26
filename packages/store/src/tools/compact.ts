import { DataError } from '@bfe/core';
import type { CompactionReport } from '../log/compaction.js';
import type { StoreCodec } from '../log/settings.js';
import type { MemoryStore } from '../store.js';

/** What {@link compactStore} did. */
export interface CompactReport {
  /** The bank asked for, or undefined for every bank. */
  readonly bank: string | undefined;
  /** The store's codec before and after (they differ after a migration). */
  readonly codecBefore: StoreCodec;
  readonly codecAfter: StoreCodec;
  /** Rows the flush before compaction moved from the WAL into segments (every bank). */
  readonly flushedRows: number;
  /** Per compacted bank: segments and rows in and out, tombstones dropped. */
  readonly banks: readonly CompactionReport[];
  readonly segmentsBefore: number;
  readonly segmentsAfter: number;
  readonly rowsIn: number;
  readonly rowsOut: number;
  /** Segments, WAL and manifest on disk, before and after. */
  readonly bytesBefore: number;
  readonly bytesAfter: number;
}

/**
 * Compacts an open store: flushes first (the rows still in the WAL become segments and the
 * flushed tombstones become droppable, as `close` would flush them anyway), then merges each
 * bank's segments (`MemoryStore.compact`: superseded and deleted rows dropped, write sequences
 * kept), and reports segments, rows and bytes before and after. A bank with one segment and
 * no tombstone to drop is left as it is (not in `banks`). With `codec`, migrates the store to
 * it: every segment in another codec is rewritten, and new segments are written in it.
 * @throws DataError when `bank` is given and the store holds no such bank
 * @example
 * const { store } = await openForMaintenance(dir);
 * const r = await compactStore(store, { bank: 'alice' }); // r.banks[0]: { segmentsIn: 3, segmentsOut: 1, … }
 * await store.close();
 */
export async function compactStore(
  store: MemoryStore,
  options: { readonly bank?: string | undefined; readonly codec?: StoreCodec | undefined } = {},
): Promise<CompactReport> {
  const before = await store.stats();
  const { bank, codec } = options;
  if (codec !== undefined && bank !== undefined)
    throw new DataError('a codec migration rewrites every bank: drop --bank');
  if (bank !== undefined && before.banks[bank] === undefined)
    throw new DataError(`store ${store.dir} holds no bank '${bank}'`, {
      suggestion: `Its banks: ${Object.keys(before.banks).sort().join(', ') || '(none)'}.`,
    });
  let flushedRows = 0;
  for (const b of Object.values(before.banks)) flushedRows += b.memtableRows;
  await store.flush();
  const banks = await store.compact({
    ...(bank === undefined ? {} : { bank }),
    ...(codec === undefined ? {} : { codec }),
  });
  const after = await store.stats();
  return {
    bank,
    codecBefore: before.codec,
    codecAfter: after.codec,
    flushedRows,
    banks,
    segmentsBefore: before.segments,
    segmentsAfter: after.segments,
    rowsIn: banks.reduce((a, r) => a + r.rowsIn, 0),
    rowsOut: banks.reduce((a, r) => a + r.rowsOut, 0),
    bytesBefore: before.bytesOnDisk,
    bytesAfter: after.bytesOnDisk,
  };
}
