import { gatherRows, liveRows, type RowRef } from './live-rows.js';
import type { SegmentRows } from './segment.js';
import { bankSources, withBatch, withTombstones, type StoreState } from './state.js';
import type { WalAdd, WalRecord } from './wal.js';

/** An add record's rows, one {@link SegmentRows} per bank (in first-appearance order). */
export function rowsByBank(r: WalAdd): SegmentRows[] {
  const n = r.ids.length;
  const seqs = new Float64Array(n);
  for (let i = 0; i < n; i++) seqs[i] = r.seq + i;
  const whole: SegmentRows = {
    bank: '',
    ids: r.ids,
    texts: r.texts,
    metas: r.metas,
    seqs,
    encoded: r.encoded,
  };
  const groups = new Map<string, RowRef[]>();
  for (let i = 0; i < n; i++) {
    const bank = r.banks[i]!;
    let refs = groups.get(bank);
    if (refs === undefined) groups.set(bank, (refs = []));
    refs.push({ source: whole, row: i, seq: seqs[i]! });
  }
  if (groups.size === 1) return [{ ...whole, bank: r.banks[0]! }];
  return [...groups].map(([bank, refs]) => gatherRows(refs, bank, r.encoded.dim));
}

/** The state after one WAL record (replay and live writes go through here alike). */
export function applyRecord(s: StoreState, r: WalRecord): StoreState {
  if (r.kind === 'delete') return withTombstones(s, r.bank, r.ids, r.seq);
  let next = s;
  for (const rows of rowsByBank(r)) next = withBatch(next, rows);
  return next;
}

/**
 * The writer's index of live memories: bank → id → the row that holds its current version.
 * Answers `get`, existence checks for add/update/delete, and counts, without building views.
 */
export class LiveIndex {
  readonly #banks = new Map<string, Map<string, RowRef>>();

  /** Rebuilds `bank` from state `s` (after a flush or compaction moved its rows). */
  rebuild(s: StoreState, bank: string): void {
    const map = new Map<string, RowRef>();
    for (const ref of liveRows(bankSources(s, bank), s.tombstones.get(bank)))
      map.set(ref.source.ids[ref.row]!, ref);
    if (map.size === 0) this.#banks.delete(bank);
    else this.#banks.set(bank, map);
  }

  /** Records the rows of a new batch as the live versions of their ids. */
  addRows(rows: SegmentRows): void {
    let map = this.#banks.get(rows.bank);
    if (map === undefined) this.#banks.set(rows.bank, (map = new Map()));
    for (let row = 0; row < rows.ids.length; row++)
      map.set(rows.ids[row]!, { source: rows, row, seq: rows.seqs[row]! });
  }

  remove(bank: string, ids: readonly string[]): void {
    const map = this.#banks.get(bank);
    if (map === undefined) return;
    for (const id of ids) map.delete(id);
    if (map.size === 0) this.#banks.delete(bank);
  }

  /** The live rows of `bank` (id → row of its current version); undefined for none. */
  rows(bank: string): ReadonlyMap<string, RowRef> | undefined {
    return this.#banks.get(bank);
  }

  get(bank: string, id: string): RowRef | undefined {
    return this.#banks.get(bank)?.get(id);
  }

  /** Live memories in `bank`: a map size, where {@link count} walks every row. */
  memories(bank: string): number {
    return this.#banks.get(bank)?.size ?? 0;
  }

  /** Live memories and their content tokens in `bank`. */
  count(bank: string): { memories: number; tokens: number } {
    const map = this.#banks.get(bank);
    let tokens = 0;
    if (map !== undefined)
      for (const { source, row } of map.values())
        tokens += source.encoded.tokenOffsets[row + 1]! - source.encoded.tokenOffsets[row]!;
    return { memories: map?.size ?? 0, tokens };
  }
}
