import { readFile, writeFile } from 'node:fs/promises';

/**
 * One size of `pnpm bench:scorer`, run in its own child process (bfe: `scorer-worker.ts`;
 * numpy and faiss: `python/scorer_peers.py`) so that its peak RSS is its own. Keys are
 * camelCase on both sides.
 */
export interface ScorerBenchJob {
  /** Bank tokens N. */
  readonly size: number;
  readonly dim: number;
  /** Query rows to time, each in its own measurement (20 = one query; more = a batch). */
  readonly rows: readonly number[];
  readonly k: number;
  readonly chunkSize: number;
  readonly seed: number;
  readonly querySeed: number;
  /**
   * Distinct generated tokens; a larger bank is streamed: token t is pool token t mod pool
   * with its components rolled by ⌊t / pool⌋ places, made just before its chunk is searched
   * (untimed, for every peer alike).
   */
  readonly pool: number;
  /** At least this many timed runs per measurement… */
  readonly repeat: number;
  /** …and more, up to 50, until this many seconds have passed. */
  readonly minSeconds: number;
  readonly threads: number;
  /** Rows of the first measurement whose top-k indices come back for the cross-check. */
  readonly sampleRows: number;
  readonly resultFile: string;
  /** One query against one bank, many times (only in the first job). */
  readonly latency?: LatencyJob;
}

export interface LatencyJob {
  readonly bankTokens: number;
  readonly queryTokens: number;
  /** bfe's end-to-end scorer: tokens per memory (bankTokens / memoryTokens memories). */
  readonly memoryTokens: number;
  readonly seed: number;
  readonly warmup: number;
  readonly runs: number;
}

export interface RunTimes {
  readonly rows: number;
  /** Search seconds of each timed run (untimed chunk preparation subtracted). */
  readonly seconds: readonly number[];
  /** CPU seconds the rest of the machine used during each run (contention). */
  readonly otherCpuSeconds: readonly number[];
}

export interface PeerRuns {
  readonly runs: readonly RunTimes[];
  /** Top-k bank indices of the first `sampleRows` rows of the first measurement. */
  readonly indices: readonly (readonly number[])[];
}

export interface BfeResult {
  readonly ok: true;
  readonly peers: { readonly bfe: PeerRuns };
  /** Latency runs in milliseconds, by what was timed. */
  readonly latencyMs: Readonly<Record<string, readonly number[]>> | null;
  readonly generationSeconds: number;
  readonly baseRssMb: number;
  readonly peakRssMb: number;
  /** Kernel passes of the last timed run (1 = no row needed a wider search). */
  readonly passes: number;
  readonly versions: Readonly<Record<string, string>>;
}

export interface PythonResult {
  readonly ok: true;
  readonly peers: { readonly numpy: PeerRuns; readonly faiss: PeerRuns };
  readonly latencyMs: Readonly<Record<string, readonly number[]>> | null;
  readonly generationSeconds: number;
  readonly baseRssMb: number;
  readonly peakRssMb: number;
  readonly versions: Readonly<Record<string, string>>;
}

export interface Failure {
  readonly ok: false;
  readonly error: string;
}

export async function readJob(path: string): Promise<ScorerBenchJob> {
  return JSON.parse(await readFile(path, 'utf8')) as ScorerBenchJob;
}

export async function writeResult(path: string, result: BfeResult | Failure): Promise<void> {
  await writeFile(path, JSON.stringify(result));
}
