import usearch from 'usearch';

const { Index, MetricKind, ScalarKind } = usearch;
type UsearchIndex = InstanceType<typeof Index>;

/** HNSW graph parameters (usearch: connectivity, expansion_add, expansion_search). */
export interface HnswParams {
  readonly M: number;
  readonly efConstruction: number;
  readonly efSearch: number;
}

/** Options that change speed, never results' meaning. */
export interface HnswOptions {
  /** Threads usearch uses to add and to search (default 0: its own choice, all cores). */
  readonly threads?: number;
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
   * rare (measured in `pnpm bench:index`; per-bank indexes are the alternative).
   */
  search(queries: Float32Array, rows: number, k: number, filter?: HnswFilter): HnswResult;
  /** Writes the usearch index file. */
  save(path: string): Promise<void>;
  readonly size: number;
  readonly dim: number;
  dispose(): void;
}

function makeIndex(dim: number, params: HnswParams): UsearchIndex {
  for (const [name, v] of Object.entries(params)) {
    if (!Number.isInteger(v) || v < 1)
      throw new Error(`HNSW ${name} must be a positive integer, got ${v}.`);
  }
  return new Index({
    dimensions: dim,
    metric: MetricKind.IP,
    quantization: ScalarKind.F32,
    connectivity: params.M,
    expansion_add: params.efConstruction,
    expansion_search: params.efSearch,
    multi: false,
  });
}

/**
 * Builds an inner-product HNSW index (usearch, float32 vectors) over `n × dim` rows; a row's
 * key is its row index.
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
  const index = makeIndex(dim, params);
  if (n > 0) {
    const keys = new BigUint64Array(n);
    for (let i = 0; i < n; i++) keys[i] = BigInt(i);
    index.add(keys, vectors.subarray(0, n * dim), options.threads ?? 0);
  }
  return Promise.resolve(new UsearchHnsw(index, dim, options.threads ?? 0));
}

/**
 * Loads an index file written by {@link HnswIndex.save}; `params.efSearch` applies to the
 * loaded index (M and efConstruction are read from the file).
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
  const index = makeIndex(dim, params);
  index.load(path);
  if (index.dimensions() !== dim) {
    throw new Error(`${path} holds ${index.dimensions()}-dim vectors, expected ${dim}.`);
  }
  return Promise.resolve(new UsearchHnsw(index, dim, options.threads ?? 0));
}

class UsearchHnsw implements HnswIndex {
  #index: UsearchIndex | undefined;

  constructor(
    index: UsearchIndex,
    readonly dim: number,
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
    const batch = new Float32Array(todo.length * this.dim);
    for (let j = 0; j < todo.length; j++) {
      batch.set(q.subarray(todo[j]! * this.dim, (todo[j]! + 1) * this.dim), j * this.dim);
    }
    const res = index.search(batch, fetch, this.threads);
    const keys = res.keys;
    const dist = res.distances;
    // One query row comes back as `Matches` (keys sliced to the count found), more as `BatchMatches`.
    const counts =
      'counts' in res ? (res as { counts: BigUint64Array }).counts : [BigInt(keys.length)];
    const short: number[] = [];
    for (let j = 0; j < todo.length; j++) {
      const r = todo[j]!;
      const found = Number(counts[j]);
      indices.fill(-1, r * k, (r + 1) * k);
      scores.fill(-Infinity, r * k, (r + 1) * k);
      let w = 0;
      for (let c = 0; c < found && w < k; c++) {
        const token = Number(keys[j * fetch + c]);
        if (!keep(token)) continue;
        indices[r * k + w] = token;
        // usearch's inner-product distance is 1 − ⟨q, x⟩.
        scores[r * k + w] = 1 - dist[j * fetch + c]!;
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

  dispose(): void {
    this.#index = undefined;
  }
}

function allowedSet(allowed: ReadonlySet<number> | Int32Array): ReadonlySet<number> {
  return allowed instanceof Int32Array ? new Set(allowed) : allowed;
}
