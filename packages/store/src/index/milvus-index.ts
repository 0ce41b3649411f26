import { ExactTokenIndex, type SimilarityKernel, type TokenIndex } from '@bfe/index';
import type { MilvusOptions, MilvusSide, TokenCollection } from '@bfe/index-milvus';
import type { TokenIndexFactory } from '../search/search.js';
import type { BankView } from '../types.js';
import { viewTokens } from '../view-tokens.js';

/** What a {@link milvusIndexFactory} does while Milvus is away. */
export interface MilvusFactoryOptions {
  /**
   * `exact` (default): a search whose sync or Milvus request fails as unavailable (a retryable
   * `MilvusRequestError`: the server down, restarting, unreachable) is answered by the exact
   * backend from the store's own segments, and the next search syncs again. `error`: it fails
   * with that error.
   */
  readonly whenUnavailable?: 'exact' | 'error';
}

/** A {@link TokenIndexFactory} over a Milvus collection: {@link dispose} closes the connection. */
export interface MilvusIndexFactory extends TokenIndexFactory {
  /** What the factory has written to Milvus so far. */
  readonly counts: () => {
    readonly syncs: number;
    readonly rows: number;
    readonly deletes: number;
    /** Searches answered exactly from the store's own segments while Milvus was away. */
    readonly fallbacks: number;
  };
  /** Closes the connection (the collection and its rows stay on the server). */
  readonly dispose: () => Promise<void>;
}

interface BankState {
  /** memory id → the write sequences its rows in Milvus carry. */
  readonly mirror: Map<string, number[]>;
  /** The version of the last view synced (-Infinity: none yet). */
  version: number;
}

/**
 * The store's token index on Milvus (`index: milvusIndexFactory('milvus://host:port')`): one row
 * per content token of every bank (`@bfe/index-milvus`, the bank name as partition key), kept in
 * step with the store's writes. The first search of a bank view syncs the collection to it —
 * an add inserts the memory's rows, a delete deletes them, an update does both — by comparing
 * each memory's write sequence with the rows Milvus holds (read back from the server the first
 * time a bank is seen, so a reopened store, or one whose last sync was interrupted, converges).
 * Syncs run one at a time and only forward (a view older than the last synced one is searched
 * by the exact backend instead, as is one whose memories Milvus no longer holds). The store's
 * WAL and segments stay the source of truth; Milvus is a derived index: while it is away (killed,
 * restarting, unreachable) the store's writes are acknowledged as always, searches are answered
 * exactly from the store's segments (or fail with the retryable error, `whenUnavailable:
 * 'error'`), and the first search after it returns syncs each bank by write sequence. Not covered: a search
 * of an older snapshot whose index was handed out just before a newer view's sync deleted rows
 * it reads (a read racing a write of the same bank) may miss those rows' tokens.
 *
 * Searches then run in Milvus (FLAT: the same top-k as the exact backend, ties included; HNSW:
 * approximate), and MaxSim's per-memory best runs on the scorer's kernel. The caller owns the
 * factory: `dispose` it after closing the store.
 *
 * @example
 * const index = milvusIndexFactory({ address: 'milvus://127.0.0.1:19530', collection: 'notes' });
 * const store = await MemoryStore.open(dir, { model: 'all-minilm-l6-v2', index });
 * await store.search({ bank: 'alice', query: 'pets?' }); // Milvus proposes the tokens
 * await store.close();
 * await index.dispose();
 */
