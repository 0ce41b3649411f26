import { rm } from 'node:fs/promises';
import type { Manifest, SegmentEntry } from './manifest.js';
import type { StoreSettings } from './settings.js';
import { FileRows } from './file-rows.js';
import type { RowCache } from './row-cache.js';
import type { SegmentRows } from './segment.js';

/**
 * A loaded segment and who uses it: the store's current state holds it while the manifest
 * lists it; each open snapshot holds it too. Its file is deleted once compaction has retired
 * it and the last snapshot using it is released.
 */
export class Segment {
  #snapshots = 0;
  #retired = false;
  constructor(
    readonly entry: SegmentEntry,
    readonly path: string,
    readonly rows: SegmentRows,
  ) {}

  get bank(): string {
    return this.entry.bank;
  }

  /** Snapshots that hold this segment now. */
  get snapshots(): number {
    return this.#snapshots;
  }

  acquire(): void {
    this.#snapshots++;
  }

  async release(): Promise<void> {
    this.#snapshots--;
    await this.#collect();
  }

  /** No longer in the manifest: delete the file when no snapshot uses it. */
  async retire(): Promise<void> {
    this.#retired = true;
    await this.#collect();
  }

  async #collect(): Promise<void> {
    if (!this.#retired || this.#snapshots !== 0) return;
    // Readers that still hold this segment's rows (a graph being brought up to date) read them
    // from memory once the file is gone.
    if (this.rows instanceof FileRows) this.rows.pin();
    await rm(this.path, { force: true });
  }
}

/**
 * One version of the store: segments, tombstones and the memtable (batches written to the WAL
 * but not yet to segments). Never mutated: every write makes a new one, so a snapshot is just a
 * reference to one of these.
 */
export interface StoreState {
  readonly segments: readonly Segment[];
  /** bank → id → write sequence of its delete. */
  readonly tombstones: ReadonlyMap<string, ReadonlyMap<string, number>>;
  /** Batches acknowledged since the last flush, oldest first. */
  readonly memtable: readonly SegmentRows[];
  /** The next write sequence. */
  readonly nextSeq: number;
  /** The store's budget for rows read from segments and the views built from them. */
  readonly cache: RowCache;
}

/** The state with `deleted` ids of `bank` tombstoned at `seq` (a new state; `s` is untouched). */
export function withTombstones(
  s: StoreState,
  bank: string,
  deleted: readonly string[],
  seq: number,
): StoreState {
  const tombstones = new Map(s.tombstones);
  const bankStones = new Map(s.tombstones.get(bank));
  for (const id of deleted) bankStones.set(id, seq);
  tombstones.set(bank, bankStones);
  return { ...s, tombstones, nextSeq: Math.max(s.nextSeq, seq + 1) };
}

/** The state with one more memtable batch. */
export function withBatch(s: StoreState, rows: SegmentRows): StoreState {
  const last = rows.seqs.length === 0 ? s.nextSeq - 1 : rows.seqs[rows.seqs.length - 1]!;
  return { ...s, memtable: [...s.memtable, rows], nextSeq: Math.max(s.nextSeq, last + 1) };
}

/** Every bank with a segment or memtable rows. */
export function banksOf(s: StoreState): string[] {
  const names = new Set<string>();
  for (const seg of s.segments) names.add(seg.bank);
  for (const b of s.memtable) names.add(b.bank);
  return [...names].sort();
}

/** Whether `bank` has a segment or memtable rows: `banksOf(s).includes(bank)`, without the sort. */
export function hasBankRows(s: StoreState, bank: string): boolean {
  return s.segments.some((seg) => seg.bank === bank) || s.memtable.some((b) => b.bank === bank);
}

/** A bank's row sources in write order: its segments, then its memtable batches. */
export function bankSources(s: StoreState, bank: string): SegmentRows[] {
  const out: SegmentRows[] = [];
  for (const seg of s.segments) if (seg.bank === bank) out.push(seg.rows);
  for (const b of s.memtable) if (b.bank === bank) out.push(b);
  return out;
}

/**
 * The manifest of state `s` at a checkpoint: its segments, and the tombstones below the
 * checkpoint (those above it live in the WAL).
 */
export function manifestOf(
  s: StoreState,
  store: StoreSettings & { readonly model: string; readonly dim: number },
  at: {
    readonly walGeneration: number;
    readonly checkpointSeq: number;
    readonly nextSegment: number;
  },
): Manifest {
  const tombstones: Record<string, Record<string, number>> = {};
  for (const [bank, stones] of s.tombstones) {
    const kept = [...stones].filter(([, seq]) => seq < at.checkpointSeq);
    if (kept.length > 0) tombstones[bank] = Object.fromEntries(kept);
  }
  return {
    schemaVersion: 1,
    model: store.model,
    dim: store.dim,
    codec: store.codec,
    ...(store.window === undefined ? {} : { window: store.window }),
    ...at,
    segments: s.segments.map((seg) => seg.entry),
    tombstones,
  };
}
