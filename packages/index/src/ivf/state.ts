// The clustered index's mutable state, shared by the indexes `withSearch` makes: the base layout
// (resident, or read by position) with its scanner, scan threads and tail lists, the bank's
// memory rows and tombstones, the residual statistics, and the lock that keeps a change from
// running under a search.
import { closeSync, openSync } from 'node:fs';
import { codecTokenStore, type CodecSide } from '../codec-index.js';
import type { ConstantScores, ScorePrecision, SimilarityKernel } from '../kernel.js';
import type { TokenStore } from '../token-store.js';
import { ASSIGN_CHUNK, assignRows, packResidual, squaredResidual } from './assign.js';
import { IVF_BLOCK } from './layout.js';
import type { PagedCodes } from './paged.js';
import { ScanPool } from './scan-pool.js';
import type { ScanIndex } from './scan-rows.js';
import { TailLists } from './tails.js';
import type { IvfData, IvfResidualStats } from './train.js';
import { WasmScanner } from './wasm-scan.js';

/** An index file whose codes are read by position: its path, layout and descriptor (−1: closed). */
export interface PagedFile {
  readonly path: string;
  readonly codes: PagedCodes;
  fd: number;
}

/** One base layout and what scans it: replaced whole by a compaction. */
export interface IvfBase {
  /** The layout (its `codes`: the scanner's resident view, empty when read by position). */
  readonly data: IvfData;
  readonly scanner: WasmScanner;
  readonly scan: ScanIndex;
  readonly pool: ScanPool;
  readonly tails: TailLists;
  readonly paged: PagedFile | undefined;
  /** Per kernel and arithmetic, its constant scorer of the centroids (made at first use). */
  readonly centroidScorers: Map<SimilarityKernel, Map<ScorePrecision, Promise<ConstantScores>>>;
}

/**
 * The centroid scores `[rows × clusters]` of the query rows `q`: on the kernel's constant scorer
 * of `base`'s centroids in `precision` where it has one (packed once, at the first search), else
 * its float32 {@link SimilarityKernel.scores}.
 */
export async function centroidScores(
  base: IvfBase,
  kernel: SimilarityKernel,
  q: Float32Array,
  rows: number,
  precision: ScorePrecision = 'fp32',
): Promise<Float32Array> {
  const { centroids, clusterOffsets, dim } = base.data;
  const c = clusterOffsets.length - 1;
  if (kernel.constantScores === undefined) return kernel.scores(q, rows, centroids, c, dim);
  let scorers = base.centroidScorers.get(kernel);
  if (scorers === undefined) base.centroidScorers.set(kernel, (scorers = new Map()));
  let scorer = scorers.get(precision);
  if (scorer === undefined) {
    scorer = kernel.constantScores(centroids, c, dim, precision);
    scorers.set(precision, scorer);
    // A failed scorer is not kept: the next search makes it again.
    scorer.catch(() => scorers.delete(precision));
  }
  return (await scorer).scores(q, rows);
}

/** Releases a base's centroid scorers (a replaced or closed base). */
export async function releaseCentroidScorers(base: IvfBase): Promise<void> {
  const scorers = [...base.centroidScorers.values()].flatMap((m) => [...m.values()]);
  base.centroidScorers.clear();
  for (const s of await Promise.allSettled(scorers)) {
    if (s.status === 'fulfilled') await s.value.release();
  }
}

/** The shared copy of an int32 array (what every scan thread reads without a copy). */
function sharedCopy(a: ArrayLike<number>, length = a.length): Int32Array {
  const out = new Int32Array(new SharedArrayBuffer(4 * Math.max(1, length)));
  for (let i = 0; i < a.length; i++) out[i] = a[i]!;
  return out.subarray(0, length);
}

/** Bank token → memory row of `offsets` (room for `capacity` tokens). */
function memoryOfTokens(offsets: ArrayLike<number>, capacity: number): Int32Array {
  const out = new Int32Array(capacity);
  for (let m = 0; m < offsets.length - 1; m++) out.fill(m, offsets[m]!, offsets[m + 1]!);
  return out;
}

