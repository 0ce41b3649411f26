import { bankSources, banksOf, hasBankRows, type StoreState } from './state.js';
import { FileRows } from './file-rows.js';
import { DEFAULT_MAX_RESIDENT_TOKENS } from '../index/resident-index.js';
import { liveRows } from './live-rows.js';
import { gatherView, makeView, viewBytes, viewWith, type ViewParts } from './view-build.js';
import { grownView, spareBytes } from './view-growth.js';
import type { SegmentRows } from './segment.js';
import type { BankView, ViewLexicon } from '../types.js';

// Views are held in the store's row cache, per bank, with the sources and tombstones they were
// built from: a write to one bank leaves the other banks' sources and tombstones the same
// objects, so their views are reused; a view evicted from the cache is built again.
interface BankCache {
  readonly sources: readonly SegmentRows[];
  readonly stones: ReadonlyMap<string, number> | undefined;
  readonly view: BankView;
}

/** The live memories of `bank` in state `s`, as a {@link BankView} (token states in pieces). */
export function bankView(s: StoreState, bank: string, model: string, dim: number): BankView {
  const sources = bankSources(s, bank);
  const stones = s.tombstones.get(bank);
  const key = `view\u0000${bank}`;
  const cached = s.cache.get<BankCache>(key);
  // The cached view's sources, and no tombstone since: the view as it is, or grown by the
  // sources written after it (adds of new memories: no copy of the bank's rows).
  if (
    cached !== undefined &&
    cached.stones === stones &&
    cached.sources.length <= sources.length &&
    cached.sources.every((src, i) => src === sources[i])
  ) {
    if (cached.sources.length === sources.length) return cached.view;
    const grown = grownView(cached.view, sources.slice(cached.sources.length), stones, dim);
    if (grown !== undefined) {
      hold(s, key, { sources, stones, view: grown }, spareBytes(grown));
      return grown;
    }
  }
  const view = buildView(gatherView(liveRows(sources, stones), bank, dim), model, stones);
  hold(s, key, { sources, stones, view });
  return view;
}

/**
 * Holds a view in the cache. Its pieces that read a segment's states in place are counted by
 * that segment's entry, and the view goes when the segment does. A view counts every piece
 * itself when one of its segments is not held, and when its bank is small enough for a
 * resident session (`DEFAULT_MAX_RESIDENT_TOKENS`), which keeps a copy of the bank while the
 * view lives.
 */
function hold(s: StoreState, key: string, entry: BankCache, extra = 0): void {
  const files = entry.sources.filter((x) => x instanceof FileRows);
  const v = entry.view;
  const small = v.tokenOffsets[v.ids.length]! <= DEFAULT_MAX_RESIDENT_TOKENS;
  const held = !small && files.every((f) => s.cache.has(f));
  const bytes = viewBytes(entry.view, held ? 'made' : 'all') + extra;
  s.cache.set(key, entry, bytes, held ? files : []);
}

function buildView(
  parts: ViewParts,
  model: string,
  stones: ReadonlyMap<string, number> | undefined,
): BankView {
  let version = -1;
  for (const seq of parts.seqs) version = Math.max(version, seq);
  for (const seq of stones?.values() ?? []) version = Math.max(version, seq);
  return makeView(parts, model, version);
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

  /** Whether {@link banks} lists `name` (one pass, no list built). */
  hasBank(name: string): boolean {
    return hasBankRows(this.state, name);
  }

  /** The live memories of `bank` (empty when the bank has none). */
  bank(name: string): BankView {
    if (this.#released) throw new Error('Snapshot.bank: the snapshot was released');
    const view = bankView(this.state, name, this.model, this.dim);
    if (this.lexicon === undefined) return view;
    let carried = withLexicon.get(view);
    if (carried === undefined) {
      carried = viewWith(view, { lexicon: this.lexicon });
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
