/**
 * `pnpm bench:scorer`: a benchmark, not a test. Exact bank-wide top-k (METHOD.md §2) of bfe's
 * CPU scorer (onnxruntime Gemm + TopK, streamed chunks, running merge, float64 re-ranking)
 * against numpy (BLAS matmul + argpartition, same chunks) and faiss-cpu (`IndexFlatIP` +
 * search k) on the same shapes and the same vectors, in the same run:
 *
 * - similarities per second (query rows × bank tokens / search seconds) at bank sizes 1e4,
 *   1e5, 1e6 and 1e7 tokens, d = 384, k = 64, for one query (20 rows) and a batch (256 rows);
 * - the latency of one query (20 tokens, k = 64) against a 50k-token bank;
 * - the peak RSS of each process.
 *
 * Every size runs in fresh child processes, one peer family at a time (bfe:
 * `scorer-worker.ts`; numpy and faiss: `tools/bench/scorer_peers.py` in a venv with numpy and
 * faiss-cpu). Both generate the bank with the same hash (`synthetic.ts`), so their top-k lists
 * are compared too. Banks above `--pool` tokens are streamed from a pool of distinct tokens
 * with rolled components (see `protocol.ts`); preparing those chunks is not timed, for any
 * peer. Other processes' CPU use during each run is measured and shown, since a shared
 * machine can skew everything.
 *
 * @example
 * pnpm bench:scorer
 * pnpm bench:scorer --sizes 10000,100000 --rows 20 --json
 */
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { cpus, tmpdir, totalmem } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import {
  machineBusySeconds,
  type BfeResult,
  type Failure,
  type PeerRuns,
  type PythonResult,
  type ScorerBenchJob,
} from './protocol.js';

const here = dirname(fileURLToPath(import.meta.url));
const repoRoot = resolve(here, '../../..');
const out = (line = ''): boolean => process.stdout.write(`${line}\n`);
const note = (line: string): boolean => process.stderr.write(`${line}\n`);

const USAGE = `pnpm bench:scorer [options]
  --sizes LIST        (10000,100000,1000000,10000000) bank tokens
  --rows LIST         (20,256) query rows per search: 20 = one query, 256 = a batch
  --k N               (64)
  --dim N             (384)
  --chunk-size N      (65536) bank tokens per kernel call, for bfe and numpy
  --pool N            (1048576) distinct generated tokens; larger banks are streamed
  --threads N         (2) threads for onnxruntime, BLAS and faiss
  --repeat N          (3) timed runs at least, per measurement (the table shows the median)
  --min-seconds S     (2) keep repeating (up to 50 runs) until S seconds have passed
  --latency-runs N    (200) one-query latency runs per case
  --peers LIST        (bfe,python) python = numpy and faiss
  --wait-idle S       (60) before each process, wait up to S seconds for the CPUs to be idle
  --timeout S         (1800) per process
  --json              print only the JSON line
Environment: BFE_SCORER_PYTHON (default ../venv-scorer/bin/python: numpy + faiss-cpu).`;

interface Cli {
  readonly sizes: readonly number[];
  readonly rows: readonly number[];
  readonly k: number;
  readonly dim: number;
  readonly chunkSize: number;
  readonly pool: number;
  readonly threads: number;
  readonly repeat: number;
  readonly minSeconds: number;
  readonly latencyRuns: number;
  readonly peers: readonly string[];
  readonly waitIdle: number;
  readonly timeout: number;
  readonly json: boolean;
  readonly python: string;
}

