import type { KeyProposals } from '@bfe/index';
import { localHnswMaker, type GraphHnsw, type GraphHnswMaker } from './graph-hnsw.js';
import type { GraphParams } from './graph-params.js';

/** Row versions as a graph reads them: a {@link BankView} with seqs, or a store batch. */
export interface VersionRows {
  readonly dim: number;
  readonly ids: readonly string[];
  /** Write sequence of each row: a row version's identity in the store. */
  readonly seqs: ArrayLike<number>;
  /** `[rows × dim]`. */
  readonly pooled: Float32Array;
  /** `[rows + 1]`. */
  readonly tokenOffsets: Int32Array;
  /** `[tokens × dim]`. */
  readonly tokenVectors: Float32Array;
}

/** One row version in a graph: its tokens are keys `first..first+count-1`. */
export interface GraphEntry {
  readonly id: string;
  readonly seq: number;
  readonly first: number;
  readonly count: number;
  /** FNV-1a of the row's pooled vector bits: recognises the same version after a reopen. */
  readonly fp: number;
}

export type { GraphParams } from './graph-params.js';

/** FNV-1a over the 32-bit words of row `row`'s pooled vector. */
export function pooledFingerprint(pooled: Float32Array, row: number, dim: number): number {
  const words = new Uint32Array(pooled.buffer, pooled.byteOffset + row * dim * 4, dim);
  let h = 0x811c9dc5;
  for (let i = 0; i < dim; i++) {
    const w = words[i]!;
    h = Math.imul(h ^ (w & 0xff), 0x01000193);
    h = Math.imul(h ^ ((w >>> 8) & 0xff), 0x01000193);
    h = Math.imul(h ^ ((w >>> 16) & 0xff), 0x01000193);
    h = Math.imul(h ^ (w >>> 24), 0x01000193);
  }
  return h >>> 0;
}

/** Most tokens one insertion call carries (a longer row goes alone): bounds how long a search
 * queued behind a graph's insertion waits. */
export const ADD_CHUNK_TOKENS = 256;

/** What a graph held when a save wrote its file (see {@link BankGraph.save}). */
export interface GraphSnapshot {
  readonly entries: readonly GraphEntry[];
  readonly nextKey: number;
  readonly size: number;
  /** {@link BankGraph.changedTokens} then (a save that completes takes them off). */
  readonly changed: number;
}

/**
 * One bank's HNSW graph over the content tokens of row versions, maintained incrementally:
 * a new version's tokens are added under fresh keys (never reused), a superseded or deleted
 * version's keys are removed. The usearch index lives where its {@link GraphHnsw} puts it (a
 * worker thread for a store); changes run one after another, each recorded here when the index
 * has applied it, so which versions the graph holds ({@link entries}) is always what a search
 * of it sees (see `graph-search.ts`): the graph may run ahead of or behind a snapshot, never
 * silently.
 * @example
 * const g = await BankGraph.create('alice', 384, { M: 16, efConstruction: 128, efSearch: 128, kind: 'f16', threads: 1 });
 * await g.addRows(view, 0, view.ids.length);
 * await g.removeId('m3');
 */
export class BankGraph {
  readonly #bySeq = new Map<number, GraphEntry>();
  readonly #byId = new Map<string, GraphEntry>();
  /** Keys handed out (the applied ones are below {@link nextKey}). */
  #allocated: number;
  #nextKey: number;
  #tokens = 0;
  /** Bumped by every removal: a snapshot's reading of the graph is stale after one. */
  #removals = 0;
  /** Bumped by every change. */
  #version = 0;
  #disposed = false;
  /** The changes queued, one after another. */
  #chain: Promise<unknown> = Promise.resolve();
  /** Tokens added or removed since the graph was last saved (or loaded). */
  changedTokens = 0;

  constructor(
    readonly bank: string,
    readonly dim: number,
    readonly params: GraphParams,
    readonly hnsw: GraphHnsw,
    loaded?: { readonly entries: readonly GraphEntry[]; readonly nextKey: number },
  ) {
    this.#allocated = this.#nextKey = loaded?.nextKey ?? 0;
    for (const e of loaded?.entries ?? []) this.#record(e);
  }

  /** An empty graph, its index made by `maker` (default: on this thread). */
  static async create(
    bank: string,
    dim: number,
    params: GraphParams,
    maker: GraphHnswMaker = localHnswMaker(),
  ): Promise<BankGraph> {
    return new BankGraph(bank, dim, params, await maker.create(dim, params));
  }

