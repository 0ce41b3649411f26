import { failpoint } from '../../log/faults.js';
import { BankGraph, type GraphParams } from './bank-graph.js';
import { Gate, MAX_BUILDS, graphBytesPerToken, leastRecent } from './budget.js';
import { graphBanks, loadGraph, removeGraphGarbage, saveGraph } from './graph-files.js';
import type { GraphHnswMaker } from './graph-hnsw.js';
import type { IndexLink, IndexedStore, StoreChange } from './link.js';
import { fingerprint, liveTokens, mostlyStale, versionRows } from './version-rows.js';

export type { IndexLink, IndexedStore, StoreChange } from './link.js';

interface Slot {
  graph: BankGraph | undefined;
  /** Holds every live version of its bank (until then searches run exactly). */
  ready: boolean;
  /** Generation of the graph files on disk (0: none). */
  generation: number;
  building: Promise<void> | undefined;
  /** A rebuild from the live rows under way (the graph serves meanwhile). */
  compacting: Promise<void> | undefined;
  /** When its graph was last asked for ({@link GraphKeeper.graph}'s count). */
  used: number;
}

/** Rows a build or top-up hands a graph at once (it checks whether to go on between them). */
const SYNC_ROWS = 64;

/**
 * Keeps one {@link BankGraph} per large bank in step with the store: builds or loads it in the
 * background (loading tops up the versions the file lacks and removes those it holds in
 * excess), applies every write to it (queued, in write order, after the write is acknowledged:
 * no write waits for a graph), saves it under `graphs/` (after flushes, once enough changed,
 * and at close). The usearch indexes live where `maker` puts them (a worker thread for a
 * store). Any failure drops that bank's graph (its searches run exactly): a graph is derived
 * data and never fails a write.
 */
export class GraphKeeper implements IndexLink {
  readonly #slots = new Map<string, Slot>();
  readonly #opened: Record<string, string> = {};
  readonly #failures: string[] = [];
  #toppedUp = 0;
  #saves = 0;
  #compactions = 0;
  #evictions = 0;
  /** Asks for a graph so far (each slot's `used` is one of them). */
  #asks = 0;
  /** Builds and loads run one at a time. */
  readonly #gate = new Gate(MAX_BUILDS);
  #closing = false;
  #disabled = false;
  /** Writes not yet applied to the graphs, in order. */
  #queue: Promise<void> = Promise.resolve();
  /** Writes queued and not yet applied. */
  #backlog = 0;

  constructor(
    readonly store: IndexedStore,
    readonly params: GraphParams,
    readonly saveFraction: number,
    readonly minTokens: number,
    /** A graph that removed more tokens than this share of its live ones is rebuilt. */
    readonly compactRemoved: number,
    /** Where the graphs' usearch indexes live. */
    readonly maker: GraphHnswMaker,
    /**
     * Bytes of graphs held in memory (estimated: {@link graphBytesPerToken}); past it the least
     * recently searched ready graphs are saved and dropped (loaded again at their next search).
     */
    readonly maxBytes: number = Number.POSITIVE_INFINITY,
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
    // Loaded now while they fit the budget; the others at their first search.
    let bytes = 0;
    for (const bank of await graphBanks(this.store.dir)) {
      const tokens = liveTokens(this.store.liveRows(bank));
      if (tokens <= this.minTokens) continue;
      bytes += tokens * this.#perToken;
      if (bytes > this.maxBytes) break;
      this.#start(bank);
    }
  }

  /** The bank's graph when it holds every live version; otherwise starts it and returns undefined. */
  graph(bank: string): BankGraph | undefined {
    if (this.#disabled || this.#closing) return undefined;
    const slot = this.#slots.get(bank);
    if (slot === undefined) {
      this.#start(bank);
      return undefined;
    }
    slot.used = ++this.#asks;
    return slot.ready ? slot.graph : undefined;
  }

  /** Estimated bytes a graph holds per token (vector, links, node header). */
  get #perToken(): number {
    return graphBytesPerToken(this.store.dim, this.params);
  }

