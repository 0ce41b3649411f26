/**
 * Runs `pnpm bench:scorer`'s sizes, each peer family in fresh child processes (bfe:
 * `scorer-worker.ts`; numpy and faiss: `python/scorer_peers.py`), one at a time.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runChild } from '../shared/child.js';
import { waitForIdle } from '../shared/machine.js';
import { pythonDir, repoRoot } from '../shared/paths.js';
import type { Cli } from './cli.js';
import type { BfeResult, Failure, PythonResult, ScorerBenchJob } from './protocol.js';

const here = dirname(fileURLToPath(import.meta.url));

export type Result<T> = T | Failure;

/** One bank size: each peer family's result, or why there is none. */
export interface SizeResult {
  size: number;
  streamed: boolean;
  bfe?: Result<BfeResult>;
  python?: Result<PythonResult>;
}

/** Measures every size of `cli.sizes`; the job and result files go to `work`. */
export async function measureSizes(
  cli: Cli,
  work: string,
  log: (line: string) => unknown,
): Promise<SizeResult[]> {
  const idle = { windowSeconds: 1, idleCores: 0.25, log: (line: string) => log(`  (${line})`) };
  const sizes: SizeResult[] = [];
  for (const [i, size] of cli.sizes.entries()) {
    const streamed = size > cli.pool;
    log(
      `size ${size.toLocaleString('en')} tokens${streamed ? ` (streamed from a ${cli.pool.toLocaleString('en')}-token pool)` : ''}`,
    );
    const entry: SizeResult = { size, streamed };
    for (const kind of cli.peers as ('bfe' | 'python')[]) {
      const job: ScorerBenchJob = {
        size,
        dim: cli.dim,
        rows: cli.rows,
        k: cli.k,
        chunkSize: cli.chunkSize,
        seed: 1,
        querySeed: 2,
        pool: cli.pool,
        repeat: size >= 1e7 ? 1 : cli.repeat,
        minSeconds: size >= 1e7 ? 0 : cli.minSeconds,
        threads: cli.threads,
        sampleRows: 20,
        resultFile: join(work, `${kind}-${size}.json`),
        ...(i === 0
          ? {
              latency: {
                bankTokens: 50_000,
                queryTokens: 20,
                memoryTokens: 20,
                seed: 7,
                warmup: 20,
                runs: cli.latencyRuns,
              },
            }
          : {}),
      };
      await waitForIdle(cli.waitIdle, idle);
      log(`  ${kind === 'bfe' ? 'bfe (onnxruntime)' : 'numpy + faiss'} …`);
      const t = performance.now();
      if (kind === 'bfe') entry.bfe = await runJob<BfeResult>('bfe', job, cli);
      else entry.python = await runJob<PythonResult>('python', job, cli);
      const r = kind === 'bfe' ? entry.bfe : entry.python;
      log(
        `    ${r?.ok ? 'done' : `FAILED: ${r?.ok === false ? r.error : ''}`} in ${((performance.now() - t) / 1000).toFixed(0)} s`,
      );
    }
    sizes.push(entry);
  }
  return sizes;
}

/** Runs one peer family on one size in a child process; its result, or why there is none. */
async function runJob<T>(
  kind: 'bfe' | 'python',
  job: ScorerBenchJob,
  cli: Cli,
): Promise<Result<T>> {
  await writeFile(`${job.resultFile}.job.json`, JSON.stringify(job));
  const env = {
    ...process.env,
    OMP_NUM_THREADS: String(cli.threads),
    OPENBLAS_NUM_THREADS: String(cli.threads),
    MKL_NUM_THREADS: String(cli.threads),
  };
  const [command, args] =
    kind === 'bfe'
      ? [
          process.execPath,
          [
            '--conditions=@bfe/source',
            '--import',
            'tsx',
            join(here, 'scorer-worker.ts'),
            `${job.resultFile}.job.json`,
          ],
        ]
      : [cli.python, [join(pythonDir, 'scorer_peers.py'), `${job.resultFile}.job.json`]];
  const exit = await runChild(
    command,
    args,
    { env, cwd: repoRoot, timeoutSeconds: cli.timeout },
    3,
  );
  try {
    return JSON.parse(await readFile(job.resultFile, 'utf8')) as Result<T>;
  } catch {
    const failure =
      exit.code === 0
        ? ''
        : exit.code === null && exit.signal === null
          ? exit.tail
          : `exit ${exit.code ?? exit.signal}: ${exit.tail}`;
    return { ok: false, error: failure || 'no result file' };
  }
}
