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
import { parseArgs } from 'node:util';
import { TRAIN_KERNELS, trainAdapterAsync, type TrainKernel, type TrainResult } from '@bfe/adapter';
import { syntheticQueries, type SyntheticOptions } from '@bfe/adapter/testing';
import { out } from '../shared/output.js';

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
type ShapeKey = keyof (typeof SHAPES)['small'];

const { values } = parseArgs({
  options: {
    shape: { type: 'string', default: 'small' },
    kernels: { type: 'string', default: 'js,onnxruntime-js,onnxruntime' },
    workers: { type: 'string', default: '2' },
    queries: { type: 'string' },
    validation: { type: 'string' },
    'query-tokens': { type: 'string' },
    memories: { type: 'string' },
    'memory-tokens': { type: 'string' },
    'queries-per-bank': { type: 'string' },
    'validation-per-bank': { type: 'string' },
    epochs: { type: 'string' },
    dim: { type: 'string', default: '384' },
    rank: { type: 'string', default: '32' },
    seed: { type: 'string', default: '42' },
    json: { type: 'boolean', default: false },
  },
});
if (values.shape !== 'small' && values.shape !== 'locomo') {
  throw new Error(`--shape must be small or locomo, got ${values.shape}`);
}
const shape = SHAPES[values.shape];
const toInt = (name: string, text: string): number => {
  const value = Number(text);
  if (!Number.isInteger(value) || value < 0) throw new Error(`--${name} must be an integer`);
  return value;
};
const int = (name: ShapeKey | 'dim' | 'rank' | 'seed'): number => {
  const given = values[name];
  if (given !== undefined) return toInt(name, given);
  if (name === 'dim' || name === 'rank' || name === 'seed') throw new Error(`--${name} missing`);
  return shape[name];
};
const workerCounts = values.workers.split(',').map((w) => toInt('workers', w.trim()));
const kernels = values.kernels.split(',').map((k): TrainKernel => {
  const kernel = TRAIN_KERNELS.find((known) => known === k.trim());
  if (kernel === undefined) throw new Error(`--kernels: ${k} is not one of ${TRAIN_KERNELS}`);
  return kernel;
});
const plan = kernels.flatMap((kernel) => workerCounts.map((workers) => ({ kernel, workers })));

const problem: SyntheticOptions = {
  dim: int('dim'),
  queries: int('queries'),
  queryTokens: int('query-tokens'),
  memories: int('memories'),
  memoryTokens: int('memory-tokens'),
  queriesPerBank: int('queries-per-bank'),
  positives: 2,
  distortion: 1,
  noise: 2,
  seed: int('seed'),
  prefix: 'train-',
};
const epochs = int('epochs');

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
    queries: int('validation'),
    queriesPerBank: int('validation-per-bank'),
    seed: int('seed') + 1,
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
    { rank: int('rank'), epochs, seed: int('seed'), workers, kernel },
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
  shape: values.shape,
  trainQueries: runs[0]!.result.report.trainQueries,
  validationQueries: runs[0]!.result.report.validationQueries,
  queryTokens: problem.queryTokens,
  banks,
  bankTokens,
  dim: problem.dim,
  rank: int('rank'),
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

if (values.json) {
  out(JSON.stringify(summary));
} else {
  out(`adapter training benchmark (${summary.cpus} × ${summary.cpu}, node ${summary.node})`);
  out(
    `  ${values.shape}: ${summary.trainQueries} train + ${summary.validationQueries} validation ` +
      `queries × ${problem.queryTokens} tokens, ${banks} train bank(s) of ${problem.memories} ` +
      `memories = ${bankTokens} tokens, d = ${problem.dim}, r = ${summary.rank}, ${epochs} ` +
      `epoch(s) × ${summary.stepsPerEpoch} steps, ${passes} query passes ` +
      `(generation ${summary.generateSeconds.toFixed(1)} s, untimed)`,
  );
  for (const run of summary.runs) {
    out(
      `  ${run.kernel}, workers ${run.workers}: ${run.wallSeconds.toFixed(2)} s ` +
        `(${run.msPerQueryPass.toFixed(1)} ms per query pass, median step ` +
        `${run.medianStepMs.toFixed(0)} ms, ${(run.cpuSeconds / run.wallSeconds).toFixed(2)} ` +
        `cores busy), ×${run.speedupVsFirst.toFixed(2)} vs the first run; max rel. diff: step ` +
        `losses ${run.maxRelDiffStepLoss.toExponential(1)}, final float32 weights ` +
        `${run.maxRelDiffWeights.toExponential(1)}; load average before ` +
        `${run.loadAverageBefore.toFixed(1)}`,
    );
  }
  out(`  load average after: ${summary.loadAverageAfter.toFixed(1)}`);
  out(`  train loss per epoch: ${summary.runs[0]!.epochLosses.map((x) => x.toFixed(4)).join(' ')}`);
}
