// The clustered index's per-row scan, the same code on every scan thread: query rows claimed one
// at a time from a shared counter, each row's tables, probe order, cluster scans and running top
// computed from that row's inputs alone, so which thread takes a row never changes its result.
import type { ResidualBits } from './layout.js';
import { codeBytes } from './layout.js';
import { blockCache, type PagedCodes } from './paged.js';
import { ApproxTop, probeOrder } from './scan.js';
import { scanCluster, scanTail, type BaseCodes } from './scan-cluster.js';
import type { TailView } from './tails.js';
import { quantizeTables } from './tables.js';
import type { ScanLane } from './wasm-scan.js';

/** What every scan thread reads of an open index (constant while it is open). */
export interface ScanIndex {
  readonly dim: number;
  readonly residualBits: ResidualBits;
  /** `[dim × buckets]` decoded residual buckets. */
  readonly weights: Float32Array;
  /** `[clusters + 1]` each cluster's first layout place. */
  readonly clusterOffsets: Int32Array;
  /** `[places]` the memory row of the token at each layout place (the candidate filter's key). */
  readonly placeMemory: Int32Array;
  /** `[places]` the bank token at each layout place (the running top's key). */
  readonly placeToken: Int32Array;
  /** The base codes read by position from the index file (undefined: resident). */
  readonly paged: PagedCodes | undefined;
}

/** `control[NEXT_ROW]`: the next query row to claim. */
export const NEXT_ROW = 0;
/** `control[JOINED + w]`: worker `w` took part (1, then 2 once done) or was cancelled (−1). */
export const JOINED = 1;

/**
 * One search's scan: its inputs and outputs, in shared memory when several threads run it.
 * `control` holds {@link NEXT_ROW} and one {@link JOINED} word per worker.
 */
export interface ScanJob {
  readonly rows: number;
  /** Proposals per row. */
  readonly fetch: number;
  /** Clusters probed per row at least. */
  readonly nprobe: number;
  /**
   * Adaptive probing (`IvfSearchOptions.probeSlack`): past `nprobe`, the next cluster is probed
   * while its centroid score is at least the row's running floor less this; NaN: off.
   */
  readonly probeSlack: number;
  /** With `probeSlack`: clusters a row probes at most (its top-`fetch` filled). */
  readonly maxProbe: number;
  /** `[rows × clusters]` centroid scores. */
  readonly scores: Float32Array;
  /** `[rows × dim]` the prepared query rows. */
  readonly q: Float32Array;
  /** `[memories]` 1 for a candidate (and live) memory; undefined: every memory. */
  readonly allowed: Uint8Array | undefined;
  /** The appended tokens' tail lists (their state when the search began). */
  readonly tail: TailView;
  /** The index file's descriptor when its codes are read by position (else −1). */
  readonly fd: number;
  /** `[rows × fetch]` out: each row's proposed bank tokens (its top's heap order). */
  readonly tokens: Int32Array;
  /** `[rows]` out: how many of the row's `fetch` places were filled. */
  readonly counts: Int32Array;
  /** `[rows]` out: 1 once the row's `tokens` and `counts` are written (stored atomically). */
  readonly done: Int32Array;
  readonly control: Int32Array;
}

/** What one thread scanned. */
export interface ScanCount {
  /** Candidate tokens whose approximate similarity was computed. */
  scored: number;
  probed: number;
  /** Query rows scanned. */
  rows: number;
  /** Code blocks read from the index file (codes read by position). */
  blocksRead: number;
}

/**
 * The arrays of a job for `rows` rows (`workers` > 0: on `SharedArrayBuffer`s, the inputs
 * copied there, so worker threads see them).
 */
