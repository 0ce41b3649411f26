import { resolve } from 'node:path';
import { z } from 'zod';
import { ConfigError, DataError } from '@bfe/core';
import type { CompactionReport } from './log/compaction.js';
import { checkEncoded } from './log/encoded.js';
import {
  DEFAULT_MAX_TEXT_BYTES,
  validateIds,
  validateMemories,
  type MemoryInput,
} from './input.js';
import { acquireLock } from './log/lock.js';
import { recover } from './log/recovery.js';
import type { StoreWindow } from './log/settings.js';
import { chooseIndex } from './index/index-choice.js';
import { isStoreIndexFactory } from './index/store-index.js';
import type { LexicalStats } from './lexical/store-lexicon.js';
import type { SparseScorer } from '@bfe/scorer';
import {
  searchViewWithInterventions,
  type SearchOptions,
  type SearchResult,
  type TokenIndexFactory,
} from './search/search.js';
import type { SearchInterventions } from './search/search-interventions.js';
import { Snapshot } from './log/snapshot.js';
import { storeStats, type StoreStats } from './stats.js';
import { banksOf } from './log/state.js';
import type { Embedder, MemoryMeta } from './types.js';
import { Writer } from './log/writer.js';
import type { StoreCodec, StoreSettings } from './log/settings.js';
import { DEFAULT_CACHE_BYTES, limitsSchema, type StoreOptions } from './store-options.js';

export type { StoreOptions } from './store-options.js';

/** A stored memory as `get` and `list` return it. */
export interface StoredMemory {
  readonly id: string;
  readonly bank: string;
  readonly text: string;
  readonly meta: MemoryMeta | undefined;
}

/** A search request: the bank, the query text, and the ranking options. */
export type SearchRequest = Omit<SearchOptions, 'queryText'> & {
  readonly bank: string;
  readonly query: string;
};

/**
 * An incremental, crash-safe memory store: memories (id, bank, text, metadata) with their
 * encoded pooled and content-token vectors. Writes go to a write-ahead log (fsync before they
 * are acknowledged) and a memtable; flushes write immutable Arrow segments per bank; deletes
 * are tombstones; compaction merges a bank's segments in the background; reads go through
 * immutable snapshots. One process writes a store directory at a time (a `LOCK` file naming
 * its pid and start time). See README.md for the files and guarantees.
 * @example
 * const store = await MemoryStore.open('/data/memories', { model: 'all-minilm-l6-v2' });
 * await store.add([{ id: 'm1', bank: 'alice', text: 'Alice adopted a cat in May.' }]);
 * store.get('alice', 'm1')?.text; // 'Alice adopted a cat in May.'
 * await store.close();
 */
export class MemoryStore {
  readonly #writer: Writer;
  readonly #embedder: Embedder;
  readonly #ownsEmbedder: boolean;
  readonly #maxTextBytes: number;
  readonly #index: TokenIndexFactory;
  readonly #ownIndex: { dispose: () => Promise<void> } | undefined;
  readonly #threads: number | undefined;
  /** The store's window (kept in MANIFEST.json): every add and update is encoded in it. */
  readonly #window: StoreWindow | undefined;
  #scorer: Promise<SparseScorer> | undefined;
  readonly #ownsScorer: boolean;
  #closed = false;
  /** Searches under way: `close` waits for them before it disposes what they use. */
  readonly #searches = new Set<Promise<unknown>>();

  private constructor(
    writer: Writer,
    embedder: Embedder,
    owns: boolean,
    options: StoreOptions,
    index: TokenIndexFactory,
    ownIndex: { dispose: () => Promise<void> } | undefined,
  ) {
    this.#writer = writer;
    this.#embedder = embedder;
    this.#ownsEmbedder = owns;
    this.#maxTextBytes = options.maxTextBytes ?? DEFAULT_MAX_TEXT_BYTES;
    this.#scorer = options.scorer === undefined ? undefined : Promise.resolve(options.scorer);
    this.#ownsScorer = options.scorer === undefined;
    this.#threads = options.threads;
    this.#window = options.window ?? undefined;
    this.#ownIndex = ownIndex;
    this.#index = index;
  }

