import { readFile, writeFile } from 'node:fs/promises';
import type { ModelManifest } from '@bfe/models';
import type { BfeVariant } from './variants.js';

/** The three encoders the benchmark compares. */
export type Peer = 'bfe' | 'transformers-js' | 'sentence-transformers';

/**
 * One measurement, run in its own child process so that its peak RSS is its own. The parent
 * writes it as JSON; the child (a Node worker or `python/sentence_transformers_bench.py`)
 * writes a {@link PeerResult} to `resultFile`. Keys are camelCase on both sides.
 */
export interface BenchJob {
  readonly peer: Peer;
  /** JSON array of the texts, in dataset order. */
  readonly textsFile: string;
  readonly resultFile: string;
  readonly threads: number;
  readonly maxLength: number;
  /** Texts encoded once, untimed, before the timed pass. */
  readonly warmupTexts: number;
  /** Text indices whose pooled vectors come back, to check that the peers agree. */
  readonly sample: readonly number[];
  /** bfe: the model directory and its manifest. */
  readonly modelDir?: string;
  readonly manifest?: ModelManifest;
  /** bfe: options on top of the package defaults (session, pass, model). */
  readonly variant?: BfeVariant;
  /** bfe: a scratch directory (the saved optimised graph goes here). */
  readonly work?: string;
  /** transformers.js: `env.localModelPath` and the model name under it. */
  readonly hfRoot?: string;
  readonly hfModel?: string;
  /** sentence-transformers: the Hugging Face-layout model directory. */
  readonly stModelDir?: string;
  /** sentence-transformers: run with `OMP_WAIT_POLICY=PASSIVE` (torch's OpenMP threads sleep, not spin). */
  readonly ompPassive?: boolean;
  /** Peers: texts per call. */
  readonly batchSize?: number;
}

export interface PeerSuccess {
  readonly ok: true;
  /** Timed pass only: the whole text list after the warm-up. */
  readonly seconds: number;
  /** CPU time of the whole child (all threads) during the timed pass. */
  readonly cpuSeconds: number;
  /**
   * CPU time the rest of the machine used during the timed pass (busy time from `/proc/stat`
   * less this child's): contention from other processes. `null` where `/proc/stat` is missing.
   */
  readonly otherCpuSeconds: number | null;
  /** Opening the model (session and tokenizer), untimed. */
  readonly loadSeconds: number;
  /** `getrusage` maximum resident set size of the child, MiB. */
  readonly peakRssMb: number;
  /** Resident set size after the texts were read, before the model was opened, MiB. */
  readonly baseRssMb: number;
  readonly texts: number;
  /** The peer's own count of real tokens (sum of attention masks), counted after the timed pass. */
  readonly tokens: number;
  /** bfe only: content tokens whose states were kept. */
  readonly contentTokens?: number;
  /** Pooled vectors of {@link BenchJob.sample}, in that order. */
  readonly sample: readonly (readonly number[])[];
  /** bfe only: the content-token states of {@link BenchJob.sample}, `[tokens * dim]` each. */
  readonly sampleTokens?: readonly (readonly number[])[];
  /**
   * bfe only: SHA-256 of every chunk's pooled vectors and token states in pass order (equal
   * digests: bit-identical outputs). Hashed inside the pass; its time is taken out of `seconds`.
   */
  readonly digest?: string;
  readonly versions: Readonly<Record<string, string>>;
}

export interface PeerFailure {
  readonly ok: false;
  readonly error: string;
}

export type PeerResult = PeerSuccess | PeerFailure;

export async function readJob(path: string): Promise<BenchJob> {
  return JSON.parse(await readFile(path, 'utf8')) as BenchJob;
}

export async function readTexts(path: string): Promise<string[]> {
  return JSON.parse(await readFile(path, 'utf8')) as string[];
}

export async function writeResult(path: string, result: PeerResult): Promise<void> {
  await writeFile(path, `${JSON.stringify(result)}\n`);
}
