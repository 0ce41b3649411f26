import { bankSources, banksOf, type StoreState } from './state.js';
import { gatherRows, liveRows } from './live-rows.js';
import type { SegmentRows } from './segment.js';
import type { BankView, ViewLexicon } from '../types.js';

// Views are cached per state (snapshots of an unchanged store share them) and, across states,
// per bank: a write to one bank leaves the other banks' sources and tombstones the same objects,
// so their views are reused. Keyed by the bank's first source, an object unique to one store.
const views = new WeakMap<StoreState, Map<string, BankView>>();
interface BankCache {
  readonly sources: readonly SegmentRows[];
  readonly stones: ReadonlyMap<string, number> | undefined;
  readonly view: BankView;
}
const byFirstSource = new WeakMap<SegmentRows, BankCache>();

/** The live memories of `bank` in state `s`, as one contiguous {@link BankView}. */
export function bankView(s: StoreState, bank: string, model: string, dim: number): BankView {
  let cache = views.get(s);
  if (cache === undefined) {
    cache = new Map();
    views.set(s, cache);
  }
  const cached = cache.get(bank);
  if (cached !== undefined) return cached;
  const sources = bankSources(s, bank);
  const stones = s.tombstones.get(bank);
  const first = sources[0];
  const previous = first === undefined ? undefined : byFirstSource.get(first);
  let view: BankView;
  if (
    previous !== undefined &&
    previous.stones === stones &&
    previous.sources.length === sources.length &&
    previous.sources.every((src, i) => src === sources[i])
  )
    view = previous.view;
  else {
    view = buildView(gatherRows(liveRows(sources, stones), bank, dim), model, stones);
    if (first !== undefined) byFirstSource.set(first, { sources, stones, view });
  }
  cache.set(bank, view);
  return view;
}

function buildView(
  rows: SegmentRows,
  model: string,
  stones: ReadonlyMap<string, number> | undefined,
): BankView {
  const e = rows.encoded;
  let version = -1;
  for (const seq of rows.seqs) version = Math.max(version, seq);
  for (const seq of stones?.values() ?? []) version = Math.max(version, seq);
  return Object.freeze({
    bank: rows.bank,
    model,
    dim: e.dim,
    ids: Object.freeze(rows.ids),
    texts: Object.freeze(rows.texts),
    metas: Object.freeze(rows.metas),
    pooled: e.pooled,
    tokenOffsets: e.tokenOffsets,
    tokenVectors: e.tokenVectors,
    tokenIds: e.tokenIds,
    tokenPositions: e.tokenPositions,
    seqs: rows.seqs,
    version,
  });
}

/** A store's views with its lexical index attached (per plain view: one object per view). */
const withLexicon = new WeakMap<BankView, BankView>();

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
    /** The store's lexical index, carried by every view ({@link BankView.lexicon}). */
    readonly lexicon?: ViewLexicon,
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
    const view = bankView(this.state, name, this.model, this.dim);
    if (this.lexicon === undefined) return view;
    let carried = withLexicon.get(view);
    if (carried === undefined) {
      carried = Object.freeze({ ...view, lexicon: this.lexicon });
      withLexicon.set(view, carried);
    }
    return carried;
  }

  /** Unpins the segments; the snapshot must not be read afterwards. Idempotent. */
  async release(): Promise<void> {
    if (this.#released) return;
    this.#released = true;
    for (const seg of this.state.segments) await seg.release();
  }
}
