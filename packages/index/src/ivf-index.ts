import { prepareQuery } from './codecs/codec.js';
import { CodecExactTokenIndex, codecTokenStore, type CodecSide } from './codec-index.js';
import { searchK } from './errors.js';
import { proposalsFor } from './hnsw-options.js';
import { ivfBytes, ivfFromBytes, openIvfFile } from './ivf/bytes.js';
import { ApproxTop, probeOrder } from './ivf/scan.js';
import { scanCluster } from './ivf/scan-cluster.js';
import { WasmScanner, quantizeTables } from './ivf/wasm-scan.js';
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
}

/** What the last {@link IvfTokenIndex.search} scanned (a benchmark's roofline reads it). */
export interface IvfScanStats {
  /** Candidate tokens whose approximate similarity was computed, over all query rows. */
  readonly tokensScored: number;
  readonly clustersProbed: number;
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
  readonly #tokenMemory: Int32Array;
  readonly #exhaustive: CodecExactTokenIndex;

  readonly #scanner: WasmScanner;

  /** With `scanner`: the index `data` came from ({@link withSearch}), sharing its codes. */
  constructor(
    side: CodecSide,
    data: IvfData,
    kernel: SimilarityKernel,
    options: IvfSearchOptions,
    scanner?: WasmScanner,
  ) {
    this.#side = side;
    // The codes move into the scanner's memory; the other arrays are copied out of the bytes
    // they may view, so those are not kept alive beside them.
    this.#scanner = scanner ?? new WasmScanner(data);
    this.data =
      scanner !== undefined
        ? data
        : {
            ...data,
            centroids: data.centroids.slice(),
            weights: data.weights.slice(),
            clusterOffsets: data.clusterOffsets.slice(),
            tokens: data.tokens.slice(),
            codes: this.#scanner.codes,
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
    this.probe = options;
    this.#kernel = kernel;
    const memories = side.tokenOffsets.length - 1;
    this.#tokenMemory = new Int32Array(this.size);
    for (let m = 0; m < memories; m++) {
      this.#tokenMemory.fill(m, side.tokenOffsets[m]!, side.tokenOffsets[m + 1]!);
    }
    this.#exhaustive = new CodecExactTokenIndex(side, kernel);
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

  /** The same index (codes shared, not copied) with other search settings or kernel. */
  withSearch(options: IvfSearchOptions, kernel: SimilarityKernel = this.#kernel): IvfTokenIndex {
    return new IvfTokenIndex(this.#side, this.data, kernel, options, this.#scanner);
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
      tokenMemory: this.#tokenMemory,
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
    const scanner = this.#scanner;
    const top = new ApproxTop(fetch);
    const out = new Int32Array(rows * fetch);
    const nprobe = Math.min(this.probe.nprobe, c);
    const bounds = data.clusterOffsets;
    let scored = 0;
    let probed = 0;
    for (let r = 0; r < rows; r++) {
      const row = quantizeTables(data, q, r * dim, scanner.tables);
      top.reset();
      let order = probeOrder(cs, r * c, c, nprobe);
      let seen = 0;
      for (let i = 0; i < c; i++) {
        if (i >= nprobe && seen >= fetch) break;
        // Too few candidates in the first nprobe clusters (a small candidate set): on in order.
        if (i === order.length) order = probeOrder(cs, r * c, c, c);
        const cl = order[i]!;
        const from = bounds[cl]!;
        const to = bounds[cl + 1]!;
        const base = cs[r * c + cl]!;
        seen += scanCluster(
          scanner,
          row,
          base,
          from,
          to,
          top,
          allowed,
          this.#tokenMemory,
          data.tokens,
        );
        probed++;
      }
      scored += seen;
      for (let i = 0; i < top.count; i++) out[r * fetch + i] = data.tokens[top.places[i]!]!;
    }
    const cpu = process.cpuUsage(cpu0);
    this.#stats = {
      scanCpuSeconds: (cpu.user + cpu.system) / 1e6,
      tokensScored: scored,
      clustersProbed: probed,
      centroidSeconds: (t1 - t0) / 1000,
      scanSeconds: (performance.now() - t1) / 1000,
      rescoreSeconds: 0,
    };
    return out;
  }
}
