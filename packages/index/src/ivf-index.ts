import { prepareQuery } from './codecs/codec.js';
import { CodecExactTokenIndex, codecTokenStore, type CodecSide } from './codec-index.js';
import { searchK } from './errors.js';
import { proposalsFor } from './hnsw-options.js';
import { ivfFromBytes, writeIvfFile } from './ivf/bytes.js';
import { compactIvf, driftOf, type IvfCompactOptions } from './ivf/compact.js';
import { liveCandidates, toGivenMemories } from './ivf/live.js';
import { openFileState, saveState, stateBytes } from './ivf/file-state.js';
import { warpFloor, type FloorSet } from './ivf/missing.js';
import type { IvfOpenOptions, IvfParams, IvfScanStats, IvfSearchOptions } from './ivf/options.js';
import { checkScanThreads, defaultScanThreads } from './ivf/scan-pool.js';
import { probeLimits, proposeRows, type ProbeLimits } from './ivf/propose.js';
import { IvfState, makeBase, releaseCentroidScorers, type IvfAppended } from './ivf/state.js';
import { trainIvf, type IvfData, type IvfResidualStats } from './ivf/train.js';
import type { ScorePrecision, SimilarityKernel } from './kernel.js';
import { ProposalRescorer } from './rescore-proposals.js';
import { tieOrder } from './ties.js';
import type { TokenHits, TokenIndex, TokenSearchOptions } from './token-index.js';

export type { IvfOpenOptions, IvfParams, IvfScanStats, IvfSearchOptions } from './ivf/options.js';

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
 * Incremental: {@link append} assigns new memories' tokens to their best centroids and adds them
 * to their clusters' tail lists (searched with the base layout), {@link delete} tombstones memory
 * rows (never returned again), {@link compact} merges the tails into the contiguous layout and
 * drops deleted tokens — re-training the centroids when {@link drift} passed a threshold.
 *
 * @example
 * const index = await IvfTokenIndex.build(side, { centroids: 4096, residualBits: 2 }, kernel,
 *   { nprobe: 16 });
 * const hits = await index.search(q, rows, 64, { memories }); // memories ascending
 * await index.append(grownSide); // the side with new memories after the old ones
 * await index.delete([3, 17]); // memory rows
 * await index.compact(); // { reclustered: index.drift > 1.25 }
 */
export class IvfTokenIndex implements TokenIndex {
  readonly backend = 'ivf';
  readonly codec: string;
  readonly dim: number;
  readonly probe: IvfSearchOptions;
  #stats: IvfScanStats | undefined;
  readonly #kernel: SimilarityKernel;
  readonly #state: IvfState;
  readonly #threads: number;
  readonly #limits: ProbeLimits;
  /** The centroid product's arithmetic (`probe.centroidProduct`, fp32 when left out). */
  readonly #product: ScorePrecision;
  #exhaustive: { readonly version: number; readonly index: CodecExactTokenIndex } | undefined;

  /**
   * The index over laid-out `data` for `side` (its codes copied into the scanner's memory). With
   * `state` ({@link withSearch}'s, {@link open}'s), that state instead: its side, layout, codes
   * and scan threads.
   */
  constructor(
    side: CodecSide,
    data: IvfData,
    kernel: SimilarityKernel,
    options: IvfSearchOptions,
    state?: IvfState,
  ) {
    this.#state = state ?? new IvfState(side, data, undefined);
    this.codec = this.#state.side.model.name;
    this.dim = this.#state.side.model.dim;
    if (!Number.isInteger(options.nprobe) || options.nprobe < 1) {
      throw new Error(`nprobe must be an integer ≥ 1, got ${options.nprobe}`);
    }
    proposalsFor(1, options.overFetch, options.margin); // checks them
    this.#limits = probeLimits(options);
    this.#product = options.centroidProduct ?? 'fp32';
    if (this.#product !== 'fp32' && this.#product !== 'int8') {
      throw new Error(`centroidProduct must be 'fp32' or 'int8', got ${String(this.#product)}`);
    }
    this.#threads = checkScanThreads(options.threads ?? defaultScanThreads());
    this.probe = options;
    this.#kernel = kernel;
  }

  /** Trains and lays out the index over the codec's decoded codes ({@link trainIvf}). */
  static async build(
    side: CodecSide,
    params: IvfParams,
    kernel: SimilarityKernel,
    options: IvfSearchOptions,
  ): Promise<IvfTokenIndex> {
    const state = new IvfState(side, await trainIvfOver(side, kernel, params), undefined);
    return new IvfTokenIndex(side, state.base.data, kernel, options, state);
  }

  /**
   * Trains and lays out the index as {@link build} does and writes it to `path` ({@link save}'s
   * bytes) with no scanner made: the codes are held once, not also copied into a scan memory —
   * how an index too large to hold twice is built, then {@link open}ed.
   */
  static async buildFile(
    side: CodecSide,
    params: IvfParams,
    kernel: SimilarityKernel,
    path: string,
  ): Promise<void> {
    writeIvfFile(path, await trainIvfOver(side, kernel, params));
  }