  /** Every key the graph has applied is below it. */
  get nextKey(): number {
    return this.#nextKey;
  }
  /** Tokens of the versions held (the index's vector count). */
  get tokens(): number {
    return this.#tokens;
  }
  get removals(): number {
    return this.#removals;
  }
  get version(): number {
    return this.#version;
  }
  get versions(): number {
    return this.#bySeq.size;
  }
  /** Tokens removed over the graph's life (keys are handed out once). */
  get removedTokens(): number {
    return this.#nextKey - this.#tokens;
  }
  /** Whether {@link dispose} ran (a search holding it then runs exactly). */
  get disposed(): boolean {
    return this.#disposed;
  }

  entryOfSeq(seq: number): GraphEntry | undefined {
    return this.#bySeq.get(seq);
  }
  entryOfId(id: string): GraphEntry | undefined {
    return this.#byId.get(id);
  }
  entries(): IterableIterator<GraphEntry> {
    return this.#bySeq.values();
  }

  /**
   * Queues adding rows `from..to-1` of `src` as the current versions of their ids (an older
   * version of an id is removed first; a version held already, or a row `keep` refuses when
   * its turn comes, is skipped). One index call per run of rows (at most
   * {@link ADD_CHUNK_TOKENS} tokens), their keys contiguous like their tokens. Resolves with the
   * tokens added, once the index holds them.
   */
  addRows(
    src: VersionRows,
    from: number,
    to: number,
    keep: (row: number) => boolean = () => true,
  ): Promise<number> {
    return this.#serial(async () => {
      const { dim } = this;
      const off = src.tokenOffsets;
      let added = 0;
      for (let r = from; r < to && !this.#disposed;) {
        if (this.#bySeq.has(src.seqs[r]!) || !keep(r)) {
          r++;
          continue;
        }
        if (this.#byId.has(src.ids[r]!)) await this.#removeNow(src.ids[r]!);
        const ids = new Set([src.ids[r]!]);
        let end = r + 1;
        while (
          end < to &&
          off[end + 1]! - off[r]! <= ADD_CHUNK_TOKENS &&
          !this.#bySeq.has(src.seqs[end]!) &&
          !this.#byId.has(src.ids[end]!) &&
          !ids.has(src.ids[end]!) &&
          keep(end)
        )
          ids.add(src.ids[end++]!);
        const first = this.#allocated;
        const entries: GraphEntry[] = [];
        for (let m = r; m < end; m++)
          entries.push({
            id: src.ids[m]!,
            seq: src.seqs[m]!,
            first: first + off[m]! - off[r]!,
            count: off[m + 1]! - off[m]!,
            fp: pooledFingerprint(src.pooled, m, dim),
          });
        const count = off[end]! - off[r]!;
        this.#allocated += count;
        const vectors = src.tokenVectors.subarray(off[r]! * dim, off[end]! * dim);
        await this.hnsw.add(first, vectors, count, () => {
          for (const e of entries) this.#record(e);
          this.#nextKey = first + count;
          this.changedTokens += count;
          this.#version++;
        });
        added += count;
        r = end;
      }
      return added;
    });
  }

  /** Queues removing the version of `id` held (if any when its turn comes). */
  removeId(id: string): Promise<void> {
    return this.#serial(() => this.#removeNow(id));
  }

  /** The `fetch` nearest keys per query row; `read` runs on the graph as the search saw it. */
  search<T>(
    queries: Float32Array,
    rows: number,
    fetch: number,
    read: (proposals: KeyProposals) => T,
  ): Promise<T> {
    return this.hnsw.search(queries, rows, fetch, read);
  }

  /** Queues writing the index file; resolves with what the file holds. */
  save(path: string): Promise<GraphSnapshot> {
    return this.#serial(async () => {
      const snapshot: GraphSnapshot = {
        entries: [...this.#bySeq.values()],
        nextKey: this.#nextKey,
        size: this.#tokens,
        changed: this.changedTokens,
      };
      await this.hnsw.save(path);
      return snapshot;
    });
  }

  /** Resolves when every change queued so far has run (or failed). */
  idle(): Promise<void> {
    return this.#chain.then(() => undefined);
  }

  dispose(): void {
    if (this.#disposed) return;
    this.#disposed = true;
    this.hnsw.dispose();
  }

  async #removeNow(id: string): Promise<void> {
    const e = this.#byId.get(id);
    if (e === undefined || this.#disposed) return;
    await this.hnsw.remove(e.first, e.count, () => {
      this.#byId.delete(id);
      this.#bySeq.delete(e.seq);
      this.#tokens -= e.count;
      this.changedTokens += e.count;
      this.#removals++;
      this.#version++;
    });
  }

  #serial<T>(run: () => Promise<T>): Promise<T> {
    const next = this.#chain.then(run);
    this.#chain = next.catch(() => undefined);
    return next;
  }

  #record(e: GraphEntry): void {
    this.#bySeq.set(e.seq, e);
    this.#byId.set(e.id, e);
    this.#tokens += e.count;
  }
}
