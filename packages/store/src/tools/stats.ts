import { GRAPHS_DIR } from '../index/graph/graph-files.js';
import type { Manifest } from '../log/manifest.js';
import { recordedSettings, type StoreSettings } from '../log/settings.js';
import type { MemoryStore } from '../store.js';
import { directoryBytes } from './open.js';

/** One bank in {@link StoreReport}. */
export interface BankReport {
  readonly bank: string;
  /** Live memories and their content tokens. */
  readonly memories: number;
  readonly tokens: number;
  readonly segments: number;
  /** Bytes of the bank's segment files. */
  readonly segmentBytes: number;
  /** Token rows the bank's segments hold, superseded and deleted ones included. */
  readonly segmentTokens: number;
  /** `segmentBytes / segmentTokens`: what a stored token costs on disk (null without one). */
  readonly bytesPerToken: number | null;
  /** Rows written since the last flush (in the WAL, not yet in segments). */
  readonly memtableRows: number;
}

/** What `bfe store stats` prints: counts, bytes on disk and the settings a store keeps. */
export interface StoreReport {
  readonly dir: string;
  /** The model hash and dimension the store's vectors belong to. */
  readonly model: string;
  readonly dim: number;
  /** The settings `MANIFEST.json` records (codec, window; absent fields are the defaults). */
  readonly settings: StoreSettings;
  /** Whether the manifest names the codec, or the store predates the setting (then fp32). */
  readonly codecRecorded: boolean;
  readonly memories: number;
  readonly tokens: number;
  readonly segments: number;
  readonly bytes: {
    readonly segments: number;
    readonly wal: number;
    readonly manifest: number;
    /** Segments, WAL and manifest. */
    readonly total: number;
    /** The HNSW graphs under `graphs/` (derived data, rebuilt when lost; not in `total`). */
    readonly graphs: number;
  };
  /** `bytes.total / tokens`: disk per live token (null when the store holds none). */
  readonly bytesPerToken: number | null;
  /** Banks with segments or unflushed rows, by name. */
  readonly banks: readonly BankReport[];
}

/**
 * Counts and sizes of an open store (its `stats()`), with the manifest's settings and what
 * each stored token costs. `manifest` is the store's manifest (as read at open; the segment
 * token counts come from the store's own segments).
 * @example
 * const { store, manifest, dir } = await openForMaintenance(dir);
 * const report = await storeReport(store, manifest, dir); // report.banks[0].bytesPerToken ≈ 1.6e3 (384-d fp32)
 */
export async function storeReport(
  store: MemoryStore,
  manifest: Manifest,
  dir: string,
): Promise<StoreReport> {
  const stats = await store.stats();
  const snap = store.snapshot();
  const segmentTokens = new Map<string, number>();
  try {
    for (const seg of snap.state.segments)
      segmentTokens.set(seg.bank, (segmentTokens.get(seg.bank) ?? 0) + seg.entry.tokens);
  } finally {
    await snap.release();
  }
  const banks: BankReport[] = Object.keys(stats.banks)
    .sort()
    .map((bank) => {
      const b = stats.banks[bank]!;
      const tokens = segmentTokens.get(bank) ?? 0;
      return {
        bank,
        memories: b.memories,
        tokens: b.tokens,
        segments: b.segments,
        segmentBytes: b.segmentBytes,
        segmentTokens: tokens,
        bytesPerToken: tokens === 0 ? null : b.segmentBytes / tokens,
        memtableRows: b.memtableRows,
      };
    });
  const segmentBytes = banks.reduce((a, b) => a + b.segmentBytes, 0);
  return {
    dir,
    model: manifest.model,
    dim: manifest.dim,
    settings: recordedSettings(manifest),
    codecRecorded: manifest.codec !== undefined,
    memories: stats.memories,
    tokens: stats.tokens,
    segments: stats.segments,
    bytes: {
      segments: segmentBytes,
      wal: stats.walBytes,
      manifest: stats.bytesOnDisk - segmentBytes - stats.walBytes,
      total: stats.bytesOnDisk,
      graphs: await directoryBytes(dir, GRAPHS_DIR),
    },
    bytesPerToken: stats.tokens === 0 ? null : stats.bytesOnDisk / stats.tokens,
    banks,
  };
}