  /** The index over bytes {@link toBytes} wrote (the codes copied into the scanner's memory). */
  static fromBytes(
    bytes: Uint8Array,
    side: CodecSide,
    kernel: SimilarityKernel,
    options: IvfSearchOptions,
  ): IvfTokenIndex {
    return new IvfTokenIndex(side, ivfFromBytes(bytes), kernel, options);
  }

  /**
   * The index in an `ivf.bin` file ({@link toBytes}' output), never read whole: the centroids,
   * buckets, cluster offsets and token ids are read into memory, the codes stay in the file and
   * each scan thread reads its probed clusters' blocks by position into a cache of its own
   * (`cacheBytes`, recently used whole clusters kept). The hits are those of the index in memory,
   * byte for byte. A {@link compact}ion lays the index out in memory. With `resident`, the
   * codes are read whole into the scan's memory at the open instead (straight from the file).
   */
  static open(
    path: string,
    side: CodecSide,
    kernel: SimilarityKernel,
    options: IvfSearchOptions,
    open: IvfOpenOptions = {},
  ): IvfTokenIndex {
    const state = openFileState(path, side, open);
    return new IvfTokenIndex(side, state.base.data, kernel, options, state);
  }

  /**
   * The same index (state, codes and scan threads shared, not copied: a change through one is
   * seen by all) with other search settings or kernel.
   */
  withSearch(options: IvfSearchOptions, kernel: SimilarityKernel = this.#kernel): IvfTokenIndex {
    const state = this.#state;
    return new IvfTokenIndex(state.side, state.base.data, kernel, options, state);
  }

  /**
   * Ends the scan's worker threads and closes an opened index's file (shared with {@link
   * withSearch}'s indexes; a later search starts and opens them again), once the searches in
   * flight have finished (as a change waits for them). Idle workers never hold the process open,
   * but tests and servers close.
   */
  close(): Promise<void> {
    const state = this.#state;
    return state.write(async () => {
      await state.base.pool.close();
      await releaseCentroidScorers(state.base);
      state.closeFile();
    });
  }

  /** Scan worker threads running now (started by a search that runs on more than one thread). */
  get scanWorkers(): number {
    return this.#state.base.pool.workers;
  }

  /** Tokens of the bank (the side's codes), deleted ones included. */
  get size(): number {
    return this.#state.store.size;
  }

  /** The contiguous base layout (its codes empty when read by position: {@link open}). */
  get data(): IvfData {
    return this.#state.base.data;
  }

  /** Tokens appended since the last layout, in the clusters' tail lists. */
  get tailTokens(): number {
    return this.#state.base.tails.tokens;
  }

  /** Tokens of memories not deleted. */
  get liveTokens(): number {
    return this.#state.store.size - this.#state.deletedTokens;
  }

  /** The residual statistics the {@link drift} is computed from. */
  get residuals(): IvfResidualStats {
    return this.#state.residuals;
  }