/**
 * A base over `data`: with `paged`, its codes stay in the file (each lane caches blocks of
 * `paged.codes.laneBytes`); with `fill`, `fill` writes them into the scanner's memory; else
 * they are copied there from `data.codes`.
 */
export function makeBase(
  data: IvfData,
  tokenMemory: Int32Array,
  paged: PagedFile | undefined,
  fill?: (into: Uint8Array) => void,
): IvfBase {
  const shape = { dim: data.dim, residualBits: data.residualBits, tokens: data.tokens };
  const scanner =
    paged !== undefined
      ? new WasmScanner(shape, paged.codes.laneBytes)
      : new WasmScanner(fill === undefined ? data : { ...shape, fill });
  const c = data.clusterOffsets.length - 1;
  const placeToken = sharedCopy(data.tokens);
  const placeMemory = new Int32Array(new SharedArrayBuffer(4 * Math.max(1, placeToken.length)));
  for (let p = 0; p < data.tokens.length; p++) placeMemory[p] = tokenMemory[data.tokens[p]!]!;
  const scan: ScanIndex = {
    dim: data.dim,
    residualBits: data.residualBits,
    weights: data.weights.slice(),
    clusterOffsets: data.clusterOffsets.slice(),
    placeMemory: placeMemory.subarray(0, data.tokens.length),
    placeToken,
    paged: paged?.codes,
  };
  // The base keeps its own copies (the given arrays may view bytes that are not kept alive).
  const own: IvfData = {
    ...data,
    centroids: data.centroids.slice(),
    weights: scan.weights,
    cutoffs: data.cutoffs.slice(),
    clusterOffsets: scan.clusterOffsets,
    tokens: placeToken,
    deleted: data.deleted.slice(),
    codes: scanner.codes,
  };
  const tails = new TailLists(scanner, c, data.dim, data.residualBits);
  const pool = new ScanPool(scanner, scan);
  return { data: own, scanner, scan, pool, tails, paged, centroidScorers: new Map() };
}

/** What {@link IvfState.append} added. */
export interface IvfAppended {
  readonly memories: number;
  readonly tokens: number;
}

/**
 * The mutable state: the side (rescoring codes, memory rows, ids), the base, the tombstones and
 * residual statistics. Changes run under {@link write}, searches under {@link read}: a change
 * waits for the searches in flight, and searches wait for it.
 */
export class IvfState {
  side: CodecSide;
  store: TokenStore;
  base: IvfBase;
  /** `[≥ tokens]` each bank token's memory row (grown by doubling). */
  tokenMemory: Int32Array;
  /** `[≥ memories]` 1: the memory is deleted (grown by doubling). */
  deleted: Uint8Array;
  /** Memories deleted since the base was laid out (their tokens still in it). */
  pendingDeletes = 0;
  /** Tokens of deleted memories. */
  deletedTokens = 0;
  residuals: IvfResidualStats;
  /** Bumped by every change (what an index's cached exhaustive backend is checked against). */
  version = 0;
  #readers = 0;
  #writer: Promise<void> | undefined;
  #drained: (() => void) | undefined;

  /** `fill`: the base's resident codes written by it, not copied from `data.codes` ({@link makeBase}). */
  constructor(
    side: CodecSide,
    data: IvfData,
    paged: PagedFile | undefined,
    fill?: (into: Uint8Array) => void,
  ) {
    this.side = side;
    this.store = codecTokenStore(side.model, side.codes);
    const offsets = side.tokenOffsets;
    const memories = offsets.length - 1;
    this.tokenMemory = memoryOfTokens(offsets, this.store.size);
    this.deleted = new Uint8Array(Math.max(1, memories));
    for (const m of data.deleted) {
      if (!(m >= 0 && m < memories) || this.deleted[m] === 1) {
        throw new Error(`IVF deleted memories must be distinct rows below ${memories}, got ${m}`);
      }
      this.deleted[m] = 1;
      this.deletedTokens += offsets[m + 1]! - offsets[m]!;
    }
    const live = this.store.size - this.deletedTokens;
    if (data.tokens.length !== live || data.dim !== side.model.codeDim) {
      throw new Error(
        `IVF index of ${data.tokens.length} × ${data.dim} for codes of ${live} live × ${side.model.codeDim}`,
      );
    }
    this.residuals = data.residuals;
    this.base = makeBase(data, this.tokenMemory, paged, fill);
  }