export function milvusIndexFactory(
  options: MilvusOptions | string,
  behaviour: MilvusFactoryOptions = {},
): MilvusIndexFactory {
  const fallback = (behaviour.whenUnavailable ?? 'exact') === 'exact';
  let collection: Promise<TokenCollection> | undefined;
  const banks = new Map<string, Promise<BankState>>();
  const perView = new WeakMap<
    BankView,
    Map<SimilarityKernel, { index: TokenIndex; generation: number }>
  >();
  /** Per bank, the syncs so far. */
  const generations = new Map<string, number>();
  let queue: Promise<unknown> = Promise.resolve();
  const counts = { syncs: 0, rows: 0, deletes: 0, fallbacks: 0 };
  const lib = () => import('@bfe/index-milvus');

  const open = (dim: number): Promise<TokenCollection> => {
    if (collection === undefined) {
      const opening = lib().then(({ TokenCollection }) => TokenCollection.open(options, dim));
      collection = opening;
      // A failed open (the server away) is retried by the next search.
      opening.catch(() => {
        if (collection === opening) collection = undefined;
      });
    }
    return collection;
  };
  const bankState = (c: TokenCollection, bank: string): Promise<BankState> => {
    let state = banks.get(bank);
    if (state === undefined) {
      state = c.memories(bank).then((mirror) => ({ mirror, version: -Infinity }));
      banks.set(bank, state);
      state.catch(() => banks.delete(bank));
    }
    return state;
  };

  const build = async (view: BankView, kernel: SimilarityKernel): Promise<TokenIndex> => {
    const { seqs, version } = view;
    if (seqs === undefined || version === undefined) {
      throw new Error('milvusIndexFactory: the view has no write sequences (not a store view)');
    }
    const { MilvusTokenIndex, memoryRows } = await lib();
    const c = await open(view.dim);
    const state = await bankState(c, view.bank);
    const side: MilvusSide = {
      tokens: viewTokens(view),
      tokenOffsets: view.tokenOffsets,
      ids: view.ids,
      banks: view.ids.map(() => view.bank),
      seqs,
    };
    const { missing, extra } = diff(view, state.mirror);
    if (missing.length > 0 || extra.length > 0) {
      // Only forward: an older snapshot is searched exactly, never synced back to.
      if (version < state.version) return new ExactTokenIndex(side, kernel);
      const changed = [...extra, ...missing.map((m) => view.ids[m]!)];
      const stale = changed.filter((id) => state.mirror.has(id));
      try {
        if (stale.length > 0) await c.deleteMemories(view.bank, stale);
        for (const id of stale) state.mirror.delete(id);
        counts.deletes += stale.length;
        const inserted = await c.insert(view.bank, memoryRows(side, missing));
        counts.rows += inserted;
        // A bulk load is sealed into segments: Milvus Lite searches unflushed rows slowly.
        if (inserted >= c.options.insertBatch) await c.flush();
      } catch (error) {
        // Part of the writes may have landed: read the bank back from Milvus next time.
        banks.delete(view.bank);
        generations.set(view.bank, (generations.get(view.bank) ?? 0) + 1);
        throw error;
      }
      for (const m of missing) state.mirror.set(view.ids[m]!, [seqs[m]!]);
      counts.syncs++;
      generations.set(view.bank, (generations.get(view.bank) ?? 0) + 1);
    }
    state.version = Math.max(state.version, version);
    return new MilvusTokenIndex(c, side, {
      kernel,
      ...(fallback ? { onUnavailable: () => void counts.fallbacks++ } : {}),
    });
  };

  /** The view's exact index when Milvus is away and the factory falls back; else rethrows. */
  const away = async (error: unknown, view: BankView, kernel: SimilarityKernel) => {
    const { MilvusRequestError } = await lib();
    if (!fallback || !(error instanceof MilvusRequestError) || !error.retryable) throw error;
    counts.fallbacks++;
    const tokens = viewTokens(view);
    const side = { tokens, tokenOffsets: view.tokenOffsets, ids: view.ids };
    const exact = new ExactTokenIndex(side, kernel);
    // Its search only: the results and their explanations are the store's default path's.
    const index: TokenIndex = {
      backend: exact.backend,
      codec: exact.codec,
      dim: exact.dim,
      size: exact.size,
      search: (queries, rows, k, options) => exact.search(queries, rows, k, options),
    };
    return index;
  };

  const factory = (view: BankView, kernel: SimilarityKernel): Promise<TokenIndex> => {
    // One at a time: a sync reads and updates the mirror, and an index built before another
    // sync of its bank is built again (that sync may have deleted rows its view still holds).
    const run = queue.then(async () => {
      let byKernel = perView.get(view);
      if (byKernel === undefined) perView.set(view, (byKernel = new Map()));
      const cached = byKernel.get(kernel);
      if (cached !== undefined && cached.generation === (generations.get(view.bank) ?? 0))
        return cached.index;
      let index: TokenIndex;
      try {
        index = await build(view, kernel);
      } catch (error) {
        return away(error, view, kernel); // not cached: the next search tries Milvus again
      }
      byKernel.set(kernel, { index, generation: generations.get(view.bank) ?? 0 });
      return index;
    });
    queue = run.catch(() => undefined); // a failed sync is retried by the next search
    return run;
  };
  return Object.assign(factory, {
    counts: () => ({ ...counts }),
    dispose: async () => {
      const c = collection;
      collection = undefined;
      banks.clear();
      await queue;
      if (c !== undefined) await (await c).close();
    },
  });
}

/**
 * The view's rows Milvus lacks (memories with tokens whose write is not there alone), and the
 * ids Milvus holds that the view does not (deleted memories, or a memory's other write).
 */
function diff(
  view: BankView,
  mirror: ReadonlyMap<string, number[]>,
): { missing: number[]; extra: string[] } {
  const missing: number[] = [];
  const live = new Set<string>();
  const { ids, tokenOffsets, seqs } = view;
  for (let m = 0; m < ids.length; m++) {
    if (tokenOffsets[m + 1] === tokenOffsets[m]) continue; // no tokens, no rows
    live.add(ids[m]!);
    const have = mirror.get(ids[m]!);
    if (have === undefined || have.length !== 1 || have[0] !== seqs![m]) missing.push(m);
  }
  const extra: string[] = [];
  for (const id of mirror.keys()) if (!live.has(id)) extra.push(id);
  return { missing, extra };
}