  /**
   * Opens (creating) the store in `dir`: takes the writer lock, loads and verifies the
   * segments, removes garbage of interrupted writes and replays the WAL.
   * @throws StoreLockedError when another live process (or store) has it open
   * @throws ArtifactCorruptError naming a corrupt segment or manifest
   * @throws ConfigError when the store holds another model's vectors, or its window does not
   * fit the model (the model's encoder refuses it)
   */
  static async open(dir: string, options: StoreOptions = {}): Promise<MemoryStore> {
    const limits = limitsSchema.safeParse(options);
    if (!limits.success)
      throw new ConfigError(`MemoryStore.open: ${z.prettifyError(limits.error)}`);
    const root = resolve(dir);
    const owns = options.embedder === undefined;
    // The encoder (onnxruntime) loads only when the store opens a model itself.
    const embedder =
      options.embedder ??
      (await (
        await import('./encode/embedder.js')
      ).openEmbedder({
        model: options.model ?? 'all-minilm-l6-v2',
        ...(options.maxLength === undefined ? {} : { maxLength: options.maxLength }),
        ...(options.threads === undefined ? {} : { threads: options.threads }),
      }));
    let release: (() => Promise<void>) | undefined;
    let own: { dispose: () => Promise<void> } | undefined;
    try {
      release = await acquireLock(root);
      const recovered = await recover(root, embedder.model, embedder.dim, {
        ...(options.codec === undefined ? {} : { codec: options.codec }),
        ...(options.window === undefined ? {} : { window: options.window }),
        cacheBytes: options.cacheBytes ?? DEFAULT_CACHE_BYTES,
      });
      const writer = new Writer(root, recovered, release, {
        model: embedder.model,
        dim: embedder.dim,
        flushBytes: options.flushBytes ?? 32 * 1024 * 1024,
        compactSegments: options.compactSegments ?? 8,
        bm25Language: options.bm25Language ?? 'none',
        groupCommit: options.groupCommit ?? true,
      });
      const { index, own: owned } = chooseIndex(options.index, options.threads);
      own = owned;
      if (isStoreIndexFactory(index)) {
        writer.listener = await index.attach({
          dir: root,
          model: embedder.model,
          dim: embedder.dim,
          liveRows: (bank) => writer.live.rows(bank),
        });
      }
      // The window the store keeps (given now, or recorded when it was created); one the model
      // cannot run (beyond its positions, a pooling other than the mean) is refused here.
      const window = recovered.settings.window ?? null;
      if (window !== null) await embedder.encode([], 'passage', { window });
      return new MemoryStore(writer, embedder, owns, { ...options, window }, index, own);
    } catch (error) {
      await own?.dispose();
      await release?.();
      if (owns) await embedder.dispose();
      throw error;
    }
  }

  /** The store's directory. */
  get dir(): string {
    return this.#writer.dir;
  }

  /** What the last open recovered: WAL records replayed, torn bytes cut, garbage removed. */
  get recovery(): Writer['recovery'] {
    return this.#writer.recovery;
  }

  /**
   * Adds new memories (any banks; the call is atomic). Resolves once they are durable.
   * @throws MemoryInputError for invalid input or an id that already exists (store unchanged)
   */
  async add(items: readonly MemoryInput[]): Promise<{ ids: string[] }> {
    return this.#write(items, false);
  }

  /**
   * Replaces existing memories (text, metadata and vectors) atomically.
   * @throws MemoryInputError for invalid input or an id that does not exist (store unchanged)
   */
  async update(items: readonly MemoryInput[]): Promise<{ ids: string[] }> {
    return this.#write(items, true);
  }