  /**
   * The mean squared residual `‖x − centroid‖²` of the tokens appended since the centroids were
   * trained over that of the tokens they were trained on (1: nothing appended). Well above 1:
   * the new tokens lie off the centroids (a new topic), and {@link compact} re-clusters.
   */
  get drift(): number {
    return driftOf(this.#state.residuals);
  }

  /**
   * The index's bytes (centroids, buckets, layout, codes, deleted memories; not the rescoring
   * codes). An index with appended tokens or deletions not yet laid out is refused: {@link
   * compact} it first.
   */
  toBytes(): Uint8Array {
    return stateBytes(this.#state);
  }

  /**
   * Writes {@link toBytes}' bytes to `path` (fsynced) without concatenating them first: what
   * {@link open} reads. The same refusal as {@link toBytes}.
   */
  save(path: string): void {
    saveState(this.#state, path);
  }

  /**
   * Appends the new memories of `grown` (this index's side with memories added after its own;
   * their tokens after its tokens): each token assigned to its nearest centroid as a build
   * assigns it, coded with the index's residual buckets and appended to its cluster's tail list,
   * which searches scan after the cluster's base places. Waits for searches in flight.
   */
  append(grown: CodecSide): Promise<IvfAppended> {
    const state = this.#state;
    return state.write(() => state.append(grown, this.#kernel));
  }

  /**
   * Deletes memory rows: their tokens are never returned again (filtered in the scan, so every
   * row still gets its proposals from live tokens), and dropped from the layout by {@link
   * compact}. Returns how many of them were live.
   */
  delete(memories: ArrayLike<number>): Promise<number> {
    const state = this.#state;
    return state.write(() => Promise.resolve(state.delete(memories)));
  }

  /**
   * Lays the index out again in memory: each cluster's base and tail tokens contiguous, deleted
   * memories' tokens dropped — re-training the centroids on the live tokens (the build's seeded
   * k-means) when `recluster`, or when left out and {@link drift} exceeds `driftThreshold`.
   */
  compact(options: IvfCompactOptions = {}): Promise<{ reclustered: boolean }> {
    const state = this.#state;
    return state.write(async () => {
      const { data, reclustered } = await compactIvf(state, this.#kernel, options);
      await state.replace(makeBase(data, state.tokenMemory, undefined), data.residuals);
      return { reclustered };
    });
  }

  /** What the last search scanned. */
  get stats(): IvfScanStats | undefined {
    return this.#stats;
  }

  search(
    queries: Float32Array,
    rows: number,
    k: number,
    options: TokenSearchOptions,
  ): Promise<TokenHits> {
    return this.#state.read(async () => {
      const given = options.memories;
      const live = liveCandidates(given, this.#state.deleted);
      if (live === given) return this.#search(queries, rows, k, options, false);
      const hits = await this.#search(queries, rows, k, { ...options, memories: live }, true);
      return toGivenMemories(hits, given, live);
    });
  }

  /** `hits` with WARP's estimate as their floor when the options ask for it ({@link warpFloor}). */
  #withFloor(
    hits: TokenHits,
    queries: Float32Array,
    rows: number,
    set: FloorSet,
    scores?: Float32Array,
  ): Promise<TokenHits> {
    if (this.probe.floor !== 'warp') return Promise.resolve(hits);
    return warpFloor(this.#state, this.#kernel, hits, queries, rows, set, scores);
  }

  /** The exhaustive backend over the current side (made again after a change). */
  #exact(): CodecExactTokenIndex {
    const state = this.#state;
    if (this.#exhaustive?.version !== state.version) {
      const index = new CodecExactTokenIndex(state.side, this.#kernel);
      this.#exhaustive = { version: state.version, index };
    }
    return this.#exhaustive!.index;
  }

  /** The search over live candidate `memories` (`filtered`: some memories are deleted). */
  async #search(
    queries: Float32Array,
    rows: number,
    k: number,
    options: TokenSearchOptions,
    filtered: boolean,
  ): Promise<TokenHits> {
    const state = this.#state;
    const { memories } = options;
    const offsets = state.side.tokenOffsets;
    const all = !filtered && memories.length === offsets.length - 1;
    let candidateTokens = 0;
    // Every memory (ascending and distinct, so 0 .. M − 1): their tokens at once.
    if (all) candidateTokens = offsets[memories.length]! - offsets[0]!;
    else for (const m of memories) candidateTokens += offsets[m + 1]! - offsets[m]!;
    const set: FloorSet = { memories, all, tokens: candidateTokens };
    // A candidate set no larger than what `nprobe` clusters hold on average is searched whole
    // and exactly: probing would scan as many tokens and meet few of the set's own (a haystack
    // of a few thousand tokens is spread over most clusters).
    const perCluster = this.liveTokens / (this.data.clusterOffsets.length - 1);
    if (!all && candidateTokens <= this.probe.nprobe * perCluster) {
      const t0 = performance.now();
      const exact = await this.#exact().search(queries, rows, k, options);
      const whole = await this.#withFloor(exact, queries, rows, set);
      this.#stats = {
        tokensScored: candidateTokens * rows,
        clustersProbed: 0,
        workerRows: 0,
        centroidSeconds: 0,
        scanSeconds: (performance.now() - t0) / 1000,
        rescoreSeconds: 0,
        scanCpuSeconds: 0,
        wholeSet: true,
        codeBytesRead: 0,
      };
      return whole;
    }
    const kk = searchK(k, candidateTokens, options.clampK);
    const codeDim = state.side.model.codeDim;
    const q = prepareQuery(state.side.model, queries, rows);
    const { overFetch, margin } = this.probe;
    const fetch = Math.min(proposalsFor(kk, overFetch, margin), candidateTokens);
    const rescore = new ProposalRescorer({
      store: state.store,
      q,
      codeDim,
      rows,
      k: kk,
      tokenOffsets: offsets,
      memories,
      candidateTokens,
      tokenMemory: state.tokenMemory,
      rank: state.side.ids === undefined ? undefined : tieOrder(state.side.ids).rank,
    });
    // Each row rescored as soon as its proposals are in, between the calling thread's scans.
    const job = {
      q,
      rows,
      fetch,
      memories: all ? undefined : memories,
      centroidProduct: this.#product,
    };
    const proposed = await proposeRows(
      this.#state,
      this.#kernel,
      this.#limits,
      this.#threads,
      job,
      (r, found) => rescore.row(r, found),
    );
    this.#stats = {
      ...proposed.stats,
      scanSeconds: proposed.stats.scanSeconds - rescore.seconds,
      rescoreSeconds: rescore.seconds,
    };
    const hits = await this.#withFloor(rescore.hits(), queries, rows, set, proposed.scores);
    let best: Float32Array | undefined;
    if (options.bestPerMemory === true) {
      best = (await this.#exact().search(queries, rows, kk, { ...options, clampK: true })).best;
    }
    return best === undefined ? hits : { ...hits, best };
  }
}

/** {@link trainIvf} over the side's decoded codes. */
function trainIvfOver(
  side: CodecSide,
  kernel: SimilarityKernel,
  params: IvfParams,
): Promise<IvfData> {
  return trainIvf(codecTokenStore(side.model, side.codes), kernel, params);
}
