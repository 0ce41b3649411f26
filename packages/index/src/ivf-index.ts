import { prepareQuery } from './codecs/codec.js';
import { CodecExactTokenIndex, codecTokenStore, type CodecSide } from './codec-index.js';
import { searchK } from './errors.js';
import { proposalsFor } from './hnsw-options.js';
import { ivfBytes, ivfFromBytes, openIvfFile } from './ivf/bytes.js';
import { ScanPool, checkScanThreads, defaultScanThreads } from './ivf/scan-pool.js';
import { scanJob, scanRows, type ScanIndex } from './ivf/scan-rows.js';
import { WasmScanner } from './ivf/wasm-scan.js';
import { trainIvf, type IvfData, type ResidualBits } from './ivf/train.js';
import type { SimilarityKernel } from './kernel.js';
import { rescoreProposals } from './rescore-proposals.js';
import { tieOrder } from './ties.js';
import type { TokenHits, TokenIndex, TokenSearchOptions } from './token-index.js';
import type { TokenStore } from './token-store.js';

/** The clustered index's build parameters. */
export interface IvfParams {
  /** k-means centroids (clusters). */
  readonly centroids: number;
  /** Residual bits per dimension: 2 or 4. */
  readonly residualBits: ResidualBits;
  /** k-means sample size (default `64 · centroids`, at most the bank). */
  readonly sample?: number;
  /** Lloyd iterations (default 10). */
  readonly iterations?: number;
  /** The sample's seed (default `IVF_SAMPLE_SEED`, 42). */
  readonly seed?: number;
}

/** Search options of {@link IvfTokenIndex}. */
export interface IvfSearchOptions {
  /** Clusters probed per query row at least (more when the probed ones hold too few candidates). */
  readonly nprobe: number;
  /** Proposals per query row: `ceil(overFetch · k) + margin` (as HNSW's; default 1). */
  readonly overFetch?: number;
  /** Default 16. */
  readonly margin?: number;
  /**
   * Threads one search's scan runs on: the calling thread and `threads − 1` worker threads that
   * share the codes, the query rows split between them as each claims the next (at most one
   * thread a row). The results are the same whatever the count. Default
   * {@link defaultScanThreads}: 2 on a machine of 2 cores or more, else 1.
   */
  readonly threads?: number;
}

/** What the indexes of one scanner share ({@link IvfTokenIndex.withSearch}). */
interface IvfShared {
  readonly scanner: WasmScanner;
  /** What the scan threads read besides the codes. */
  readonly scan: ScanIndex;
  readonly pool: ScanPool;
  /** `[tokens]` the memory row of each bank token. */
  readonly tokenMemory: Int32Array;
}

/** What the last {@link IvfTokenIndex.search} scanned (a benchmark's roofline reads it). */
export interface IvfScanStats {
  /** Candidate tokens whose approximate similarity was computed, over all query rows. */
  readonly tokensScored: number;
  readonly clustersProbed: number;
  /** Query rows the worker threads scanned (0 on one thread; the rest, the calling thread's). */
  readonly workerRows: number;
  /** Seconds in centroid scoring, in the scan, and in the float64 rescoring. */
  readonly centroidSeconds: number;
  readonly scanSeconds: number;
  readonly rescoreSeconds: number;
  /**
   * This process's CPU seconds (user + system, every thread) over the scan: on a shared machine
   * the scan's own cost where wall time counts other work's too (an upper bound: it includes
   * any onnxruntime thread still spinning after the centroid product).
   */
  readonly scanCpuSeconds: number;
  /**
   * The candidate set held no more tokens than `nprobe` clusters do on average: it was searched
   * whole, exactly over the stored codes, and nothing was probed.
   */
  readonly wholeSet: boolean;
}

/**
 * The clustered residual backend (the WARP / PLAID design): tokens grouped by their nearest of
 * `centroids` k-means centroids, each stored as `residualBits` per dimension of its residual, laid
 * out by cluster ({@link IvfData}). A search scores every centroid with the kernel (one matrix
 * product), probes the `nprobe` best clusters per query row (more until the probed clusters held
 * enough candidate tokens), scores their tokens with decompression fused into the dot product (a
 * per-byte lookup table), keeps `ceil(overFetch · k) + margin` proposals per row, and rescores
 * them in float64 from the codec's stored codes, ranked as {@link HnswTokenIndex} ranks (a tie at
 * the worst proposal: that row searched exhaustively, `widenedRows`). A candidate set filters the
 * scan per token. The returned `values` are what the tail floor reads (METHOD.md §2).
 *
 * @example
 * const index = await IvfTokenIndex.build(side, { centroids: 4096, residualBits: 2 }, kernel,
 *   { nprobe: 16 });
 * const hits = await index.search(q, rows, 64, { memories }); // memories ascending
 */