  async #write(items: readonly MemoryInput[], update: boolean): Promise<{ ids: string[] }> {
    this.#open();
    const memories = validateMemories(items, this.#maxTextBytes);
    this.#writer.checkExistence(memories, update); // fail before encoding; rechecked at commit
    const window = this.#window;
    const encoded = await this.#embedder.encode(
      memories.map((m) => m.text),
      'passage',
      window === undefined ? {} : { window },
    );
    checkEncoded(encoded, memories.length, this.#embedder.dim);
    // A windowed pass cuts nothing: a cut memory means an embedder that dropped the window.
    if (window !== undefined && encoded.truncated.includes(1))
      throw new Error(
        `the store encodes memories in windows of ${window.size}, but its embedder truncated one: the embedder does not pass EmbedOptions.window on`,
      );
    await this.#writer.commitAdd(memories, encoded, update);
    return { ids: memories.map((m) => m.id) };
  }

  /** Deletes memories of one bank; ids it does not hold are reported, not an error. */
  async delete(
    ids: readonly string[],
    options: { readonly bank: string },
  ): Promise<{ deleted: string[]; unknown: string[] }> {
    this.#open();
    const valid = validateIds(ids, options.bank);
    return this.#writer.commitDelete(valid.bank, valid.ids);
  }

  /** The current version of a memory, or `undefined`. */
  get(bank: string, id: string): StoredMemory | undefined {
    this.#open();
    const ref = this.#writer.live.get(bank, id);
    if (ref === undefined) return undefined;
    const { source, row } = ref;
    return { id, bank, text: source.texts[row]!, meta: source.metas[row] };
  }

  /** A page of a bank's memories in write order, and the bank's total. */
  list(
    bank: string,
    options: { readonly offset?: number; readonly limit?: number } = {},
  ): { items: StoredMemory[]; total: number } {
    this.#open();
    const offset = options.offset ?? 0;
    const limit = options.limit ?? 100;
    if (!Number.isInteger(offset) || offset < 0 || !Number.isInteger(limit) || limit < 0)
      throw new DataError(`list: offset and limit must be non-negative integers`);
    const snap = this.snapshot();
    const view = snap.bank(bank);
    void snap.release();
    const items: StoredMemory[] = [];
    for (let i = offset; i < Math.min(view.ids.length, offset + limit); i++)
      items.push({ id: view.ids[i]!, bank, text: view.texts[i]!, meta: view.metas[i] });
    return { items, total: view.ids.length };
  }

