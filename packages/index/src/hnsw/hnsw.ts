import { open } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { devNull, endianness } from 'node:os';
import type usearchModule from 'usearch';
import { seededPermutation } from '@bfe/core';

// Loaded through `require`: under tsx's ESM hooks the ESM build of usearch (its CommonJS
// helpers) never finishes loading in a worker thread.
const usearch = createRequire(import.meta.url)('usearch') as typeof usearchModule;

const { Index, MetricKind, ScalarKind } = usearch;
type UsearchIndex = InstanceType<typeof Index>;

/** HNSW graph parameters (usearch: connectivity, expansion_add, expansion_search). */
export interface HnswParams {
  readonly M: number;
  readonly efConstruction: number;
  readonly efSearch: number;
}

/**
 * The scalar kind the usearch graph stores its vectors in: `f32`, `f16` (half floats) or `i8`
 * (usearch's own cast: each vector scaled by 127 / its L2 norm and truncated, so the graph ranks
 * by the cosine of the int8 vectors; for the L2-normalised token states of bfe's banks that is
 * the inner product up to rounding). usearch has no 4-bit kind.
 */
export type HnswScalarKind = 'f32' | 'f16' | 'i8';

/** usearch's `scalar_kind_t` codes, byte 14 of an index file's header. */
export const KIND_CODE: Record<HnswScalarKind, number> = { f32: 11, f16: 12, i8: 23 };
const LITTLE_ENDIAN = endianness() === 'LE';
/** 127², the i8 cast's unit of an inner product. */
const I8_UNIT = 127 * 127;
const KIND_OF = { f32: ScalarKind.F32, f16: ScalarKind.F16, i8: ScalarKind.I8 } as const;

/** Options of {@link buildHnsw} and {@link loadHnsw}. */
export interface HnswOptions {
  /**
   * Threads usearch searches with (default 0: its own choice, all cores). Speed only: each query
   * row is searched on its own, so the results do not depend on it.
   */
  readonly threads?: number;
  /**
   * {@link buildHnsw} only: threads usearch inserts with (default {@link DEFAULT_BUILD_THREADS},
   * 1: the same rows, parameters and kind give the same file, byte for byte; 0: usearch's own
   * choice, all cores). More than one is faster and not reproducible: usearch's parallel `add`
   * places each row in the order the threads reach it and draws its level from the generator
   * of whichever thread context it takes, so the file's node order, levels and links change
   * from run to run. usearch sizes its per-thread search state when the build reserves memory,
   * for the build's thread count, so a graph built here searches on at most that many threads
   * (`threads` is capped); a saved graph, loaded or viewed, searches on any number.
   */
  readonly buildThreads?: number;
  /** The graph's stored scalar kind (default `f32`); {@link loadHnsw} refuses a file of another. */
  readonly kind?: HnswScalarKind;
  /**
   * {@link loadHnsw} only: memory-map the file (usearch `view`) instead of reading it into the
   * process: pages are read on demand and stay the page cache's, the index is read-only, and
   * `dispose()` unmaps it. Searches are the loaded index's, bit for bit (tested).
   */
  readonly view?: boolean;
  /**
   * {@link buildHnsw} only: the order rows are inserted in — `shuffled` (default: the seeded
   * {@link insertOrder}) or `given` (row order, as before session 7; kept for measurements).
   */
  readonly insert?: 'shuffled' | 'given';
}

/** A search restriction: tokens whose memory row is in `allowedMemories`. */
export interface HnswFilter {
  /** Memory row of every token, indexed by token key. */
  readonly tokenMemory: Int32Array;
  readonly allowedMemories: ReadonlySet<number> | Int32Array;
}

/** Per query row, `k` slots of (token index, inner product), best first; empty slots are −1 / −∞. */
export interface HnswResult {
  readonly indices: Int32Array;
  readonly scores: Float32Array;
  readonly k: number;
}

