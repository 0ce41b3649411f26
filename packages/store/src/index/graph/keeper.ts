import type { RowRef } from '../../log/live-rows.js';
import type { SegmentRows } from '../../log/segment.js';
import { BankGraph, pooledFingerprint, type GraphParams, type VersionRows } from './bank-graph.js';
import { graphBanks, loadGraph, removeGraphGarbage, saveGraph } from './graph-files.js';

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
  /** Before the store releases its lock: builds stop, changed graphs are saved. */
  close(): Promise<void>;
}

interface Slot {
  graph: BankGraph | undefined;
  /** Holds every live version of its bank (until then searches run exactly). */
  ready: boolean;
  /** Generation of the graph files on disk (0: none). */
  generation: number;
  building: Promise<void> | undefined;
  /** A rebuild from the live rows under way (the graph serves meanwhile). */
  compacting: Promise<void> | undefined;
}

/** Tokens added between two yields to the event loop while building or topping up. */
const CHUNK_TOKENS = 4096;
const yieldNow = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/**
 * Keeps one {@link BankGraph} per large bank in step with the store: builds or loads it in the
 * background (loading tops up the versions the file lacks and removes those it holds in
 * excess), applies every write to it (queued, in write order, after the write is acknowledged), saves it under `graphs/` (at flushes, once enough
 * changed, and at close). Any failure drops that bank's graph (its searches run exactly): a
 * graph is derived data and never fails a write.
 */
export class GraphKeeper implements IndexLink {
  readonly #slots = new Map<string, Slot>();
  readonly #opened: Record<string, string> = {};
  readonly #failures: string[] = [];
  #toppedUp = 0;
  #saves = 0;
  #compactions = 0;
  #closing = false;
  #disabled = false;
  /** Writes not yet applied to the graphs, in order. */
  #queue: Promise<void> = Promise.resolve();

  constructor(
    readonly store: IndexedStore,
    readonly params: GraphParams,
    readonly saveFraction: number,
    readonly minTokens: number,
    /** A graph that removed more tokens than this share of its live ones is rebuilt. */
    readonly compactRemoved: number,
  ) {}

  /** Whether {@link close} ran (the store closed). */
  get closed(): boolean {
    return this.#closing;
  }

  /** No graphs at all (the `exact` policy): files on disk are left as they are. */
  disable(): void {
    this.#disabled = true;
  }