  /** Estimated bytes of the graphs held now. */
  get heldBytes(): number {
    let tokens = 0;
    for (const slot of this.#slots.values()) tokens += slot.graph?.tokens ?? 0;
    return tokens * this.#perToken;
  }

  async settled(): Promise<void> {
    for (;;) {
      await this.#queue; // what a build queued on its end (a save and drop) included
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
      evictions: this.#evictions,
      heldBytes: this.heldBytes,
      failures: [...this.#failures],
    };
  }

  /**
   * Queues the change (the write is acknowledged without waiting for the graph: a search reads
   * the graph against its own snapshot, so one behind its writes stays exact). Changes apply in
   * write order.
   */
  applied(change: StoreChange): Promise<void> {
    this.#backlog++;
    void this.#enqueue(() => this.#apply(change).finally(() => this.#backlog--));
    return Promise.resolve();
  }

  /** Writes acknowledged that the graphs have not applied yet. */
  get backlog(): number {
    return this.#backlog;
  }

  /** Runs `step` after the steps queued before it; the queue goes on whatever it does. */
  #enqueue(step: () => Promise<void>): Promise<void> {
    const run = this.#queue.then(step);
    this.#queue = run.catch(() => undefined);
    return run;
  }

  async #apply(change: StoreChange): Promise<void> {
    const bank = change.kind === 'add' ? change.rows.bank : change.bank;
    const slot = this.#slots.get(bank);
    const graph = slot?.graph;
    if (slot === undefined || graph === undefined) return; // not loaded yet: its sync catches up
    try {
      if (change.kind === 'delete') await Promise.all(change.ids.map((id) => graph.removeId(id)));
      else await graph.addRows(versionRows(change.rows), 0, change.rows.ids.length);
      if (this.#backlog > 1) failpoint('graph-apply');
    } catch (error) {
      if (slot.graph === graph) this.#fail(bank, slot, error);
    }
  }

  /** After a flush: queued behind the writes applied so far (the flush does not wait for it). */
  flushed(): Promise<void> {
    void this.#enqueue(() => this.#afterFlush());
    return Promise.resolve();
  }

  async #afterFlush(): Promise<void> {
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
    this.#fit(leastRecent(this.#slots, () => true, -1)?.[0]); // writes grew the graphs
  }