export interface HnswIndex {
  /**
   * Top-k (token index, inner-product similarity) per query row, restricted to tokens whose
   * memory row is in `filter.allowedMemories` when given. The library has no filter predicate
   * in its JavaScript binding, so a filter is applied after the graph search, fetching
   * `k · 4, k · 16, …` neighbours until every row has `k` allowed ones or the whole index was
   * fetched: a filtered row can come back with fewer than `k` when its allowed tokens are
   * rare (measured by `pnpm bench:big-bank --filtering`; per-bank indexes are the alternative).
   */
  search(queries: Float32Array, rows: number, k: number, filter?: HnswFilter): HnswResult;
  /** Writes the usearch index file. */
  save(path: string): Promise<void>;
  readonly size: number;
  readonly dim: number;
  /** The scalar kind the graph stores its vectors in. */
  readonly kind: HnswScalarKind;
  /** Frees the graph's native memory now ({@link releaseIndex}); the index is unusable after. */
  dispose(): void;
}

/** A new usearch inner-product index (one home for the library's constructor options). */
export function makeIndex(dim: number, params: HnswParams, kind: HnswScalarKind): UsearchIndex {
  for (const [name, v] of Object.entries(params)) {
    if (!Number.isInteger(v) || v < 1)
      throw new Error(`HNSW ${name} must be a positive integer, got ${v}.`);
  }
  return new Index({
    dimensions: dim,
    metric: MetricKind.IP,
    quantization: KIND_OF[kind],
    connectivity: params.M,
    expansion_add: params.efConstruction,
    expansion_search: params.efSearch,
    multi: false,
  });
}

/**
 * Frees a usearch index's native memory now; the index must not be used again. The binding has
 * no close: it frees the graph only when V8 collects the JavaScript wrapper, and it reports no
 * external memory, so V8 feels no pressure to collect, and a process that builds graph after
 * graph grows by every graph built (LongMemEval-S fp32, 418 graphs: OOM-killed at 9.46 GB).
 * Loading an empty file makes usearch reset the index (nodes, vectors, key lookup) before the
 * read fails on the missing header; the index reports size 0 after (tested).
 */
export function releaseIndex(index: UsearchIndex): void {
  try {
    index.load(devNull);
  } catch {
    // Expected: the empty file has no header. The reset has happened by then.
  }
}

/**
 * The seed of the order {@link buildHnsw} inserts rows in (predeclared, fixed, never tuned).
 * Inserted in bank order, neighbouring rows (one memory's tokens, one conversation's) arrive
 * together and usearch's graph came out poorer: on 1e5 tiled LoCoMo tokens (M 16 / efC 64, i8)
 * recall@64 at efSearch 64 was 0.852 in bank order and 0.872 shuffled, the gap to faiss's
 * IndexHNSWFlat (0.885), whose build also inserts in a random order (by level, shuffled).
 */
export const HNSW_INSERT_SEED = 42;

/**
 * Threads a graph is built with unless a caller asks for more: one, the only count at which
 * usearch's build is reproducible ({@link HnswOptions.buildThreads}).
 */
export const DEFAULT_BUILD_THREADS = 1;

/** Rows copied and added per usearch `add` call while inserting in the shuffled order. */
const INSERT_CHUNK = 8192;

/**
 * `0..n-1` in the order {@link buildHnsw} inserts them: `@bfe/core`'s `seededPermutation` (the
 * workspace's one seeded shuffle, its float64 draw).
 */
export function insertOrder(n: number, seed: number = HNSW_INSERT_SEED): Int32Array {
  return seededPermutation(n, seed);
}

/**
 * Builds an inner-product HNSW index (usearch; vectors stored as `options.kind`, default f32)
 * over `n × dim` float32 rows, cast by usearch; a row's key is its row index. The rows are
 * inserted in the seeded order {@link insertOrder} (keys unchanged), not in bank order, on
 * `options.buildThreads` threads (default 1: deterministic, see {@link HnswOptions.buildThreads}).
 * Queries are given as float32 and cast the same way.
 *
 * @example
 * const index = await buildHnsw(vectors, n, 384, { M: 16, efConstruction: 128, efSearch: 128 });
 * index.search(q, rows, 64); // { indices: Int32Array(rows · 64), scores, k: 64 }
 */
