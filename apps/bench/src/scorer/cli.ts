/** The flags of `pnpm bench:scorer`. */
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { intList, positive } from '../shared/args.js';
import { out } from '../shared/output.js';
import { repoRoot } from '../shared/paths.js';

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

export interface Cli {
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

export function parseCli(argv: readonly string[]): Cli {
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
  const cli: Cli = {
    sizes: intList('--sizes', values.sizes),
    rows: intList('--rows', values.rows),
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