  /**
   * Rebuilds a graph that holds many removed tokens (usearch keeps a removed node in the graph,
   * marked, so searches walk past it) from the bank's live rows, in the background: the old
   * graph serves searches and takes writes meanwhile; the new one is brought to the live rows
   * in one step of the write queue (no write is applied to either graph meanwhile) and swapped
   * in. The old graph is disposed; a search that still holds it runs exactly.
   */
  #compact(bank: string, slot: Slot): void {
    const old = slot.graph!;
    const current = (): boolean => !this.#closing && slot.graph === old;
    let fresh: BankGraph | undefined;
    slot.compacting = (async () => {
      fresh = await BankGraph.create(bank, this.store.dim, this.params, this.maker);
      const g = fresh;
      await this.#sync(bank, g, current, false);
      // The last step runs between two applied writes: the writes queued after it go to `g`.
      await this.#enqueue(async () => {
        if (!current()) return;
        const live = this.store.liveRows(bank);
        const changes: Promise<unknown>[] = [];
        for (const e of [...g.entries()])
          if (live?.get(e.id)?.seq !== e.seq) changes.push(g.removeId(e.id));
        for (const ref of live?.values() ?? [])
          if (g.entryOfSeq(ref.seq) === undefined)
            changes.push(g.addRows(versionRows(ref.source), ref.row, ref.row + 1));
        await Promise.all(changes);
        if (!current()) return;
        g.changedTokens = g.tokens; // saved at the next flush or close
        slot.graph = g;
        old.dispose();
        this.#compactions++;
      });
      if (slot.graph !== g) g.dispose();
    })()
      .catch((error: unknown) => {
        fresh?.dispose();
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
    await this.maker.close();
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
      used: ++this.#asks,
    };
    this.#slots.set(bank, slot);
    slot.building = (async () => {
      await this.#gate.enter();
      if (this.#closing) return;
      const { dir, model, dim } = this.store;
      const loaded = await loadGraph(dir, bank, model, dim, this.params, this.maker);
      slot.generation = loaded.generation;
      if (this.#closing) return loaded.graph?.dispose();
      slot.graph = loaded.graph ?? (await BankGraph.create(bank, dim, this.params, this.maker));
      this.#opened[bank] = loaded.graph !== undefined ? 'loaded' : `built (${loaded.reason})`;
      if (
        loaded.graph !== undefined &&
        mostlyStale(this.store.liveRows(bank), loaded.graph, this.store.dim)
      ) {
        loaded.graph.dispose();
        slot.graph = await BankGraph.create(bank, dim, this.params, this.maker);
        this.#opened[bank] = 'built (mostly stale)';
      }
      const graph = slot.graph;
      await this.#sync(bank, graph, () => !this.#closing && slot.graph === graph, true);
      if (slot.graph !== undefined && !this.#closing) slot.ready = true;
    })()
      .catch((error: unknown) => this.#fail(bank, slot, error))
      .finally(() => {
        slot.building = undefined;
        this.#gate.leave();
        if (slot.ready) this.#fit(bank);
      });
  }

  /**
   * Brings the graphs held within {@link maxBytes}: the least recently searched ready graph
   * other than `keep`'s is saved (when it changed since its file) and dropped, until they fit
   * or none is left to drop. Runs as a step of the write queue, so no write is applied to a
   * graph while it is saved; a search still holding a dropped graph runs exactly.
   */
  #fit(keep: string | undefined): void {
    if (this.heldBytes <= this.maxBytes) return;
    void this.#enqueue(async () => {
      while (!this.#closing && this.heldBytes > this.maxBytes) {
        const victim = leastRecent(
          this.#slots,
          (bank, s) =>
            bank !== keep && s.ready && s.building === undefined && s.compacting === undefined,
        );
        if (victim === undefined) return;
        const [bank, slot] = victim;
        if (slot.generation === 0 || slot.graph!.changedTokens > 0) await this.#save(bank, slot);
        slot.graph?.dispose();
        slot.graph = undefined;
        slot.ready = false;
        if (this.#slots.get(bank) === slot) this.#slots.delete(bank);
        this.#evictions++;
      }
    });
  }

  /**
   * Brings `graph` to the bank's live versions: removes the versions it holds that are not live
   * (or whose fingerprint differs: another store's file), then adds the live ones it lacks,
   * {@link SYNC_ROWS} rows at a time, each row checked again when its turn comes (writes go on
   * meanwhile and are applied to the graph in between), while `wanted()`. Tokens added count as
   * topped up when `topUp`.
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
    const stale: Promise<void>[] = [];
    for (const e of [...graph.entries()]) {
      const ref = live.get(e.id);
      if (ref === undefined || ref.seq !== e.seq || fingerprint(ref, dim) !== e.fp)
        stale.push(graph.removeId(e.id));
    }
    await Promise.all(stale);
    const todo = [...live.values()].filter((ref) => graph.entryOfSeq(ref.seq) === undefined);
    for (let i = 0; i < todo.length;) {
      if (!wanted() || graph.disposed) return;
      const a = todo[i]!;
      let j = i + 1;
      while (
        j < todo.length &&
        j - i < SYNC_ROWS &&
        todo[j]!.source === a.source &&
        todo[j]!.row === a.row + (j - i)
      )
        j++;
      const src = versionRows(a.source);
      const isLive = (row: number): boolean =>
        this.store.liveRows(bank)?.get(src.ids[row]!)?.seq === src.seqs[row];
      const added = await graph.addRows(src, a.row, a.row + (j - i), isLive);
      if (topUp) this.#toppedUp += added;
      i = j;
    }
  }

  #fail(bank: string, slot: Slot, error: unknown): void {
    this.#failures.push(`${bank}: ${String(error)}`);
    slot.graph?.dispose();
    slot.graph = undefined;
    slot.ready = false;
  }
}
