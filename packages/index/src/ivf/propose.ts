// The clustered index's proposals: every centroid scored, each query row's probed clusters
// scanned (on the calling thread and the scan pool's workers), each row handed on as it is done.
import type { ScorePrecision, SimilarityKernel } from '../kernel.js';
import { codeBytes } from './layout.js';
import type { IvfScanStats, IvfSearchOptions } from './options.js';
import { finishedRows } from './scan-pool.js';
import { scanJob, scanRows } from './scan-rows.js';
import { centroidScores, type IvfState } from './state.js';

/** One search's rows to propose for. */
export interface ProposeJob {
  /** `[rows × dim]` the query rows in the codec's space. */
  readonly q: Float32Array;
  readonly rows: number;
  /** Proposals per row. */
  readonly fetch: number;
  /** The candidate memories; undefined: every memory. */
  readonly memories: Int32Array | undefined;
  /** The centroid product's arithmetic (default float32). */
  readonly centroidProduct?: ScorePrecision;
}

/** How many clusters a row probes (`IvfSearchOptions`' `nprobe`, `probeSlack`, `maxProbe`). */
export interface ProbeLimits {
  readonly nprobe: number;
  /** NaN: no adaptive probing. */
  readonly probeSlack: number;
  readonly maxProbe: number;
}

/** The default of `IvfSearchOptions.maxProbe`. */
export const DEFAULT_MAX_PROBE = 64;

/** The probe limits of `options`, checked: `probeSlack` a number ≥ 0, `maxProbe` ≥ `nprobe`. */
export function probeLimits(options: {
  readonly nprobe: IvfSearchOptions['nprobe'];
  readonly probeSlack?: IvfSearchOptions['probeSlack'] | undefined;
  readonly maxProbe?: IvfSearchOptions['maxProbe'] | undefined;
}): ProbeLimits {
  const { nprobe, probeSlack, maxProbe } = options;
  if (probeSlack === undefined) {
    if (maxProbe !== undefined) throw new Error('maxProbe needs probeSlack');
    return { nprobe, probeSlack: Number.NaN, maxProbe: nprobe };
  }
  if (!(Number.isFinite(probeSlack) && probeSlack >= 0)) {
    throw new Error(`probeSlack must be a number ≥ 0, got ${probeSlack}`);
  }
  const most = maxProbe ?? Math.max(DEFAULT_MAX_PROBE, nprobe);
  if (!(Number.isInteger(most) && most >= nprobe)) {
    throw new Error(`maxProbe must be an integer ≥ nprobe (${nprobe}), got ${most}`);
  }
  return { nprobe, probeSlack, maxProbe: most };
}

/**
 * Per row, the best `fetch` candidate tokens by approximate similarity over the probed clusters
 * (every row gets `fetch`: probing continues past `nprobe` clusters until the probed ones held
 * that many candidates; with a `probeSlack`, while the next centroid is within it), handed to
 * `onRow` on the calling thread as each row is scanned. Returns the centroid scores
 * `[rows × clusters]` and the scan's statistics (no rescoring in them).
 */
export async function proposeRows(
  state: IvfState,
  kernel: SimilarityKernel,
  probe: ProbeLimits,
  threads: number,
  job: ProposeJob,
  onRow: (row: number, found: Int32Array) => void,
): Promise<{ scores: Float32Array; stats: IvfScanStats }> {
  const { q, rows, fetch, memories } = job;
  const base = state.base;
  const { data, scanner, scan, pool, tails } = base;
  const dim = data.dim;
  const t0 = performance.now();
  const scores = await centroidScores(base, kernel, q, rows, job.centroidProduct);
  const t1 = performance.now();
  const cpu0 = process.cpuUsage();
  let allowed: Uint8Array | undefined;
  if (memories !== undefined) {
    allowed = new Uint8Array(state.memories);
    for (const m of memories) allowed[m] = 1;
  }
  const workers = Math.max(0, Math.min(threads, rows) - 1);
  const tail = tails.view();
  const scanned = scanJob(
    { rows, fetch, ...probe, scores, q, allowed, tail, fd: state.fd() },
    workers,
  );
  const consume = (r: number): void =>
    onRow(r, scanned.tokens.subarray(r * fetch, (r + 1) * fetch));
  const count =
    workers > 0
      ? await pool.run(scanned, workers, consume)
      : scanRows(scan, scanner, scanned, finishedRows(scanned, consume));
  const cpu = process.cpuUsage(cpu0);
  const stats: IvfScanStats = {
    scanCpuSeconds: (cpu.user + cpu.system) / 1e6,
    tokensScored: count.scored,
    clustersProbed: count.probed,
    workerRows: workers > 0 ? count.rows : 0,
    centroidSeconds: (t1 - t0) / 1000,
    scanSeconds: (performance.now() - t1) / 1000,
    rescoreSeconds: 0,
    wholeSet: false,
    codeBytesRead: count.blocksRead * 16 * codeBytes(dim, data.residualBits),
  };
  return { scores, stats };
}