export async function buildHnsw(
  vectors: Float32Array,
  n: number,
  dim: number,
  params: HnswParams,
  options: HnswOptions = {},
): Promise<HnswIndex> {
  if (vectors.length < n * dim)
    throw new Error(`Vectors hold ${vectors.length} values, need ${n * dim}.`);
  const kind = options.kind ?? 'f32';
  const buildThreads = options.buildThreads ?? DEFAULT_BUILD_THREADS;
  if (!(Number.isInteger(buildThreads) && buildThreads >= 0)) {
    throw new Error(`buildThreads must be a non-negative integer, got ${buildThreads}.`);
  }
  const index = makeIndex(dim, params, kind);
  const order =
    options.insert === 'given' ? Int32Array.from({ length: n }, (_, i) => i) : insertOrder(n);
  for (let at = 0; at < n; at += INSERT_CHUNK) {
    const rows = Math.min(INSERT_CHUNK, n - at);
    const keys = new BigUint64Array(rows);
    const chunk = new Float32Array(rows * dim);
    for (let i = 0; i < rows; i++) {
      const row = order[at + i]!;
      keys[i] = BigInt(row);
      chunk.set(vectors.subarray(row * dim, (row + 1) * dim), i * dim);
    }
    index.add(keys, chunk, buildThreads);
  }
  // The index holds search state for `buildThreads` threads (all cores for 0) until it is
  // saved and loaded: more search threads than that fail in usearch, so they are capped.
  const threads = options.threads ?? 0;
  const searchThreads =
    buildThreads === 0 ? threads : threads === 0 ? buildThreads : Math.min(threads, buildThreads);
  return Promise.resolve(new UsearchHnsw(index, dim, kind, searchThreads));
}

/**
 * The scalar kind stored in a usearch index file, from its header (undefined: another kind). A
 * file is the vectors (`u32` rows, `u32` bytes per row, the rows), then the header (`usearch`,
 * three `u16` versions, the metric, then the scalar kind), then the graph.
 */
export async function hnswFileKind(path: string): Promise<HnswScalarKind | undefined> {
  const file = await open(path, 'r');
  try {
    const head = Buffer.alloc(16);
    await file.read(head, 0, 8, 0);
    const at = 8 + head.readUInt32LE(0) * head.readUInt32LE(4);
    const { bytesRead } = await file.read(head, 0, 16, at);
    if (bytesRead < 16 || head.subarray(0, 7).toString('latin1') !== 'usearch') {
      throw new Error(`${path} is not a usearch index file.`);
    }
    const code = head[14];
    return (Object.keys(KIND_CODE) as HnswScalarKind[]).find((k) => KIND_CODE[k] === code);
  } finally {
    await file.close();
  }
}

/**
 * Loads an index file written by {@link HnswIndex.save} (or memory-maps it: `options.view`);
 * `params.efSearch` applies to the loaded index (M and efConstruction are read from the file).
 * The file must store `options.kind` (default f32).
 *
 * @example
 * const index = await loadHnsw('bank.usearch', 384, params);
 */
export async function loadHnsw(
  path: string,
  dim: number,
  params: HnswParams,
  options: HnswOptions = {},
): Promise<HnswIndex> {
  const kind = options.kind ?? 'f32';
  const stored = await hnswFileKind(path);
  if (stored !== kind) {
    throw new Error(`${path} stores ${stored ?? 'another'} vectors, expected ${kind}.`);
  }
  const index = makeIndex(dim, params, kind);
  if (options.view === true) index.view(path);
  else index.load(path);
  if (index.dimensions() !== dim) {
    throw new Error(`${path} holds ${index.dimensions()}-dim vectors, expected ${dim}.`);
  }
  return new UsearchHnsw(index, dim, kind, options.threads ?? 0);
}

class UsearchHnsw implements HnswIndex {
  #index: UsearchIndex | undefined;

  constructor(
    index: UsearchIndex,
    readonly dim: number,
    readonly kind: HnswScalarKind,
    private readonly threads: number,
  ) {
    this.#index = index;
  }

  get size(): number {
    return this.live().size();
  }