export function scanJob(
  input: Pick<
    ScanJob,
    | 'rows'
    | 'fetch'
    | 'nprobe'
    | 'probeSlack'
    | 'maxProbe'
    | 'scores'
    | 'q'
    | 'allowed'
    | 'tail'
    | 'fd'
  >,
  workers: number,
): ScanJob {
  const { rows, fetch } = input;
  const make = <T extends Int32Array | Float32Array | Uint8Array>(
    of: new (buffer: ArrayBufferLike) => T,
    length: number,
    bytes: number,
  ): T =>
    new of(workers > 0 ? new SharedArrayBuffer(length * bytes) : new ArrayBuffer(length * bytes));
  const copy = <T extends Float32Array | Uint8Array>(
    a: T,
    of: new (buffer: ArrayBufferLike) => T,
  ): T => {
    if (workers === 0) return a;
    const out = make(of, a.length, a.BYTES_PER_ELEMENT);
    out.set(a);
    return out;
  };
  return {
    rows,
    fetch,
    nprobe: input.nprobe,
    probeSlack: input.probeSlack,
    maxProbe: input.maxProbe,
    scores: copy(input.scores, Float32Array),
    q: copy(input.q, Float32Array),
    allowed: input.allowed === undefined ? undefined : copy(input.allowed, Uint8Array),
    tail: input.tail,
    fd: input.fd,
    tokens: make(Int32Array, rows * fetch, 4),
    counts: make(Int32Array, rows, 4),
    done: make(Int32Array, rows, 4),
    control: make(Int32Array, JOINED + workers, 4),
  };
}

/**
 * Claims rows of `job` until none is left and scans each with `lane`: the row's quantised
 * tables, then its clusters in probe order (the `nprobe` best; with `probeSlack`, more while the
 * next centroid scores within the slack of the running top's floor, up to `maxProbe`; and more
 * while the probed ones held fewer than `fetch` candidates) into a running top of `fetch`
 * approximate similarities, each cluster's base places and then its tail list. Keyed by bank
 * token, the top is the same whichever layout (base or tail, any compaction) holds a token.
 * `between` (the calling thread's) runs after each row this thread scans, before it claims the
 * next.
 */
export function scanRows(
  index: ScanIndex,
  lane: ScanLane,
  job: ScanJob,
  between?: () => void,
): ScanCount {
  const { dim, clusterOffsets: bounds, placeMemory, placeToken, paged } = index;
  const { fetch, scores: cs, q, allowed, tail } = job;
  const c = bounds.length - 1;
  const nprobe = Math.min(job.nprobe, c);
  const slack = job.probeSlack;
  const adaptive = !Number.isNaN(slack);
  // The probe order computed up front: the clusters a row may probe before it runs short.
  // (`probeLimits` keeps `maxProbe` ≥ `nprobe`.)
  const ordered = adaptive ? Math.min(job.maxProbe, c) : nprobe;
  const top = new ApproxTop(fetch);
  const count: ScanCount = { scored: 0, probed: 0, rows: 0, blocksRead: 0 };
  let codes: BaseCodes | undefined;
  const cache = paged && blockCache(lane, paged, codeBytes(dim, index.residualBits));
  const read0 = cache?.blocksRead ?? 0;
  if (cache !== undefined) {
    const fd = job.fd;
    codes = (cluster, first, end, b) => cache.region(fd, cluster, first, end, b);
  }
  for (;;) {
    const r = Atomics.add(job.control, NEXT_ROW, 1);
    if (r >= job.rows) {
      count.blocksRead = (cache?.blocksRead ?? 0) - read0;
      return count;
    }
    const row = quantizeTables(index, q, r * dim, lane);
    top.reset();
    let order = ordered < c ? lane.probeTop(cs, r * c, c, ordered) : probeOrder(cs, r * c, c, c);
    let seen = 0;
    for (let i = 0; i < c; i++) {
      if (i >= nprobe && seen >= fetch) {
        if (!adaptive || i >= ordered) break;
        // Scores descend in probe order: once one is below the floor less the slack, all are.
        if (!(cs[r * c + order[i]!]! >= top.floor - slack)) break;
      }
      // Too few candidates in the first clusters (a small candidate set): on in order.
      if (i === order.length) order = probeOrder(cs, r * c, c, c);
      const cl = order[i]!;
      const base = cs[r * c + cl]!;
      const [from, to] = [bounds[cl]!, bounds[cl + 1]!];
      seen += scanCluster(
        lane,
        row,
        base,
        from,
        to,
        top,
        allowed,
        placeMemory,
        placeToken,
        codes,
        cl,
      );
      seen += scanTail(lane, row, base, cl, tail, top, allowed);
      count.probed++;
    }
    count.scored += seen;
    count.rows++;
    job.counts[r] = top.count;
    job.tokens.set(top.places.subarray(0, top.count), r * fetch);
    // Publishes the row's outputs to a thread that sees `done[r]` = 1.
    Atomics.store(job.done, r, 1);
    between?.();
  }
}
