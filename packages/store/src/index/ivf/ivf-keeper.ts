import type { SimilarityKernel } from '@bfe/index';
import type { RowRef } from '../../log/live-rows.js';
import { Gate, MAX_BUILDS } from '../graph/budget.js';
import type { IndexLink, IndexedStore, StoreChange } from '../graph/link.js';
import { liveTokens } from '../graph/version-rows.js';
import { IvfBank, type IvfBankParams } from './ivf-bank.js';
import { findIvf, removeIvfGarbage, saveIvf } from './ivf-files.js';

/** The predeclared policy an {@link IvfKeeper} keeps its banks' indexes by. */
export interface IvfPolicy extends IvfBankParams {
  /** Banks with more live content tokens than this get an index. */
  readonly minTokens: number;
  /** `compact` re-clusters past this drift. */
  readonly driftThreshold: number;
  /** A flush compacts an index whose tails and tombstoned tokens exceed this share of its live ones. */
  readonly compactShare: number;
  /** A flush rebuilds an index whose dead rows hold more tokens than this share of its live ones. */
  readonly rebuildDead: number;
}

interface Slot {
  /** The bank's index once it holds every live version (searches run exactly until then). */
  bank: IvfBank | undefined;
  /** A build or rebuild under way (the current index, if any, serves meanwhile). */
  building: Promise<void> | undefined;
  /** The generation of the bank's last saved index (0: none saved yet). */
  generation: number;
  /** The slot's saves in call order (each waits for the one before). */
  saving: Promise<void>;
}

/** Counters of the IVF indexes' work. */
export interface IvfKeeperStats {
  readonly banks: Readonly<
    Record<
      string,
      {
        readonly tokens: number;
        readonly liveTokens: number;
        readonly versions: number;
        readonly centroids: number;
        readonly tailTokens: number;
        readonly appendedTokens: number;
        readonly drift: number;
        readonly compactions: number;
        readonly reclusters: number;
        readonly heldBytes: number;
      }
    >
  >;
  /** Indexes trained from live rows (first builds and rebuilds for dead rows). */
  readonly builds: number;
  /** Indexes read from their saved files at a reopened store's first search (not trained). */
  readonly loads: number;
  /** Index files written (after a build and after a compaction). */
  readonly saves: number;
  readonly rebuilds: number;
  readonly failures: readonly string[];
}

/**
 * Keeps one {@link IvfBank} per large bank in step with the store, as `GraphKeeper` keeps
 * graphs: trained in the background at the bank's first search (from its live rows, then
 * caught up in one step of the write queue), then every write applied to it after its
 * acknowledgement, in write order — an add appends the new versions, an update tombstones the
 * old version and appends the new, a delete tombstones. After a flush an index whose tails and
 * tombstones passed `compactShare` is compacted (re-clustered past the drift threshold), and
 * one whose dead rows passed `rebuildDead` is trained again from the live rows in the background
 * (the old one serving meanwhile); a store compaction compacts the bank's index. Each index is
 * saved when laid out (trained, or compacted: `ivf-files.ts`); a reopened store reads a bank's
 * saved index by position at its first search and catches it up from the live rows instead of
 * training again. A failure drops the bank's index (searched exactly), never a write.
 */
export class IvfKeeper implements IndexLink {
  readonly #slots = new Map<string, Slot>();
  readonly #failures: string[] = [];
  readonly #gate = new Gate(MAX_BUILDS);
  #builds = 0;
  #loads = 0;
  #saves = 0;
  #rebuilds = 0;
  #garbage: Promise<unknown> | undefined;
  #closing = false;
  #queue: Promise<void> = Promise.resolve();

  /** The kernel indexes train and search on: the first large search's. */
  kernel: SimilarityKernel | undefined;

  constructor(
    readonly store: IndexedStore,
    readonly policy: IvfPolicy,
  ) {}

  get closed(): boolean {
    return this.#closing;
  }

