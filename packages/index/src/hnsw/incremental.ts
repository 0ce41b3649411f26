import { hnswFileKind, makeIndex, releaseIndex } from './hnsw.js';
import type { HnswParams, HnswScalarKind } from './hnsw.js';

/** Options of {@link createIncrementalHnsw} and {@link loadIncrementalHnsw}. */
export interface IncrementalHnswOptions {
  /** The stored scalar kind (default `f16`). */
  readonly kind?: HnswScalarKind;
  /** usearch threads for adds and searches (default 1: a store's writes and searches are small). */
  readonly threads?: number;
}

/** Per query row, up to `fetch` proposed keys, best first; `counts[r]` of them are filled. */
export interface KeyProposals {
  /** `[rows × fetch]` keys; slots past `counts[r]` are −1. */
  readonly keys: Float64Array;
  readonly counts: Int32Array;
  readonly fetch: number;
}

/**
 * An inner-product HNSW graph (usearch) that grows and shrinks: keys are the caller's own
 * (integers below 2^53, never reused), vectors are added in contiguous key ranges and removed
 * by range (usearch marks them removed: they are never proposed again, and the graph stays
 * navigable). What a store maintains per large bank; {@link HnswTokenIndex} is the static kind.
 */
export interface IncrementalHnsw {
  readonly dim: number;
  readonly kind: HnswScalarKind;
  /** Vectors in the graph now (added minus removed). */
  readonly size: number;
  /** Adds `count` rows of `vectors [count × dim]` under keys `first..first+count-1`. */
  add(first: number, vectors: Float32Array, count: number): void;
  /** Removes keys `first..first+count-1`; returns how many were present. */
  remove(first: number, count: number): number;
  /** The `fetch` nearest keys by inner product per row of `queries [rows × dim]`. */
  search(queries: Float32Array, rows: number, fetch: number): KeyProposals;
  /** Writes the usearch index file (synchronously: no add or remove runs meanwhile). */
  save(path: string): void;
  /** Frees the graph's native memory now (`releaseIndex`); the graph is unusable after. */
  dispose(): void;
}

/**
 * An empty {@link IncrementalHnsw} (usearch, inner product, vectors stored as `options.kind`).
 * @example
 * const g = createIncrementalHnsw(384, { M: 16, efConstruction: 128, efSearch: 128 });
 * g.add(0, vectors, n); // keys 0..n-1
 * g.remove(0, 10);
 * g.search(q, rows, 80); // { keys: Float64Array(rows · 80), counts, fetch: 80 }
 */
export function createIncrementalHnsw(
  dim: number,
  params: HnswParams,
  options: IncrementalHnswOptions = {},
): IncrementalHnsw {
  const kind = options.kind ?? 'f16';
  return new UsearchIncremental(
    makeIndex(dim, graphParams(params), kind),
    dim,
    kind,
    options.threads ?? 1,
  );
}

/**
 * Loads a file written by {@link IncrementalHnsw.save} (removed keys stay removed).
 * @throws Error when the file is not a usearch index, stores another kind or dimension, or is
 *   truncated (usearch refuses it).
 */
export async function loadIncrementalHnsw(
  path: string,
  dim: number,
  params: HnswParams,
  options: IncrementalHnswOptions = {},
): Promise<IncrementalHnsw> {
  const kind = options.kind ?? 'f16';
  const stored = await hnswFileKind(path);
  if (stored !== kind)
    throw new Error(`${path} stores ${stored ?? 'another'} vectors, expected ${kind}.`);
  const index = makeIndex(dim, graphParams(params), kind);
  index.load(path);
  if (index.dimensions() !== dim)
    throw new Error(`${path} holds ${index.dimensions()}-dim vectors, expected ${dim}.`);
  return new UsearchIncremental(index, dim, kind, options.threads ?? 1);
}

type UsearchIndex = ReturnType<typeof makeIndex>;

/** The graph parameters alone (callers may pass a larger settings object). */
function graphParams(p: HnswParams): HnswParams {
  return { M: p.M, efConstruction: p.efConstruction, efSearch: p.efSearch };
}

function keyRange(first: number, count: number): BigUint64Array {
  if (!Number.isSafeInteger(first) || first < 0 || !Number.isSafeInteger(first + count))
    throw new Error(`HNSW keys must be safe non-negative integers, got ${first}+${count}.`);
  const keys = new BigUint64Array(count);
  for (let i = 0; i < count; i++) keys[i] = BigInt(first + i);
  return keys;
}

class UsearchIncremental implements IncrementalHnsw {
  #index: UsearchIndex | undefined;

  constructor(
    index: UsearchIndex,
    readonly dim: number,
    readonly kind: HnswScalarKind,
    private readonly threads: number,
  ) {
    this.#index = index;
  }

  #live(): UsearchIndex {
    if (this.#index === undefined) throw new Error('HNSW index used after dispose().');
    return this.#index;
  }

  get size(): number {
    return this.#live().size();
  }

  add(first: number, vectors: Float32Array, count: number): void {
    if (count === 0) return;
    if (vectors.length < count * this.dim)
      throw new Error(`add: ${vectors.length} floats for ${count} rows of ${this.dim}.`);
    this.#live().add(keyRange(first, count), vectors.subarray(0, count * this.dim), this.threads);
  }

  remove(first: number, count: number): number {
    if (count === 0) return 0;
    const removed = this.#live().remove(keyRange(first, count));
    return typeof removed === 'number' ? removed : removed.reduce((a, b) => a + b, 0);
  }

  search(queries: Float32Array, rows: number, fetch: number): KeyProposals {
    const keys = new Float64Array(rows * fetch).fill(-1);
    const counts = new Int32Array(rows);
    const index = this.#live();
    if (rows === 0 || fetch === 0 || index.size() === 0) return { keys, counts, fetch };
    const res = index.search(queries.subarray(0, rows * this.dim), fetch, this.threads);
    // One query row comes back as `Matches` (keys sliced to the count found), more as `BatchMatches`.
    const found = 'counts' in res ? (res as { counts: BigUint64Array }).counts : undefined;
    for (let r = 0; r < rows; r++) {
      const n = found === undefined ? res.keys.length : Number(found[r]);
      counts[r] = n;
      for (let j = 0; j < n; j++) keys[r * fetch + j] = Number(res.keys[r * fetch + j]);
    }
    return { keys, counts, fetch };
  }

  save(path: string): void {
    this.#live().save(path);
  }

  /** Frees the graph's native memory now (`releaseIndex`). */
  dispose(): void {
    if (this.#index !== undefined) releaseIndex(this.#index);
    this.#index = undefined;
  }
}
