import {
  createIncrementalHnsw,
  type HnswParams,
  type HnswScalarKind,
  type IncrementalHnsw,
} from '@bfe/index';

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

/** The settings a graph is built with (its file is refused under others). */
export interface GraphParams extends HnswParams {
  readonly kind: HnswScalarKind;
  /** usearch threads for adds and searches. */
  readonly threads: number;
}

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

/**
 * One bank's HNSW graph over the content tokens of row versions, maintained incrementally:
 * a new version's tokens are added under fresh keys (never reused), a superseded or deleted
 * version's keys are removed. Which versions it holds is its own record ({@link entries}), so
 * a search can reconcile the graph with any snapshot (see `graph-search.ts`): the graph may
 * run ahead of or behind a snapshot, never silently.
 * @example
 * const g = new BankGraph('alice', 384, { M: 16, efConstruction: 128, efSearch: 128, kind: 'f16', threads: 1 });
 * g.addRows(view, 0, view.ids.length);
 * g.removeId('m3');
 */
export class BankGraph {
  readonly hnsw: IncrementalHnsw;
  readonly #bySeq = new Map<number, GraphEntry>();
  readonly #byId = new Map<string, GraphEntry>();
  #nextKey: number;
  #tokens = 0;
  /** Bumped by every removal: a snapshot's reading of the graph is stale after one. */
  #removals = 0;
  /** Bumped by every change. */
  #version = 0;
  #disposed = false;
  /** Tokens added or removed since the graph was last saved (or loaded). */
  changedTokens = 0;

  constructor(
    readonly bank: string,
    readonly dim: number,
    readonly params: GraphParams,
    loaded?: {
      readonly hnsw: IncrementalHnsw;
      readonly entries: readonly GraphEntry[];
      readonly nextKey: number;
    },
  ) {
    if (loaded === undefined) {
      this.hnsw = createIncrementalHnsw(dim, params, {
        kind: params.kind,
        threads: params.threads,
      });
      this.#nextKey = 0;
    } else {
      this.hnsw = loaded.hnsw;
      this.#nextKey = loaded.nextKey;
      for (const e of loaded.entries) this.#record(e);
    }
  }

  /** Keys handed out so far (every key is below it). */
  get nextKey(): number {
    return this.#nextKey;
  }
  /** Tokens of the versions held. */
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
  /** Tokens removed over the graph's life (keys are handed out once: all below {@link nextKey}). */
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
   * Adds rows `from..to-1` of `src` as the current versions of their ids (an older version of
   * an id is removed first; a version held already is skipped). One usearch call per run of
   * rows, their keys contiguous like their tokens.
   */
  addRows(src: VersionRows, from: number, to: number): void {
    const { dim } = this;
    let runStart = -1;
    let runFirst = 0;
    const flush = (end: number): void => {
      if (runStart < 0) return;
      const t0 = src.tokenOffsets[runStart]!;
      const t1 = src.tokenOffsets[end]!;
      this.hnsw.add(runFirst, src.tokenVectors.subarray(t0 * dim, t1 * dim), t1 - t0);
      runStart = -1;
    };
    for (let r = from; r < to; r++) {
      const seq = src.seqs[r]!;
      if (this.#bySeq.has(seq)) {
        flush(r);
        continue;
      }
      const id = src.ids[r]!;
      if (this.#byId.has(id)) {
        flush(r);
        this.removeId(id);
      }
      const count = src.tokenOffsets[r + 1]! - src.tokenOffsets[r]!;
      if (runStart < 0) {
        runStart = r;
        runFirst = this.#nextKey;
      }
      this.#record({
        id,
        seq,
        first: this.#nextKey,
        count,
        fp: pooledFingerprint(src.pooled, r, dim),
      });
      this.#nextKey += count;
      this.changedTokens += count;
      this.#version++;
    }
    flush(to);
  }

  /** Removes the version of `id` held (if any). */
  removeId(id: string): void {
    const e = this.#byId.get(id);
    if (e === undefined) return;
    this.hnsw.remove(e.first, e.count);
    this.#byId.delete(id);
    this.#bySeq.delete(e.seq);
    this.#tokens -= e.count;
    this.changedTokens += e.count;
    this.#removals++;
    this.#version++;
  }

  dispose(): void {
    this.#disposed = true;
    this.hnsw.dispose();
  }

  #record(e: GraphEntry): void {
    this.#bySeq.set(e.seq, e);
    this.#byId.set(e.id, e);
    this.#tokens += e.count;
  }
}