  /** Banks that hold at least one live memory. */
  banks(): string[] {
    this.#open();
    return banksOf(this.#writer.state).filter((b) => this.hasBank(b));
  }

  /**
   * Whether `bank` holds a live memory ({@link banks} lists it): a map size, not a walk over its
   * rows, asked by the service on every request.
   */
  hasBank(bank: string): boolean {
    this.#open();
    return this.#writer.live.memories(bank) > 0;
  }

  /** An immutable view of the store now (see {@link Snapshot}); release it when done. */
  snapshot(): Snapshot {
    this.#open();
    const { model, dim } = this.#embedder;
    return new Snapshot(this.#writer.state, model, dim, this.#writer.lexicon);
  }

  /**
   * Ranks a bank's memories for a query: encodes the query (`role: 'query'`) and ranks the
   * bank's snapshot with {@link searchView} — the experiment's systems, token evidence for the
   * top `k` (token pieces included) unless `explain: false`.
   * @throws DataError for a bank the store does not hold
   * @throws ConfigError for bad search options
   * @example
   * const [top] = await store.search({ bank: 'alice', query: 'what pet does Alice have?', k: 3 });
   * top.id; // 'm1'
   * console.log(renderEvidence([top])); // query token → memory token, similarity, floored, share
   */
  async search(request: SearchRequest): Promise<SearchResult[]> {
    return (await this.searchWithInterventions(request)).results;
  }

  /**
   * {@link search}, and with `interventions` the token interventions (Appendix D) on one
   * memory from the same scorer pass: per query token its excess over the floor, and the
   * memory's rank after removing the top 1…n contributions and named tokens.
   * @example
   * const { interventions } = await store.searchWithInterventions({ bank: 'alice', query, interventions: {} });
   * interventions?.removals[0]; // { label: 'top 1', removed: [4], rank: 3, … }
   */
  async searchWithInterventions(
    request: SearchRequest,
  ): Promise<{ results: SearchResult[]; interventions?: SearchInterventions }> {
    this.#open();
    const run = this.#search(request);
    this.#searches.add(run);
    try {
      return await run;
    } finally {
      this.#searches.delete(run);
    }
  }

  async #search(
    request: SearchRequest,
  ): Promise<{ results: SearchResult[]; interventions?: SearchInterventions }> {
    const { bank, query, ...options } = request;
    const snap = this.snapshot();
    try {
      if (!snap.hasBank(bank)) throw new DataError(`search: unknown bank '${bank}'`);
      const view = snap.bank(bank);
      const encoded = await this.#embedder.encode([query], 'query');
      const embedder = this.#embedder;
      return await searchViewWithInterventions(
        view,
        encoded,
        {
          tokenText: (id: number) => embedder.tokenText(id),
          index: this.#index,
          ...options,
          queryText: query,
        },
        await this.#sparseScorer(),
      );
    } finally {
      await snap.release();
    }
  }

  #sparseScorer(): Promise<SparseScorer> {
    const threads = this.#threads;
    // Idle intra-op threads sleep (as the encoder's do): spinning ones take the cores that
    // other requests' encoding and ranking need. The same results either way.
    this.#scorer ??= import('@bfe/scorer').then(({ SparseScorer }) =>
      SparseScorer.open({ ...(threads === undefined ? {} : { threads }), spin: false }),
    );
    return this.#scorer;
  }

  /** The lexical index (`hybrid`'s BM25 postings): banks kept, sizes, views scored. */
  lexicalStats(): LexicalStats {
    this.#open();
    return this.#writer.lexicon.stats();
  }

  /** Counts and sizes, per bank and in total. */
  async stats(): Promise<StoreStats> {
    this.#open();
    return storeStats(this.#writer, this.dir);
  }

  /** Writes the memtable to segments and advances the WAL checkpoint. */
  async flush(): Promise<void> {
    this.#open();
    await this.#writer.flush();
  }

  /**
   * Compacts `bank` (or every bank worth it) in the background of readers and writers: merges
   * its segments, dropping superseded and deleted rows, and swaps the manifest. With `codec`,
   * migrates the store to that codec: new segments are written in it, and every segment in
   * another codec is rewritten (`bfe store compact --codec`).
   */
  async compact(
    options: { readonly bank?: string; readonly codec?: StoreCodec } = {},
  ): Promise<CompactionReport[]> {
    this.#open();
    return this.#writer.compact(options.bank, options.codec);
  }

  /** What the store keeps for its life: its codec and window ({@link StoreOptions}). */
  get settings(): StoreSettings {
    return this.#writer.settings;
  }

  /**
   * Waits for background compaction, flushes (unless `flush: false`: the WAL keeps the
   * memtable, replayed at the next open), closes the WAL and releases the lock (and the
   * embedder when the store opened it). Rethrows a background compaction's failure.
   */
  async close(options: { readonly flush?: boolean } = {}): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await Promise.allSettled(this.#searches);
    try {
      await this.#writer.close(options.flush ?? true);
    } finally {
      if (this.#ownsEmbedder) await this.#embedder.dispose();
      await this.#ownIndex?.dispose();
      if (this.#ownsScorer && this.#scorer !== undefined) await (await this.#scorer).dispose();
    }
  }

  #open(): void {
    if (this.#closed) throw new Error('MemoryStore: the store is closed');
  }
}