function parseCli(argv: readonly string[]): Cli {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      sizes: { type: 'string', default: '10000,100000,1000000,10000000' },
      rows: { type: 'string', default: '20,256' },
      k: { type: 'string', default: '64' },
      dim: { type: 'string', default: '384' },
      'chunk-size': { type: 'string', default: '65536' },
      pool: { type: 'string', default: String(2 ** 20) },
      threads: { type: 'string', default: '2' },
      repeat: { type: 'string', default: '3' },
      'min-seconds': { type: 'string', default: '2' },
      'latency-runs': { type: 'string', default: '200' },
      peers: { type: 'string', default: 'bfe,python' },
      'wait-idle': { type: 'string', default: '60' },
      timeout: { type: 'string', default: '1800' },
      json: { type: 'boolean', default: false },
      help: { type: 'boolean', default: false },
    },
    strict: true,
  });
  if (values.help) {
    out(USAGE);
    process.exit(0);
  }
  const list = (flag: string, v: string) => v.split(',').map((s) => positive(flag, s.trim()));
  const cli: Cli = {
    sizes: list('--sizes', values.sizes),
    rows: list('--rows', values.rows),
    k: positive('--k', values.k),
    dim: positive('--dim', values.dim),
    chunkSize: positive('--chunk-size', values['chunk-size']),
    pool: positive('--pool', values.pool),
    threads: positive('--threads', values.threads),
    repeat: positive('--repeat', values.repeat),
    minSeconds: Number(values['min-seconds']),
    latencyRuns: positive('--latency-runs', values['latency-runs']),
    peers: values.peers.split(',').map((p) => p.trim()),
    waitIdle: Number(values['wait-idle']),
    timeout: positive('--timeout', values.timeout),
    json: values.json,
    python: process.env.BFE_SCORER_PYTHON ?? resolve(repoRoot, '../venv-scorer/bin/python'),
  };
  if (cli.pool % cli.chunkSize !== 0) {
    throw new Error(`--pool ${cli.pool} must be a multiple of --chunk-size ${cli.chunkSize}`);
  }
  for (const p of cli.peers) {
    if (p !== 'bfe' && p !== 'python')
      throw new Error(`--peers: unknown peer '${p}' (bfe, python)`);
  }
  return cli;
}

function positive(flag: string, v: string): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n <= 0)
    throw new Error(`${flag}: expected a positive integer, got '${v}'`);
  return n;
}

/** Waits (up to `seconds`) until the rest of the machine uses under 0.25 of a core. */
async function waitIdle(seconds: number, log: (line: string) => unknown): Promise<number | null> {
  const deadline = Date.now() + seconds * 1000;
  let load: number;
  do {
    const a = machineBusySeconds();
    await new Promise((r) => setTimeout(r, 1000));
    const b = machineBusySeconds();
    if (a === null || b === null) return null;
    load = b - a;
    if (load < 0.25) return load;
  } while (Date.now() < deadline);
  log(
    `  (machine still busy: ${load.toFixed(2)} cores in use by other processes; measuring anyway)`,
  );
  return load;
}

function runChild(
  command: string,
  args: readonly string[],
  env: NodeJS.ProcessEnv,
  timeoutS: number,
): Promise<string> {
  return new Promise((resolvePromise) => {
    const child = spawn(command, args, { cwd: repoRoot, env, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => {
      stderr = (stderr + d.toString()).slice(-4000);
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutS * 1000);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolvePromise(
        code === 0
          ? ''
          : `exit ${code ?? signal}: ${stderr.trim().split('\n').slice(-3).join(' | ')}`,
      );
    });
    child.on('error', (e) => {
      clearTimeout(timer);
      resolvePromise(e.message);
    });
  });
}

type Result<T> = T | Failure;

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
      : [cli.python, [join(repoRoot, 'tools/bench/scorer_peers.py'), `${job.resultFile}.job.json`]];
  const failure = await runChild(command, args, env, cli.timeout);
  try {
    return JSON.parse(await readFile(job.resultFile, 'utf8')) as Result<T>;
  } catch {
    return { ok: false, error: failure || 'no result file' };
  }
}

const median = (xs: readonly number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 === 1 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};
const quantile = (xs: readonly number[], q: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))]!;
};

/** Mean fraction of bfe's top-k ids (per sampled row) that the peer also returned. */
function agreement(a: PeerRuns | undefined, b: PeerRuns | undefined): number | null {
  if (a === undefined || b === undefined || a.indices.length === 0) return null;
  let sum = 0;
  a.indices.forEach((row, r) => {
    const other = new Set(b.indices[r] ?? []);
    sum += row.filter((i) => other.has(i)).length / row.length;
  });
  return sum / a.indices.length;
}