  private live(): UsearchIndex {
    if (this.#index === undefined) throw new Error('HNSW index used after dispose().');
    return this.#index;
  }

  search(queries: Float32Array, rows: number, k: number, filter?: HnswFilter): HnswResult {
    const indices = new Int32Array(rows * k).fill(-1);
    const scores = new Float32Array(rows * k).fill(-Infinity);
    const size = this.size;
    if (rows === 0 || k === 0 || size === 0) return { indices, scores, k };
    const q = queries.subarray(0, rows * this.dim);
    if (filter === undefined) {
      this.fill(q, rows, Math.min(k, size), k, indices, scores, () => true, null);
      return { indices, scores, k };
    }
    const allowed = allowedSet(filter.allowedMemories);
    const tokenMemory = filter.tokenMemory;
    const keep = (token: number): boolean => allowed.has(tokenMemory[token]!);
    let pending: number[] | null = null;
    for (let fetch = Math.min(4 * k, size); ; fetch = Math.min(4 * fetch, size)) {
      pending = this.fill(q, rows, fetch, k, indices, scores, keep, pending);
      if (pending.length === 0 || fetch === size) return { indices, scores, k };
    }
  }

  /**
   * Searches `fetch` neighbours for `only` rows (all when null), keeps the first `k` that pass
   * `keep`, and returns the rows that still have fewer than `k`.
   */
  private fill(
    q: Float32Array,
    rows: number,
    fetch: number,
    k: number,
    indices: Int32Array,
    scores: Float32Array,
    keep: (token: number) => boolean,
    only: number[] | null,
  ): number[] {
    const index = this.live();
    const todo = only ?? Array.from({ length: rows }, (_, r) => r);
    // Every row: `q` itself (already `rows` contiguous rows); else the rows still short.
    let batch = q;
    if (only !== null) {
      batch = new Float32Array(todo.length * this.dim);
      for (let j = 0; j < todo.length; j++) {
        batch.set(q.subarray(todo[j]! * this.dim, (todo[j]! + 1) * this.dim), j * this.dim);
      }
    }
    const res = index.search(batch, fetch, this.threads);
    const keys = res.keys;
    const dist = res.distances;
    // One query row comes back as `Matches` (keys sliced to the count found), more as `BatchMatches`.
    const counts =
      'counts' in res ? (res as { counts: BigUint64Array }).counts : [BigInt(keys.length)];
    // Keys are row indices below 2³²: read each u64's low word through a u32 view (little-endian)
    // instead of a BigInt per key, which allocated one heap object per proposal.
    const low = LITTLE_ENDIAN
      ? new Uint32Array(keys.buffer, keys.byteOffset, keys.length * 2)
      : null;
    const short: number[] = [];
    for (let j = 0; j < todo.length; j++) {
      const r = todo[j]!;
      const found = Number(counts[j]);
      indices.fill(-1, r * k, (r + 1) * k);
      scores.fill(-Infinity, r * k, (r + 1) * k);
      let w = 0;
      for (let c = 0; c < found && w < k; c++) {
        const token = low === null ? Number(keys[j * fetch + c]) : low[2 * (j * fetch + c)]!;
        if (!keep(token)) continue;
        indices[r * k + w] = token;
        // usearch's inner-product distance is 1 − ⟨q, x⟩; for i8 it is −⟨q8, x8⟩ of the cast
        // vectors, so the score is that over 127² (their cosine, to the rounding).
        const d = dist[j * fetch + c]!;
        scores[r * k + w] = this.kind === 'i8' ? -d / I8_UNIT : 1 - d;
        w++;
      }
      if (w < k) short.push(r);
    }
    return short;
  }

  save(path: string): Promise<void> {
    this.live().save(path);
    return Promise.resolve();
  }

  /** Frees the graph's native memory now ({@link releaseIndex}). */
  dispose(): void {
    if (this.#index !== undefined) releaseIndex(this.#index);
    this.#index = undefined;
  }
}

function allowedSet(allowed: ReadonlySet<number> | Int32Array): ReadonlySet<number> {
  return allowed instanceof Int32Array ? new Set(allowed) : allowed;
}
