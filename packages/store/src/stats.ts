import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import { MANIFEST_FILE } from './log/manifest.js';
import { banksOf, type StoreState } from './log/state.js';
import type { Writer } from './log/writer.js';
import type { CommitStats } from './log/group-commit.js';
import type { StoreCodec } from './log/settings.js';

/** What `stats` reports of one bank. */
export interface BankStats {
  readonly memories: number;
  readonly tokens: number;
  readonly segments: number;
  /** Bytes of the bank's segment files. */
  readonly segmentBytes: number;
  /** Rows written since the last flush (live or superseded). */
  readonly memtableRows: number;
}

/** What `stats` reports of the store. */
export interface StoreStats {
  readonly memories: number;
  readonly tokens: number;
  readonly segments: number;
  readonly walBytes: number;
  /** Segments, WAL and manifest. */
  readonly bytesOnDisk: number;
  readonly banks: Readonly<Record<string, BankStats>>;
  /** Since open: WAL records written by write calls, the fsyncs (groups) that acknowledged them. */
  readonly commits: CommitStats;
  /** The codec segments keep token states in. */
  readonly codec: StoreCodec;
  /**
   * What the store holds in memory of its segments (decoded rows and bank views): bytes and
   * entries now, the budget (`cacheBytes`), and reads since open.
   */
  readonly cache: {
    readonly bytes: number;
    readonly entries: number;
    readonly budget: number;
    readonly loads: number;
  };
}

/** Counts and sizes of the store `writer` keeps in `dir`, per bank and in total. */
export async function storeStats(writer: Writer, dir: string): Promise<StoreStats> {
  const s: StoreState = writer.state;
  const banks: Record<string, BankStats> = {};
  let memories = 0;
  let tokens = 0;
  let segmentBytes = 0;
  for (const bank of banksOf(s)) {
    const c = writer.live.count(bank);
    const segs = s.segments.filter((seg) => seg.bank === bank);
    const bytes = segs.reduce((a, seg) => a + seg.entry.bytes, 0);
    const memtableRows = s.memtable.reduce((a, b) => a + (b.bank === bank ? b.ids.length : 0), 0);
    banks[bank] = { ...c, segments: segs.length, segmentBytes: bytes, memtableRows };
    memories += c.memories;
    tokens += c.tokens;
    segmentBytes += bytes;
  }
  const manifestBytes = (await stat(join(dir, MANIFEST_FILE))).size;
  const walBytes = writer.walBytes;
  return {
    memories,
    tokens,
    segments: s.segments.length,
    walBytes,
    bytesOnDisk: segmentBytes + walBytes + manifestBytes,
    banks,
    commits: writer.commits,
    codec: writer.settings.codec,
    cache: {
      bytes: s.cache.bytes,
      entries: s.cache.size,
      budget: s.cache.budget,
      loads: s.cache.loads,
    },
  };
}
