// The clustered index's parameters, search options and scan statistics.
import type { ScorePrecision } from '../kernel.js';
import type { ResidualBits } from './train.js';

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

/** Search options of `IvfTokenIndex`. */
export interface IvfSearchOptions {
  /** Clusters probed per query row at least (more when the probed ones hold too few candidates). */
  readonly nprobe: number;
  /**
   * Adaptive probing (default: off, every row probes `nprobe` clusters): past its first
   * `nprobe`, a row goes on probing in probe order while the next centroid scores at least its
   * running top's floor (the `fetch`-th approximate similarity so far) less `probeSlack`, up to
   * `maxProbe` clusters. A row whose top is already well above the clusters left stops early; one
   * whose matches spread over many clusters probes more. A number ≥ 0.
   */
  readonly probeSlack?: number;
  /** With `probeSlack`: clusters one row probes at most (an integer ≥ `nprobe`; default 64). */
  readonly maxProbe?: number;
  /** Proposals per query row: `ceil(overFetch · k) + margin` (as HNSW's; default 1). */
  readonly overFetch?: number;
  /** Default 16. */
  readonly margin?: number;
  /**
   * Threads one search's scan runs on: the calling thread and `threads − 1` worker threads that
   * share the codes, the query rows split between them as each claims the next (at most one
   * thread a row). The results are the same whatever the count. Default
   * `defaultScanThreads`: 2 on a machine of 2 cores or more, else 1.
   */
  readonly threads?: number;
  /**
   * What a query row's missing similarities are floored at: `'tail'` (default) the k-th
   * returned similarity, METHOD.md §2; `'warp'` WARP's estimate from the centroid scores
   * (`ivf/missing.ts`), returned as the hits' `floor`.
   */
  readonly floor?: 'tail' | 'warp';
  /**
   * The centroid product's arithmetic: `'fp32'` (default) float32 products; `'int8'` the
   * centroids quantised to 7-bit integers (one scale each) and each search's query rows to
   * uint8, onnxruntime's integer GEMM (`DynamicQuantizeMatMul`). Its approximate scores order
   * the probes and shift each cluster's approximate token scores; the hits are still rescored
   * exactly. The rows share one uint8 scale, so a row's probes can depend on the rows searched
   * with it (the same query always probes alike). A kernel without an int8 product scores in
   * float32.
   */
  readonly centroidProduct?: ScorePrecision;
}

/** How `IvfTokenIndex.open` reads an index file. */
export interface IvfOpenOptions {
  /**
   * Bytes of each scan thread's cache of code blocks (default `DEFAULT_CACHE_BYTES`,
   * 4 MiB): the probed clusters' blocks are read by position into it, recently used whole
   * clusters kept.
   */
  readonly cacheBytes?: number;
  /**
   * The codes read whole into the scan's memory at the open, by position straight into it (no
   * second copy), instead of per probed cluster: a search reads no file. `cacheBytes` unused.
   */
  readonly resident?: boolean;
}

/** What the last `IvfTokenIndex.search` scanned (a benchmark's roofline reads it). */
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
  /** Code bytes read from the index file (an index opened by position; 0 when resident). */
  readonly codeBytesRead: number;
}