export class IvfTokenIndex implements TokenIndex {
  readonly backend = 'ivf';
  readonly codec: string;
  readonly dim: number;
  readonly size: number;
  readonly data: IvfData;
  readonly probe: IvfSearchOptions;
  #stats: IvfScanStats | undefined;
  readonly #side: CodecSide;
  readonly #store: TokenStore;
  readonly #kernel: SimilarityKernel;
  readonly #exhaustive: CodecExactTokenIndex;
  readonly #shared: IvfShared;
  readonly #threads: number;

  /**
   * With `scanner` (the index `data` came from, {@link withSearch}, or {@link open}'s, its codes
   * read into it): its codes, and with `shared` its scan threads too.
   */
  constructor(
    side: CodecSide,
    data: IvfData,
    kernel: SimilarityKernel,
    options: IvfSearchOptions,
    scanner?: WasmScanner,
    shared?: IvfShared,
  ) {
    this.#side = side;
    // The codes move into the scanner's memory; the other arrays are copied out of the bytes
    // they may view, so those are not kept alive beside them.
    const own = scanner ?? new WasmScanner(data);
    this.data =
      scanner !== undefined
        ? data
        : {
            ...data,
            centroids: data.centroids.slice(),
            weights: data.weights.slice(),
            clusterOffsets: data.clusterOffsets.slice(),
            tokens: data.tokens.slice(),
            codes: own.codes,
          };
    this.codec = side.model.name;
    this.dim = side.model.dim;
    this.#store = codecTokenStore(side.model, side.codes);
    this.size = this.#store.size;
    if (data.tokens.length !== this.size || data.dim !== side.model.codeDim) {
      throw new Error(
        `IVF index of ${data.tokens.length} × ${data.dim} for codes of ${this.size} × ${side.model.codeDim}`,
      );
    }
    if (!Number.isInteger(options.nprobe) || options.nprobe < 1) {
      throw new Error(`nprobe must be an integer ≥ 1, got ${options.nprobe}`);
    }
    proposalsFor(1, options.overFetch, options.margin); // checks them
    this.#threads = checkScanThreads(options.threads ?? defaultScanThreads());
    this.probe = options;
    this.#kernel = kernel;
    this.#shared = shared ?? IvfTokenIndex.#share(side, this.data, own);
    this.#exhaustive = new CodecExactTokenIndex(side, kernel);
  }

