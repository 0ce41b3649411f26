/**
 * A benchmark, not a test: wall time of `trainAdapterAsync` (METHOD.md §4) for each kernel
 * (`js`, the reference loops; `onnxruntime-js`, MaxSim's GEMM on onnxruntime's CPU provider and
 * the exact float64 parts in JavaScript; `onnxruntime`, the same with those in WebAssembly) and
 * each worker count given, on one synthetic problem (generated once, untimed; its candidate
 * sets over `SharedArrayBuffer`s, as the runner's adapt stage builds them). Two shapes:
 *
 * - `--shape small` (default): 60 training queries of 12 tokens, each with its own bank of 50
 *   memories (≈ 5,000 tokens), 20 validation queries alike, 2 epochs.
 * - `--shape locomo`: the real LoCoMo train split's size — 800 training queries of 12 tokens
 *   on 6 shared banks of 600 memories × ≈ 34 tokens (≈ 20,500 tokens each), 60 validation
 *   queries on 2 banks of their own, 1 epoch.
 *
 * d = 384, r = 32, batch 16, METHOD.md's optimiser settings; any flag overrides the shape.
 * Runs go kernel by kernel (`--kernels`, default `js,onnxruntime-js,onnxruntime`), each over `--workers`
 * (default 2). Every run after the first is compared with it: wall-time ratio, and the largest
 * relative difference of the step losses and final weights (0 when bit-identical; `onnxruntime`
 * fuses MaxSim's backward, so its step losses differ in the last bits).
 *
 * @example
 * pnpm bench:adapter
 * pnpm bench:adapter --shape locomo --epochs 2
 * pnpm bench:adapter --kernels onnxruntime --workers 1,2 --json
 */
import { cpus, loadavg } from 'node:os';
import { TRAIN_KERNELS, trainAdapterAsync, type TrainKernel, type TrainResult } from '@bfe/adapter';
import { syntheticQueries, type SyntheticOptions } from '@bfe/adapter/testing';
import {
  benchCommand,
  flag,
  list,
  nonNegative,
  oneOf,
  parseCommand,
  positive,
  someOf,
} from '../shared/cli.js';
import { out, printJson, printTable } from '../shared/table.js';

const SHAPES = {
  small: {
    queries: 60,
    validation: 20,
    'query-tokens': 12,
    memories: 50,
    // every fifth memory has half as many: 4 × 110 + 55 → 99 on average, 4,950 per bank
    'memory-tokens': 110,
    'queries-per-bank': 1,
    'validation-per-bank': 1,
    epochs: 2,
  },
  locomo: {
    queries: 800,
    validation: 60,
    'query-tokens': 12,
    memories: 600,
    // 4 × 38 + 19 → 34.2 tokens on average, 20,520 per bank
    'memory-tokens': 38,
    'queries-per-bank': 134,
    'validation-per-bank': 30,
    epochs: 1,
  },
} as const;

interface Options {
  shape: keyof typeof SHAPES;
  kernels: TrainKernel[];
  workers: number[];
  queries?: number;
  validation?: number;
  queryTokens?: number;
  memories?: number;
  memoryTokens?: number;
  queriesPerBank?: number;
  validationPerBank?: number;
  epochs?: number;
  dim: number;
  rank: number;
  seed: number;
  json?: boolean;
}

const workerList = (text: string): number[] => list(text).map(nonNegative);
const shapeFlag = (name: string, what: string) =>
  flag(`--${name} <n>`, `${what} (default: the shape's)`, nonNegative);