  /** Memories of the bank now. */
  get memories(): number {
    return this.side.tokenOffsets.length - 1;
  }

  /** Runs `fn` as a search: after any change in progress, never beside one. */
  async read<T>(fn: () => Promise<T>): Promise<T> {
    while (this.#writer !== undefined) await this.#writer;
    this.#readers++;
    try {
      return await fn();
    } finally {
      if (--this.#readers === 0) this.#drained?.();
    }
  }

  /** Runs `fn` as a change: after the searches in flight and any other change. */
  async write<T>(fn: () => Promise<T>): Promise<T> {
    while (this.#writer !== undefined) await this.#writer;
    let release!: () => void;
    this.#writer = new Promise<void>((resolve) => (release = resolve));
    try {
      if (this.#readers > 0) await new Promise<void>((resolve) => (this.#drained = resolve));
      this.#drained = undefined;
      return await fn();
    } finally {
      this.#writer = undefined;
      release();
    }
  }

  /** The index file's descriptor, opened again if {@link closeFile} closed it (−1: resident). */
  fd(): number {
    const paged = this.base.paged;
    if (paged === undefined) return -1;
    if (paged.fd < 0) paged.fd = openSync(paged.path, 'r');
    return paged.fd;
  }

  /** Closes the index file (a later search opens it again). */
  closeFile(): void {
    const paged = this.base.paged;
    if (paged !== undefined && paged.fd >= 0) {
      closeSync(paged.fd);
      paged.fd = -1;
    }
  }

  /**
   * Appends the tokens of `grown` past the current bank: `grown` is the side after new memories
   * were added (the same codec model, the current memories' token offsets and ids unchanged).
   * Each new token is assigned to its best centroid ({@link assignRows}, as a build assigns),
   * its residual packed with the index's cutoffs into its cluster's tail list, and its
   * squared residual added to the drift statistics. Call under {@link write}.
   */
  async append(grown: CodecSide, kernel: SimilarityKernel): Promise<IvfAppended> {
    const { data, tails } = this.base;
    const { dim, residualBits: bits, centroids, cutoffs } = data;
    if (cutoffs.length === 0) {
      throw new Error('IVF index read from a BFEIVF02 file has no residual cutoffs: rebuild it');
    }
    this.#checkGrown(grown);
    const store = codecTokenStore(grown.model, grown.codes);
    const n0 = this.store.size;
    const n1 = store.size;
    const m0 = this.memories;
    const m1 = grown.tokenOffsets.length - 1;
    if (this.tokenMemory.length < n1) {
      const t = new Int32Array(Math.max(n1, 2 * this.tokenMemory.length));
      t.set(this.tokenMemory);
      this.tokenMemory = t;
    }
    for (let m = m0; m < m1; m++) {
      this.tokenMemory.fill(m, grown.tokenOffsets[m]!, grown.tokenOffsets[m + 1]!);
    }
    if (this.deleted.length < m1) {
      const d = new Uint8Array(Math.max(m1, 2 * this.deleted.length));
      d.set(this.deleted);
      this.deleted = d;
    }
    const c = centroids.length / dim;
    const cluster = new Int32Array(ASSIGN_CHUNK);
    const order = new Int32Array(ASSIGN_CHUNK);
    const places = new Int32Array(ASSIGN_CHUNK);
    const starts = new Int32Array(c + 1);
    let residual = 0;
    for (let a = n0; a < n1; a += ASSIGN_CHUNK) {
      const m = Math.min(ASSIGN_CHUNK, n1 - a);
      const x = store.read(a, a + m);
      await assignRows(kernel, x, m, centroids, c, dim, cluster, 0);
      // Counting sort by cluster (ascending token within one): each cluster's new places are
      // reserved at once, consecutive blocks where they fit.
      starts.fill(0);
      for (let i = 0; i < m; i++) starts[cluster[i]! + 1]!++;
      for (let k = 0; k < c; k++) starts[k + 1]! += starts[k]!;
      const fill = starts.slice(0, c);
      for (let i = 0; i < m; i++) order[fill[cluster[i]!]!++] = i;
      for (let k = 0; k < c; k++) {
        const count = starts[k + 1]! - starts[k]!;
        if (count > 0) tails.reserve(k, count, places, starts[k]!);
      }
      const memory = new Uint8Array(this.base.scanner.share.memory.buffer);
      for (let o = 0; o < m; o++) {
        const i = order[o]!;
        const k = cluster[i]!;
        const p = places[o]!;
        residual += squaredResidual(x, i * dim, centroids, k * dim, dim);
        packResidual(
          x,
          i * dim,
          centroids,
          k * dim,
          cutoffs,
          dim,
          bits,
          memory,
          tails.codeAt(p),
          IVF_BLOCK,
        );
        tails.place(p, a + i, this.tokenMemory[a + i]!);
      }
    }
    this.residuals = {
      trainedMean: this.residuals.trainedMean,
      appendedSum: this.residuals.appendedSum + residual,
      appendedTokens: this.residuals.appendedTokens + (n1 - n0),
    };
    this.side = grown;
    this.store = store;
    this.version++;
    return { memories: m1 - m0, tokens: n1 - n0 };
  }

  /** Marks memory rows deleted; returns how many were live. Call under {@link write}. */
  delete(memories: ArrayLike<number>): number {
    const offsets = this.side.tokenOffsets;
    let count = 0;
    for (let i = 0; i < memories.length; i++) {
      const m = memories[i]!;
      if (!Number.isInteger(m) || m < 0 || m >= this.memories) {
        throw new Error(`IVF delete: memory row ${m} is not in 0..${this.memories - 1}`);
      }
      if (this.deleted[m] === 1) continue;
      this.deleted[m] = 1;
      this.deletedTokens += offsets[m + 1]! - offsets[m]!;
      count++;
    }
    this.pendingDeletes += count;
    if (count > 0) this.version++;
    return count;
  }

  /** Replaces the base (a compaction's); the old one's scan threads end. */
  async replace(base: IvfBase, residuals: IvfResidualStats): Promise<void> {
    const old = this.base;
    this.base = base;
    this.residuals = residuals;
    this.pendingDeletes = 0;
    this.version++;
    await old.pool.close();
    await releaseCentroidScorers(old);
    if (old.paged !== undefined && old.paged.fd >= 0) closeSync(old.paged.fd);
  }

  /** Refuses a side that is not the current one grown by appended memories. */
  #checkGrown(grown: CodecSide): void {
    const { model, tokenOffsets, ids } = this.side;
    if (JSON.stringify(grown.model) !== JSON.stringify(model)) {
      throw new Error('IVF append: the grown side must keep the codec model');
    }
    const next = grown.tokenOffsets;
    if (next.length < tokenOffsets.length) throw new Error('IVF append: memories were removed');
    for (let m = 0; m < tokenOffsets.length; m++) {
      if (next[m] !== tokenOffsets[m]) {
        throw new Error(`IVF append: memory ${m}'s token offset changed (append memories only)`);
      }
    }
    if (ids !== undefined) {
      if (grown.ids === undefined || grown.ids.length !== next.length - 1) {
        throw new Error('IVF append: the grown side needs an id for every memory');
      }
      for (let m = 0; m < ids.length; m++) {
        if (grown.ids[m] !== ids[m]) throw new Error(`IVF append: memory ${m}'s id changed`);
      }
    }
  }
}
