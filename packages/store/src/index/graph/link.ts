import type { RowRef } from '../../log/live-rows.js';
import type { SegmentRows } from '../../log/segment.js';

/** What the graphs need of their store. */
export interface IndexedStore {
  readonly dir: string;
  readonly model: string;
  readonly dim: number;
  /** The live rows of `bank` now (id → its current version's row), or undefined for none. */
  liveRows(bank: string): ReadonlyMap<string, RowRef> | undefined;
}

/** A write the store applied (after its WAL record is durable and its state published). */
export type StoreChange =
  | { readonly kind: 'add'; readonly rows: SegmentRows }
  | { readonly kind: 'delete'; readonly bank: string; readonly ids: readonly string[] };

/** The store's side of an attached index: the writer calls these, in write order. */
export interface IndexLink {
  applied(change: StoreChange): Promise<void>;
  /** After a flush (graphs that changed enough are saved). */
  flushed(): Promise<void>;
  /** After a compaction of `bank`'s segments (the IVF indexes lay themselves out again). */
  compacted?(bank: string): Promise<void>;
  /** Before the store releases its lock: builds stop, changed graphs are saved. */
  close(): Promise<void>;
}
