import { bankSources, banksOf, type StoreState } from './state.js';
import { gatherRows, liveRows } from './live-rows.js';
import type { BankView } from './types.js';

// Views are cached per state: snapshots of an unchanged store share them.
const views = new WeakMap<StoreState, Map<string, BankView>>();

/** The live memories of `bank` in state `s`, as one contiguous {@link BankView}. */
export function bankView(s: StoreState, bank: string, model: string, dim: number): BankView {
  let cache = views.get(s);
  if (cache === undefined) {
    cache = new Map();
    views.set(s, cache);
  }
  const cached = cache.get(bank);
  if (cached !== undefined) return cached;
  const rows = gatherRows(liveRows(bankSources(s, bank), s.tombstones.get(bank)), bank, dim);
  const e = rows.encoded;
  const view: BankView = Object.freeze({
    bank,
    model,
    dim,
    ids: Object.freeze(rows.ids),
    texts: Object.freeze(rows.texts),
    metas: Object.freeze(rows.metas),
    pooled: e.pooled,
    tokenOffsets: e.tokenOffsets,
    tokenVectors: e.tokenVectors,
    tokenIds: e.tokenIds,
    tokenPositions: e.tokenPositions,
  });
  cache.set(bank, view);
  return view;
}

/**
 * An immutable view of the store at one moment: later adds, deletes, flushes and compactions
 * never show through. It pins the segment files it reads (compaction deletes a retired file
 * only when no snapshot holds it); {@link Snapshot.release} it when done.
 * @example
 * const snap = store.snapshot();
 * try {
 *   const view = snap.bank('alice'); // view.pooled: Float32Array [memories × dim]
 * } finally {
 *   await snap.release();
 * }
 */
export class Snapshot {
  #released = false;
  constructor(
    readonly state: StoreState,
    readonly model: string,
    readonly dim: number,
  ) {
    for (const seg of state.segments) seg.acquire();
  }

  /** Banks that hold at least one segment or memtable row (possibly all deleted). */
  banks(): string[] {
    return banksOf(this.state);
  }

  /** The live memories of `bank` (empty when the bank has none). */
  bank(name: string): BankView {
    if (this.#released) throw new Error('Snapshot.bank: the snapshot was released');
    return bankView(this.state, name, this.model, this.dim);
  }

  /** Unpins the segments; the snapshot must not be read afterwards. Idempotent. */
  async release(): Promise<void> {
    if (this.#released) return;
    this.#released = true;
    for (const seg of this.state.segments) await seg.release();
  }
}