const command = benchCommand(
  'bench:adapter',
  'wall time of trainAdapterAsync on a synthetic problem, per kernel and worker count',
)
  .addOption(
    flag('--shape <name>', 'small or locomo', oneOf(['small', 'locomo'] as const), 'small'),
  )
  .addOption(
    flag(
      '--kernels <list>',
      `training kernels (${TRAIN_KERNELS.join(', ')})`,
      someOf(TRAIN_KERNELS),
      'js,onnxruntime-js,onnxruntime',
    ),
  )
  .addOption(flag('--workers <list>', 'worker counts, one run each per kernel', workerList, '2'))
  .addOption(shapeFlag('queries', 'training queries'))
  .addOption(shapeFlag('validation', 'validation queries'))
  .addOption(shapeFlag('query-tokens', 'tokens per query'))
  .addOption(shapeFlag('memories', 'memories per bank'))
  .addOption(shapeFlag('memory-tokens', 'tokens per memory (every fifth has half)'))
  .addOption(shapeFlag('queries-per-bank', 'training queries sharing one bank'))
  .addOption(shapeFlag('validation-per-bank', 'validation queries sharing one bank'))
  .addOption(shapeFlag('epochs', 'epochs'))
  .addOption(flag('--dim <n>', 'token dimension', positive, '384'))
  .addOption(flag('--rank <n>', 'adapter rank', positive, '32'))
  .addOption(flag('--seed <n>', 'problem and training seed', nonNegative, '42'))
  .option('--json', 'print only the JSON line');
const { options } = parseCommand<Options>(command);
const shape = SHAPES[options.shape];
const plan = options.kernels.flatMap((kernel) =>
  options.workers.map((workers) => ({ kernel, workers })),
);

const problem: SyntheticOptions = {
  dim: options.dim,
  queries: options.queries ?? shape.queries,
  queryTokens: options.queryTokens ?? shape['query-tokens'],
  memories: options.memories ?? shape.memories,
  memoryTokens: options.memoryTokens ?? shape['memory-tokens'],
  queriesPerBank: options.queriesPerBank ?? shape['queries-per-bank'],
  positives: 2,
  distortion: 1,
  noise: 2,
  seed: options.seed,
  prefix: 'train-',
};
const epochs = options.epochs ?? shape.epochs;

/** The queries with their candidate sets over shared memory, as the runner's adapt stage builds them. */
function sharedSets<Q extends { readonly candidates: { readonly tokenVectors: Float32Array } }>(
  queries: readonly Q[],
): Q[] {
  const moved = new Map<Q['candidates'], Q['candidates']>();
  return queries.map((q) => {
    let candidates = moved.get(q.candidates);
    if (candidates === undefined) {
      const { tokenVectors } = q.candidates;
      const copy = new Float32Array(new SharedArrayBuffer(tokenVectors.byteLength));
      copy.set(tokenVectors);
      candidates = { ...q.candidates, tokenVectors: copy };
      moved.set(q.candidates, candidates);
    }
    return { ...q, candidates };
  });
}

let t = performance.now();
const train = sharedSets(syntheticQueries(problem));
const validation = sharedSets(
  syntheticQueries({
    ...problem,
    queries: options.validation ?? shape.validation,
    queriesPerBank: options.validationPerBank ?? shape['validation-per-bank'],
    seed: options.seed + 1,
    prefix: 'validation-',
  }),
);
const generateMs = performance.now() - t;
const bankTokens = train[0]!.candidates.tokenVectors.length / problem.dim;
const banks = new Set(train.map((q) => q.candidates)).size;

interface Run {
  readonly kernel: TrainKernel;
  readonly workers: number;
  readonly wallSeconds: number;
  readonly medianStepMs: number;
  /** CPU seconds of this process (all threads) during the run; ÷ wall = cores actually used. */
  readonly cpuSeconds: number;
  readonly speedupVsFirst: number;
  /** Largest relative difference from the first run (step losses; final float32 A and B). */
  readonly maxRelDiffStepLoss: number;
  readonly maxRelDiffWeights: number;
  readonly loadAverageBefore: number;
  readonly result: TrainResult;
}

const maxRelDiff = (x: ArrayLike<number>, y: ArrayLike<number>): number => {
  let worst = 0;
  for (let i = 0; i < x.length; i++) {
    const scale = Math.max(Math.abs(x[i]!), Math.abs(y[i]!));
    if (scale > 0) worst = Math.max(worst, Math.abs(x[i]! - y[i]!) / scale);
  }
  return worst;
};