  /** The bank's index when it holds every live version; else starts it and returns undefined. */
  bank(bank: string, kernel: SimilarityKernel): IvfBank | undefined {
    if (this.#closing) return undefined;
    this.kernel ??= kernel;
    const slot = this.#slots.get(bank);
    if (slot === undefined) {
      const fresh: Slot = {
        bank: undefined,
        building: undefined,
        generation: 0,
        saving: Promise.resolve(),
      };
      this.#slots.set(bank, fresh);
      this.#build(bank, fresh);
      return undefined;
    }
    return slot.bank;
  }

  async settled(): Promise<void> {
    for (;;) {
      await this.#queue;
      const pending = [...this.#slots.values()].flatMap((s) => s.building ?? []);
      if (pending.length === 0) return;
      await Promise.all(pending);
    }
  }

  applied(change: StoreChange): Promise<void> {
    void this.#enqueue(() => this.#apply(change));
    return Promise.resolve();
  }

  flushed(): Promise<void> {
    void this.#enqueue(() => this.#afterFlush());
    return Promise.resolve();
  }

  /** After a store compaction of `bank`: its index is laid out again (re-clustered past drift). */
  compacted(bank: string): Promise<void> {
    void this.#enqueue(async () => {
      const slot = this.#slots.get(bank);
      if (slot?.bank !== undefined && !this.#closing) await this.#compact(bank, slot, slot.bank);
    });
    return Promise.resolve();
  }

  async close(): Promise<void> {
    await this.#queue;
    this.#closing = true;
    await this.settled();
    for (const slot of this.#slots.values()) {
      await slot.bank?.dispose();
      slot.bank = undefined;
    }
  }

  stats(): IvfKeeperStats {
    const banks: Record<string, IvfKeeperStats['banks'][string]> = {};
    for (const [name, slot] of this.#slots) {
      const b = slot.bank;
      if (b === undefined) continue;
      banks[name] = {
        tokens: b.tokens,
        liveTokens: b.liveTokens,
        versions: b.liveVersions,
        centroids: b.index.data.clusterOffsets.length - 1,
        tailTokens: b.index.tailTokens,
        appendedTokens: b.appendedTokens,
        drift: b.index.drift,
        compactions: b.compactions,
        reclusters: b.reclusters,
        heldBytes: b.heldBytes,
      };
    }
    const failures = [...this.#failures];
    const [builds, loads, saves, rebuilds] = [
      this.#builds,
      this.#loads,
      this.#saves,
      this.#rebuilds,
    ];
    return { banks, builds, loads, saves, rebuilds, failures };
  }

  /** Runs `step` after the steps queued before it; the queue goes on whatever it does. */
  #enqueue(step: () => Promise<void>): Promise<void> {
    const run = this.#queue.then(step);
    this.#queue = run.catch(() => undefined);
    return run;
  }

  async #apply(change: StoreChange): Promise<void> {
    const name = change.kind === 'add' ? change.rows.bank : change.bank;
    const slot = this.#slots.get(name);
    const bank = slot?.bank;
    if (slot === undefined || bank === undefined) return; // a build catches up at its end
    try {
      if (change.kind === 'delete') await bank.kill(change.ids);
      else {
        const { rows } = change;
        const fresh: RowRef[] = [];
        // Rows at or below the index's last sequence were caught up from the live rows (or
        // superseded since): only later ones are appended.
        for (let row = 0; row < rows.ids.length; row++)
          if (rows.seqs[row]! > bank.maxSeq)
            fresh.push({ source: rows, row, seq: rows.seqs[row]! });
        // Both changes are handed to the index in one step (searches see both or neither).
        await Promise.all([bank.kill(fresh.map((r) => rows.ids[r.row]!)), bank.append(fresh)]);
      }
    } catch (error) {
      if (slot.bank === bank) await this.#fail(name, slot, error);
    }
  }

  async #afterFlush(): Promise<void> {
    const { compactShare, rebuildDead } = this.policy;
    for (const [name, slot] of this.#slots) {
      const bank = slot.bank;
      if (bank === undefined || slot.building !== undefined || this.#closing) continue;
      const live = Math.max(bank.liveTokens, 1);
      if (bank.deadTokens > rebuildDead * live) {
        this.#rebuilds++;
        this.#build(name, slot);
      } else if (bank.unlaidTokens > compactShare * live) await this.#compact(name, slot, bank);
    }
  }

  async #compact(name: string, slot: Slot, bank: IvfBank): Promise<void> {
    try {
      await bank.compact(this.policy.driftThreshold, this.policy);
      // Laid out: saved, so a reopened store reads it rather than training again.
      if (!this.#closing) await this.#save(name, slot, bank);
    } catch (error) {
      if (slot.bank === bank) await this.#fail(name, slot, error);
    }
  }