async function main(): Promise<void> {
  const cli = parseCli(process.argv.slice(2));
  const log = cli.json ? () => true : note;
  const work = await mkdtemp(join(tmpdir(), 'bfe-bench-scorer-'));
  const sizes: {
    size: number;
    streamed: boolean;
    bfe?: Result<BfeResult>;
    python?: Result<PythonResult>;
  }[] = [];
  try {
    for (const [i, size] of cli.sizes.entries()) {
      const streamed = size > cli.pool;
      log(
        `size ${size.toLocaleString('en')} tokens${streamed ? ` (streamed from a ${cli.pool.toLocaleString('en')}-token pool)` : ''}`,
      );
      const entry: (typeof sizes)[number] = { size, streamed };
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
        if (cli.waitIdle > 0) await waitIdle(cli.waitIdle, log);
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
  } finally {
    await rm(work, { recursive: true, force: true });
  }
  report(cli, sizes);
}

function report(
  cli: Cli,
  sizes: readonly {
    size: number;
    streamed: boolean;
    bfe?: Result<BfeResult>;
    python?: Result<PythonResult>;
  }[],
): void {
  interface Row {
    size: number;
    rows: number;
    simsPerSecond: Record<string, number | null>;
    otherCpuCores: Record<string, number | null>;
    ratioToFasterPeer: number | null;
    agreement: { numpy: number | null; faiss: number | null };
  }
  const table: Row[] = [];
  for (const s of sizes) {
    const peers: Record<string, PeerRuns> = {};
    if (s.bfe?.ok) peers.bfe = s.bfe.peers.bfe;
    if (s.python?.ok) Object.assign(peers, s.python.peers);
    for (const [ri, rows] of cli.rows.entries()) {
      const simsPerSecond: Record<string, number | null> = {};
      const other: Record<string, number | null> = {};
      for (const name of ['bfe', 'numpy', 'faiss']) {
        const run = peers[name]?.runs[ri];
        if (run === undefined) {
          simsPerSecond[name] = null;
          other[name] = null;
          continue;
        }
        const sec = median(run.seconds);
        simsPerSecond[name] = (rows * s.size) / sec;
        const totalSec = run.seconds.reduce((a, b) => a + b, 0);
        other[name] =
          run.otherCpuSeconds.length > 0
            ? run.otherCpuSeconds.reduce((a, b) => a + b, 0) / totalSec
            : null;
      }
      const peerBest = Math.max(simsPerSecond.numpy ?? 0, simsPerSecond.faiss ?? 0);
      table.push({
        size: s.size,
        rows,
        simsPerSecond,
        otherCpuCores: other,
        ratioToFasterPeer:
          simsPerSecond.bfe != null && peerBest > 0 ? simsPerSecond.bfe / peerBest : null,
        agreement: {
          numpy: ri === 0 ? agreement(peers.bfe, peers.numpy) : null,
          faiss: ri === 0 ? agreement(peers.bfe, peers.faiss) : null,
        },
      });
    }
  }
  const latency: Record<string, { p50: number; p90: number; min: number; runs: number }> = {};
  for (const s of sizes) {
    for (const r of [s.bfe, s.python]) {
      if (!r?.ok || r.latencyMs === null) continue;
      for (const [name, ms] of Object.entries(r.latencyMs)) {
        latency[name] = {
          p50: median(ms),
          p90: quantile(ms, 0.9),
          min: Math.min(...ms),
          runs: ms.length,
        };
      }
    }
  }
  const rss = sizes.map((s) => ({
    size: s.size,
    streamed: s.streamed,
    bankMb: (s.size * cli.dim * 4) / 2 ** 20,
    bfe: s.bfe?.ok
      ? {
          baseMb: s.bfe.baseRssMb,
          peakMb: s.bfe.peakRssMb,
          generationSeconds: s.bfe.generationSeconds,
          passes: s.bfe.passes,
        }
      : null,
    python: s.python?.ok
      ? {
          baseMb: s.python.baseRssMb,
          peakMb: s.python.peakRssMb,
          generationSeconds: s.python.generationSeconds,
        }
      : null,
  }));
  const failures = sizes.flatMap((s) =>
    [s.bfe, s.python].flatMap((r, i) =>
      r !== undefined && !r.ok
        ? [{ size: s.size, peer: i === 0 ? 'bfe' : 'python', error: r.error }]
        : [],
    ),
  );
  const versions = {
    ...(sizes.find((s) => s.bfe?.ok)?.bfe as BfeResult | undefined)?.versions,
    ...(sizes.find((s) => s.python?.ok)?.python as PythonResult | undefined)?.versions,
  };
  const machine = {
    cpu: cpus()[0]?.model ?? 'unknown',
    cores: cpus().length,
    memoryGb: totalmem() / 2 ** 30,
  };
  const json = {
    machine,
    settings: {
      k: cli.k,
      dim: cli.dim,
      chunkSize: cli.chunkSize,
      pool: cli.pool,
      threads: cli.threads,
    },
    throughput: table,
    latencyMs: latency,
    rss,
    failures,
    versions,
  };
  if (cli.json) {
    out(JSON.stringify(json));
    return;
  }
  const m = (v: number | null | undefined) => (v == null ? '—' : (v / 1e6).toFixed(0).padStart(6));
  out(
    `\nExact top-${cli.k}, d = ${cli.dim}, ${cli.threads} threads, ${machine.cpu} (${machine.cores} cores)`,
  );
  out('similarities per second, millions (median run); ratio = bfe / faster of numpy and faiss');
  out(
    '| bank tokens | query rows | bfe | numpy | faiss | ratio | top-k agreement (numpy, faiss) | other CPU, cores (bfe, numpy, faiss) |',
  );
  out('|---:|---:|---:|---:|---:|---:|---|---:|');
  for (const r of table) {
    const agree =
      r.agreement.numpy == null
        ? ''
        : `${(100 * r.agreement.numpy).toFixed(1)}%, ${(100 * (r.agreement.faiss ?? 0)).toFixed(1)}%`;
    out(
      `| ${r.size.toLocaleString('en')} | ${r.rows} | ${m(r.simsPerSecond.bfe)} | ${m(r.simsPerSecond.numpy)} | ${m(r.simsPerSecond.faiss)} | ${r.ratioToFasterPeer == null ? '—' : `${r.ratioToFasterPeer.toFixed(2)}×`} | ${agree} | ${['bfe', 'numpy', 'faiss'].map((p) => r.otherCpuCores[p]?.toFixed(2) ?? '—').join(', ')} |`,
    );
  }
  out('\nOne query (20 tokens, k = 64) against a 50,000-token bank, milliseconds');
  out('| case | p50 | p90 | min |');
  out('|---|---:|---:|---:|');
  for (const [name, l] of Object.entries(latency)) {
    out(`| ${name} | ${l.p50.toFixed(2)} | ${l.p90.toFixed(2)} | ${l.min.toFixed(2)} |`);
  }
  out('\nPeak RSS, MiB (base = before generating the bank)');
  out('| bank tokens | bank float32 | bfe base → peak | numpy+faiss base → peak | bfe passes |');
  out('|---:|---:|---:|---:|---:|');
  for (const r of rss) {
    out(
      `| ${r.size.toLocaleString('en')}${r.streamed ? ' (streamed)' : ''} | ${r.bankMb.toFixed(0)} | ${r.bfe ? `${r.bfe.baseMb.toFixed(0)} → ${r.bfe.peakMb.toFixed(0)}` : '—'} | ${r.python ? `${r.python.baseMb.toFixed(0)} → ${r.python.peakMb.toFixed(0)}` : '—'} | ${r.bfe?.passes ?? '—'} |`,
    );
  }
  for (const f of failures) out(`\nFAILED ${f.peer} at ${f.size}: ${f.error}`);
  out(`\n${JSON.stringify(json)}`);
}

await main();