  /** Removes graph garbage; starts loading the graphs of banks that have graph files. */
  async open(): Promise<void> {
    if (this.#disabled) return;
    await removeGraphGarbage(this.store.dir);
    for (const bank of await graphBanks(this.store.dir))
      if (liveTokens(this.store.liveRows(bank)) > this.minTokens) this.#start(bank);
  }

  /** The bank's graph when it holds every live version; otherwise starts it and returns undefined. */
  graph(bank: string): BankGraph | undefined {
    if (this.#disabled || this.#closing) return undefined;
    const slot = this.#slots.get(bank);
    if (slot === undefined) {
      this.#start(bank);
      return undefined;
    }
    return slot.ready ? slot.graph : undefined;
  }

  async settled(): Promise<void> {
    await this.#queue;
    for (;;) {
      const pending = [...this.#slots.values()]
        .flatMap((s) => [s.building, s.compacting])
        .filter((b) => b !== undefined);
      if (pending.length === 0) return;
      await Promise.all(pending);
    }
  }

  stats() {
    const banks: Record<string, { tokens: number; versions: number; removed: number }> = {};
    for (const [bank, slot] of this.#slots)
      if (slot.graph !== undefined)
        banks[bank] = {
          tokens: slot.graph.tokens,
          versions: slot.graph.versions,
          removed: slot.graph.removedTokens,
        };
    return {
      banks,
      opened: { ...this.#opened },
      toppedUpTokens: this.#toppedUp,
      saves: this.#saves,
      compactions: this.#compactions,
      failures: [...this.#failures],
    };
  }

  /**
   * Queues the change (the write is acknowledged without waiting for the graph: a search reads
   * the graph against its own snapshot, so one behind its writes stays exact). Changes apply in
   * write order.
   */
  applied(change: StoreChange): Promise<void> {
    this.#queue = this.#queue.then(() => this.#apply(change));
    return Promise.resolve();
  }

  async #apply(change: StoreChange): Promise<void> {
    const bank = change.kind === 'add' ? change.rows.bank : change.bank;
    const slot = this.#slots.get(bank);
    const graph = slot?.graph;
    if (slot === undefined || graph === undefined) return; // not loaded yet: its sync catches up
    try {
      if (change.kind === 'delete') {
        for (const id of change.ids) graph.removeId(id);
        return;
      }
      const src = versionRows(change.rows);
      const n = src.ids.length;
      for (let from = 0; from < n;) {
        let to = from + 1;
        while (to < n && src.tokenOffsets[to]! - src.tokenOffsets[from]! < CHUNK_TOKENS) to++;
        if (slot.graph !== graph) return;
        graph.addRows(src, from, to);
        from = to;
        if (from < n) await yieldNow();
      }
    } catch (error) {
      this.#fail(bank, slot, error);
    }
  }

  async flushed(): Promise<void> {
    await this.#queue;
    for (const [bank, slot] of this.#slots) {
      const g = slot.graph;
      if (g === undefined || !slot.ready) continue;
      if (slot.generation === 0 || g.changedTokens >= this.saveFraction * Math.max(g.tokens, 1))
        await this.#save(bank, slot);
    }
    for (const [bank, slot] of this.#slots) {
      const g = slot.graph;
      if (g === undefined || !slot.ready || slot.compacting !== undefined || this.#closing)
        continue;
      if (g.removedTokens > this.compactRemoved * Math.max(g.tokens, 1)) this.#compact(bank, slot);
    }
  }

  /**
   * Rebuilds a graph that holds many removed tokens (usearch keeps a removed node in the graph,
   * marked, so searches walk past it) from the bank's live rows, in the background: the old
   * graph serves searches and takes writes meanwhile; the new one is brought to the live rows
   * in one synchronous step (no write can come between) and swapped in. The old graph is
   * disposed; a search that still holds it runs exactly.
   */
  #compact(bank: string, slot: Slot): void {
    const old = slot.graph!;
    const fresh = new BankGraph(bank, this.store.dim, this.params);
    const current = (): boolean => !this.#closing && slot.graph === old;
    slot.compacting = (async () => {
      await this.#sync(bank, fresh, current, false);
      if (!current()) return fresh.dispose();
      const live = this.store.liveRows(bank);
      for (const e of [...fresh.entries()])
        if (live?.get(e.id)?.seq !== e.seq) fresh.removeId(e.id);
      for (const ref of live?.values() ?? [])
        if (fresh.entryOfSeq(ref.seq) === undefined)
          fresh.addRows(versionRows(ref.source), ref.row, ref.row + 1);
      fresh.changedTokens = fresh.tokens; // saved at the next flush or close
      slot.graph = fresh;
      old.dispose();
      this.#compactions++;
    })()
      .catch((error: unknown) => {
        fresh.dispose();
        this.#failures.push(`${bank}: compaction failed: ${String(error)}`);
      })
      .finally(() => (slot.compacting = undefined));
  }

  async close(): Promise<void> {
    await this.#queue;
    this.#closing = true;
    await this.settled();
    for (const [bank, slot] of this.#slots) {
      const g = slot.graph;
      if (g !== undefined && (slot.generation === 0 || g.changedTokens > 0))
        await this.#save(bank, slot);
      slot.graph?.dispose();
      slot.graph = undefined;
    }
  }

  async #save(bank: string, slot: Slot): Promise<void> {
    const g = slot.graph!;
    try {
      await saveGraph(this.store.dir, g, this.store.model, slot.generation + 1);
      slot.generation++;
      this.#saves++;
    } catch (error) {
      // The graph in memory is still good; the files on disk are old or garbage: both are fine.
      this.#failures.push(`${bank}: save failed: ${String(error)}`);
    }
  }

  #start(bank: string): void {
    const slot: Slot = {
      graph: undefined,
      ready: false,
      generation: 0,
      building: undefined,
      compacting: undefined,
    };
    this.#slots.set(bank, slot);
    slot.building = (async () => {
      const { dir, model, dim } = this.store;
      const loaded = await loadGraph(dir, bank, model, dim, this.params);
      slot.generation = loaded.generation;
      if (this.#closing) return loaded.graph?.dispose();
      slot.graph = loaded.graph ?? new BankGraph(bank, dim, this.params);
      this.#opened[bank] = loaded.graph !== undefined ? 'loaded' : `built (${loaded.reason})`;
      if (loaded.graph !== undefined && this.#mostlyStale(bank, loaded.graph)) {
        loaded.graph.dispose();
        slot.graph = new BankGraph(bank, dim, this.params);
        this.#opened[bank] = 'built (mostly stale)';
      }
      const graph = slot.graph;
      await this.#sync(bank, graph, () => !this.#closing && slot.graph === graph, true);
      if (slot.graph !== undefined && !this.#closing) slot.ready = true;
    })()
      .catch((error: unknown) => this.#fail(bank, slot, error))
      .finally(() => (slot.building = undefined));
  }

  /** Whether most versions a loaded graph holds are not live (another store's file, say). */
  #mostlyStale(bank: string, graph: BankGraph): boolean {
    const live = this.store.liveRows(bank);
    let stale = 0;
    for (const e of graph.entries()) {
      const ref = live?.get(e.id);
      if (ref === undefined || ref.seq !== e.seq || fingerprint(ref, this.store.dim) !== e.fp)
        stale++;
    }
    return stale * 2 > graph.versions;
  }

  /**
   * Brings `graph` to the bank's live versions: removes the versions it holds that are not live
   * (or whose fingerprint differs: another store's file), then adds the live ones it lacks, a
   * chunk at a time, each row checked again right before its add (writes go on meanwhile and
   * are applied to the graph directly), while `wanted()`. Tokens added count as topped up
   * when `topUp`.
   */
  async #sync(
    bank: string,
    graph: BankGraph,
    wanted: () => boolean,
    topUp: boolean,
  ): Promise<void> {
    const { dim } = this.store;
    const live = this.store.liveRows(bank);
    if (live === undefined) return;
    for (const e of [...graph.entries()]) {
      const ref = live.get(e.id);
      if (ref === undefined || ref.seq !== e.seq || fingerprint(ref, dim) !== e.fp)
        graph.removeId(e.id);
    }
    const todo = [...live.values()].filter((ref) => graph.entryOfSeq(ref.seq) === undefined);
    let budget = 0;
    for (let i = 0; i < todo.length;) {
      if (!wanted()) return;
      const current = this.store.liveRows(bank);
      const lacks = (ref: RowRef): boolean =>
        current?.get(ref.source.ids[ref.row]!)?.seq === ref.seq &&
        graph.entryOfSeq(ref.seq) === undefined;
      const a = todo[i]!;
      let j = i + 1;
      if (lacks(a)) {
        while (
          j < todo.length &&
          todo[j]!.source === a.source &&
          todo[j]!.row === a.row + (j - i) &&
          lacks(todo[j]!)
        )
          j++;
        const src = versionRows(a.source);
        graph.addRows(src, a.row, a.row + (j - i));
        const added = src.tokenOffsets[a.row + (j - i)]! - src.tokenOffsets[a.row]!;
        if (topUp) this.#toppedUp += added;
        budget += added;
      }
      i = j;
      if (budget >= CHUNK_TOKENS) {
        budget = 0;
        await yieldNow();
      }
    }
  }

  #fail(bank: string, slot: Slot, error: unknown): void {
    this.#failures.push(`${bank}: ${String(error)}`);
    slot.graph?.dispose();
    slot.graph = undefined;
    slot.ready = false;
  }
}

const asVersions = new WeakMap<SegmentRows, VersionRows>();

/** A store batch or segment as {@link VersionRows}. */
function versionRows(rows: SegmentRows): VersionRows {
  let v = asVersions.get(rows);
  if (v === undefined) {
    const e = rows.encoded;
    v = {
      dim: e.dim,
      ids: rows.ids,
      seqs: rows.seqs,
      pooled: e.pooled,
      tokenOffsets: e.tokenOffsets,
      tokenVectors: e.tokenVectors,
    };
    asVersions.set(rows, v);
  }
  return v;
}

function fingerprint(ref: RowRef, dim: number): number {
  return pooledFingerprint(ref.source.encoded.pooled, ref.row, dim);
}

function liveTokens(rows: ReadonlyMap<string, RowRef> | undefined): number {
  let n = 0;
  if (rows !== undefined)
    for (const { source, row } of rows.values())
      n += source.encoded.tokenOffsets[row + 1]! - source.encoded.tokenOffsets[row]!;
  return n;
}