  /** The token memories, the scan threads' view of the index, and their (unstarted) pool. */
  static #share(side: CodecSide, data: IvfData, scanner: WasmScanner): IvfShared {
    const offsets = side.tokenOffsets;
    const tokens = data.tokens.length;
    const tokenMemory = new Int32Array(tokens);
    for (let m = 0; m < offsets.length - 1; m++) tokenMemory.fill(m, offsets[m]!, offsets[m + 1]!);
    const placeMemory = new Int32Array(new SharedArrayBuffer(4 * tokens));
    for (let p = 0; p < tokens; p++) placeMemory[p] = tokenMemory[data.tokens[p]!]!;
    const scan: ScanIndex = {
      dim: data.dim,
      residualBits: data.residualBits,
      weights: data.weights.slice(),
      clusterOffsets: data.clusterOffsets.slice(),
      placeMemory,
    };
    return { scanner, scan, pool: new ScanPool(scanner, scan), tokenMemory };
  }

  /** Trains and lays out the index over the codec's decoded codes ({@link trainIvf}). */
  static async build(
    side: CodecSide,
    params: IvfParams,
    kernel: SimilarityKernel,
    options: IvfSearchOptions,
  ): Promise<IvfTokenIndex> {
    const data = await trainIvf(codecTokenStore(side.model, side.codes), kernel, params);
    return new IvfTokenIndex(side, data, kernel, options);
  }

  /** The index over bytes {@link toBytes} wrote (views into them, not copies). */
  static fromBytes(
    bytes: Uint8Array,
    side: CodecSide,
    kernel: SimilarityKernel,
    options: IvfSearchOptions,
  ): IvfTokenIndex {
    return new IvfTokenIndex(side, ivfFromBytes(bytes), kernel, options);
  }

  /**
   * The index in an `ivf.bin` file ({@link toBytes}' output), read by position: its codes go
   * straight into the scanner's memory, never read whole into another buffer.
   */
  static open(
    path: string,
    side: CodecSide,
    kernel: SimilarityKernel,
    options: IvfSearchOptions,
  ): IvfTokenIndex {
    const file = openIvfFile(path);
    const scanner = new WasmScanner(file.data, (codes) => file.readCodes(codes));
    return new IvfTokenIndex(
      side,
      { ...file.data, codes: scanner.codes },
      kernel,
      options,
      scanner,
    );
  }

  /**
   * The same index (codes and scan threads shared, not copied) with other search settings or
   * kernel.
   */
  withSearch(options: IvfSearchOptions, kernel: SimilarityKernel = this.#kernel): IvfTokenIndex {
    const shared = this.#shared;
    return new IvfTokenIndex(this.#side, this.data, kernel, options, shared.scanner, shared);
  }

  /**
   * Ends the scan's worker threads (shared with {@link withSearch}'s indexes; a later search
   * starts them again). Idle workers never hold the process open, but tests and servers close.
   */
  async close(): Promise<void> {
    await this.#shared.pool.close();
  }

  /** Scan worker threads running now (started by a search that runs on more than one thread). */
  get scanWorkers(): number {
    return this.#shared.pool.workers;
  }

  /** The index's bytes (centroids, buckets, layout, codes; not the rescoring codes). */
  toBytes(): Uint8Array {
    return ivfBytes(this.data);
  }

  /** What the last search scanned. */
  get stats(): IvfScanStats | undefined {
    return this.#stats;
  }

  async search(
    queries: Float32Array,
    rows: number,
    k: number,
    options: TokenSearchOptions,
  ): Promise<TokenHits> {
    const { memories } = options;
    const offsets = this.#side.tokenOffsets;
    const all = memories.length === offsets.length - 1;
    let candidateTokens = 0;
    for (const m of memories) candidateTokens += offsets[m + 1]! - offsets[m]!;
    // A candidate set no larger than what `nprobe` clusters hold on average is searched whole
    // and exactly: probing would scan as many tokens and meet few of the set's own (a haystack
    // of a few thousand tokens is spread over most clusters).
    const perCluster = this.size / (this.data.clusterOffsets.length - 1);
    if (!all && candidateTokens <= this.probe.nprobe * perCluster) {
      const t0 = performance.now();
      const whole = await this.#exhaustive.search(queries, rows, k, options);
      this.#stats = {
        tokensScored: candidateTokens * rows,
        clustersProbed: 0,
        workerRows: 0,
        centroidSeconds: 0,
        scanSeconds: (performance.now() - t0) / 1000,
        rescoreSeconds: 0,
        scanCpuSeconds: 0,
        wholeSet: true,
      };
      return whole;
    }
    const kk = searchK(k, candidateTokens, options.clampK);
    const codeDim = this.#side.model.codeDim;
    const q = prepareQuery(this.#side.model, queries, rows);
    const { overFetch, margin } = this.probe;
    const fetch = Math.min(proposalsFor(kk, overFetch, margin), candidateTokens);
    const proposed = await this.#propose(q, rows, fetch, all ? undefined : memories);
    const t1 = performance.now();

    const hits = rescoreProposals({
      store: this.#store,
      q,
      codeDim,
      rows,
      k: kk,
      proposals: (r) => proposed.subarray(r * fetch, (r + 1) * fetch),
      tokenOffsets: offsets,
      memories,
      candidateTokens,
      tokenMemory: this.#shared.tokenMemory,
      rank: this.#side.ids === undefined ? undefined : tieOrder(this.#side.ids).rank,
    });
    this.#stats = { ...this.#stats!, rescoreSeconds: (performance.now() - t1) / 1000 };
    let best: Float32Array | undefined;
    if (options.bestPerMemory === true) {
      best = (await this.#exhaustive.search(queries, rows, kk, { ...options, clampK: true })).best;
    }
    return best === undefined ? hits : { ...hits, best };
  }

  /**
   * `[rows × fetch]` proposed bank tokens: per row the best `fetch` candidate tokens by
   * approximate similarity over the probed clusters (every row gets `fetch`: probing continues
   * past `nprobe` clusters until the probed ones held that many candidates).
   */
  async #propose(
    q: Float32Array,
    rows: number,
    fetch: number,
    memories: Int32Array | undefined,
  ): Promise<Int32Array> {
    const data = this.data;
    const c = data.clusterOffsets.length - 1;
    const dim = data.dim;
    const t0 = performance.now();
    const cs = await this.#kernel.scores(q, rows, data.centroids, c, dim);
    const t1 = performance.now();
    const cpu0 = process.cpuUsage();
    let allowed: Uint8Array | undefined;
    if (memories !== undefined) {
      allowed = new Uint8Array(this.#side.tokenOffsets.length - 1);
      for (const m of memories) allowed[m] = 1;
    }
    const nprobe = this.probe.nprobe;
    const workers = Math.max(0, Math.min(this.#threads, rows) - 1);
    const job = scanJob({ rows, fetch, nprobe, scores: cs, q, allowed }, workers);
    const { scanner, scan, pool } = this.#shared;
    const count = workers > 0 ? await pool.run(job, workers) : scanRows(scan, scanner, job);
    const out = new Int32Array(rows * fetch);
    for (let r = 0; r < rows; r++) {
      const places = job.places.subarray(r * fetch, r * fetch + job.counts[r]!);
      for (let i = 0; i < places.length; i++) out[r * fetch + i] = data.tokens[places[i]!]!;
    }
    const cpu = process.cpuUsage(cpu0);
    this.#stats = {
      scanCpuSeconds: (cpu.user + cpu.system) / 1e6,
      tokensScored: count.scored,
      clustersProbed: count.probed,
      workerRows: workers > 0 ? count.rows : 0,
      centroidSeconds: (t1 - t0) / 1000,
      scanSeconds: (performance.now() - t1) / 1000,
      rescoreSeconds: 0,
      wholeSet: false,
    };
    return out;
  }
}