  /**
   * Trains an index over the bank's live rows in the background, then — one step of the write
   * queue, between two applied writes — tombstones what it holds that is no longer live,
   * appends the live versions written since (all after its rows), and puts it in the slot
   * (a previous index is disposed).
   */
  #build(name: string, slot: Slot): void {
    slot.building = (async () => {
      await this.#gate.enter();
      try {
        const live = this.store.liveRows(name);
        if (this.#closing || this.kernel === undefined || live === undefined) return;
        if (liveTokens(live) <= this.policy.minTokens && slot.bank === undefined)
          return void this.#slots.delete(name); // asked again at a later search
        const fresh =
          (slot.bank === undefined ? await this.#load(name, slot, live) : undefined) ??
          (await this.#train(name, slot, live));
        await this.#enqueue(async () => {
          if (this.#closing) return void (await fresh.dispose());
          const now = this.store.liveRows(name) ?? new Map<string, RowRef>();
          const gone = fresh.liveEntries().filter((e) => now.get(e.id)?.seq !== e.seq);
          const later = [...now.values()]
            .filter((ref) => ref.seq > fresh.maxSeq)
            .sort((a, b) => a.seq - b.seq);
          await Promise.all([fresh.kill(gone.map((e) => e.id)), fresh.append(later)]);
          const old = slot.bank;
          slot.bank = fresh;
          await old?.dispose();
        });
      } finally {
        this.#gate.leave();
      }
    })()
      .catch((error: unknown) => this.#fail(name, slot, error))
      .finally(() => (slot.building = undefined));
  }

  /** Trains an index over `live` and saves it (laid out, before any catch-up). */
  async #train(name: string, slot: Slot, live: ReadonlyMap<string, RowRef>): Promise<IvfBank> {
    const refs = [...live.values()].sort((a, b) => a.seq - b.seq);
    const dim = this.store.dim;
    const fresh = await IvfBank.build(name, dim, refs, this.policy, this.kernel!);
    this.#builds++;
    await this.#save(name, slot, fresh);
    return fresh;
  }

  /** The bank's saved index when it matches the store and the policy (else undefined). */
  async #load(
    name: string,
    slot: Slot,
    live: ReadonlyMap<string, RowRef>,
  ): Promise<IvfBank | undefined> {
    const { dir, model, dim } = this.store;
    const { residualBits, centroids } = this.policy;
    // Files of interrupted saves go once, before the first bank's index is looked for.
    await (this.#garbage ??= removeIvfGarbage(dir).catch(() => []));
    const found = await findIvf(dir, name, { model, dim, residualBits, centroids });
    slot.generation = Math.max(slot.generation, found.generation);
    if (found.path === undefined) return undefined;
    const bySeq = new Map<number, RowRef>();
    for (const ref of live.values()) bySeq.set(ref.seq, ref);
    try {
      const bank = IvfBank.restore(name, dim, found.path, found, bySeq, this.policy, this.kernel!);
      if (bank !== undefined) this.#loads++;
      return bank;
    } catch {
      return undefined; // unreadable: trained again
    }
  }

  /**
   * Writes `bank` (laid out now: its bytes are taken before any await) as the slot's next
   * generation, after the slot's earlier saves (a rebuild's save may meet a compaction's). A
   * failed save is counted among the failures and changes nothing else: the index is derived
   * data, it still serves, and a later reopen trains it again.
   */
  async #save(name: string, slot: Slot, bank: IvfBank): Promise<void> {
    const { dir, model } = this.store;
    try {
      const snap = bank.snapshot();
      const generation = ++slot.generation;
      const write = slot.saving.then(() => saveIvf(dir, snap, model, generation));
      slot.saving = write.catch(() => undefined);
      await write;
      this.#saves++;
    } catch (error) {
      this.#failures.push(`${name}: saving the index: ${String(error)}`);
    }
  }

  async #fail(name: string, slot: Slot, error: unknown): Promise<void> {
    this.#failures.push(`${name}: ${String(error)}`);
    const bank = slot.bank;
    slot.bank = undefined;
    await bank?.dispose();
  }
}