const runs: Run[] = [];
for (const { kernel, workers } of plan) {
  const loadAverageBefore = loadavg()[0]!;
  const stepMs: number[] = [];
  const cpuBefore = process.cpuUsage();
  t = performance.now();
  const result = await trainAdapterAsync(
    { dim: problem.dim, train, validation },
    { rank: options.rank, epochs, seed: options.seed, workers, kernel },
    {
      onStep: () => {
        const now = performance.now();
        stepMs.push(now - t);
        t = now;
      },
    },
  );
  const cpu = process.cpuUsage(cpuBefore);
  const first = runs[0]?.result ?? result;
  const last = (r: TrainResult) => r.snapshots.at(-1)!.adapter;
  stepMs.sort((x, y) => x - y);
  runs.push({
    kernel,
    workers,
    wallSeconds: result.wallMs / 1000,
    medianStepMs: stepMs[Math.floor(stepMs.length / 2)] ?? 0,
    cpuSeconds: (cpu.user + cpu.system) / 1e6,
    speedupVsFirst: first.wallMs / result.wallMs,
    maxRelDiffStepLoss: maxRelDiff(result.stepLosses, first.stepLosses),
    maxRelDiffWeights: Math.max(
      maxRelDiff(last(result).a, last(first).a),
      maxRelDiff(last(result).b, last(first).b),
    ),
    loadAverageBefore,
    result,
  });
}

const passes =
  runs[0]!.result.report.trainQueries * epochs +
  runs[0]!.result.report.validationQueries * (epochs + 1);
const summary = {
  shape: options.shape,
  trainQueries: runs[0]!.result.report.trainQueries,
  validationQueries: runs[0]!.result.report.validationQueries,
  queryTokens: problem.queryTokens,
  banks,
  bankTokens,
  dim: problem.dim,
  rank: options.rank,
  epochs,
  stepsPerEpoch: runs[0]!.result.report.stepsPerEpoch,
  queryPasses: passes,
  generateSeconds: generateMs / 1000,
  cpus: cpus().length,
  cpu: cpus()[0]?.model ?? 'unknown',
  node: process.version,
  loadAverageAfter: loadavg()[0]!,
  runs: runs.map(({ result, ...run }) => ({
    ...run,
    msPerQueryPass: result.wallMs / passes,
    epochLosses: result.epochLosses,
    validationLosses: result.snapshots.map((s) => s.validationLoss),
  })),
};

if (options.json === true) {
  printJson(summary);
} else {
  out(`adapter training benchmark (${summary.cpus} × ${summary.cpu}, node ${summary.node})`);
  out(
    `  ${options.shape}: ${summary.trainQueries} train + ${summary.validationQueries} validation ` +
      `queries × ${problem.queryTokens} tokens, ${banks} train bank(s) of ${problem.memories} ` +
      `memories = ${bankTokens} tokens, d = ${problem.dim}, r = ${summary.rank}, ${epochs} ` +
      `epoch(s) × ${summary.stepsPerEpoch} steps, ${passes} query passes ` +
      `(generation ${summary.generateSeconds.toFixed(1)} s, untimed)`,
  );
  out();
  printTable({
    head: [
      'kernel',
      'workers',
      'wall s',
      'ms per query pass',
      'median step ms',
      'cores busy',
      '× first run',
      'step losses, max rel. diff',
      'final float32 weights, max rel. diff',
      'load before',
    ],
    rows: summary.runs.map((run) => [
      run.kernel,
      String(run.workers),
      run.wallSeconds.toFixed(2),
      run.msPerQueryPass.toFixed(1),
      run.medianStepMs.toFixed(0),
      (run.cpuSeconds / run.wallSeconds).toFixed(2),
      run.speedupVsFirst.toFixed(2),
      run.maxRelDiffStepLoss.toExponential(1),
      run.maxRelDiffWeights.toExponential(1),
      run.loadAverageBefore.toFixed(1),
    ]),
  });
  out();
  out(`load average after: ${summary.loadAverageAfter.toFixed(1)}`);
  out(`train loss per epoch: ${summary.runs[0]!.epochLosses.map((x) => x.toFixed(4)).join(' ')}`);
}
