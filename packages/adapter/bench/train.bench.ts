/**
 * A benchmark, not a test: wall time of `trainAdapter` (METHOD.md §4) on a synthetic problem
 * of the real split's size — 60 training queries of 12 tokens, each with its own candidate
 * bank of 50 memories (≈ 5,000 tokens), 20 validation queries alike, d = 384, r = 32, two
 * epochs, batch 16, METHOD.md's optimiser settings. Generation is not timed. Single-threaded.
 *
 * @example
 * node --conditions=@bfe/source --import tsx packages/adapter/bench/train.bench.ts
 * node --conditions=@bfe/source --import tsx packages/adapter/bench/train.bench.ts --queries 20 --json
 */
import { cpus } from 'node:os';
import { parseArgs } from 'node:util';
import { syntheticQueries, type SyntheticOptions } from '../src/testing/synthetic.js';
import { trainAdapter } from '../src/train.js';

const out = (line = ''): boolean => process.stdout.write(`${line}\n`);

const { values } = parseArgs({
  options: {
    queries: { type: 'string', default: '60' },
    validation: { type: 'string', default: '20' },
    'query-tokens': { type: 'string', default: '12' },
    memories: { type: 'string', default: '50' },
    // every fifth memory has half as many: 4 × 110 + 55 → 99 on average, 4,950 per bank
    'memory-tokens': { type: 'string', default: '110' },
    'queries-per-bank': { type: 'string', default: '1' },
    dim: { type: 'string', default: '384' },
    rank: { type: 'string', default: '32' },
    epochs: { type: 'string', default: '2' },
    seed: { type: 'string', default: '42' },
    json: { type: 'boolean', default: false },
  },
});
const int = (name: keyof typeof values): number => {
  const value = Number(values[name]);
  if (!Number.isInteger(value) || value < 0) throw new Error(`--${name} must be an integer`);
  return value;
};

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

let t = performance.now();
const train = syntheticQueries(problem);
const validation = syntheticQueries({
  ...problem,
  queries: int('validation'),
  seed: int('seed') + 1,
  prefix: 'validation-',
});
const generateMs = performance.now() - t;
const bankTokens = train[0]!.candidates.tokenVectors.length / problem.dim;

const stepMs: number[] = [];
t = performance.now();
const result = trainAdapter(
  { dim: problem.dim, train, validation },
  { rank: int('rank'), epochs: int('epochs'), seed: int('seed') },
  {
    onStep: () => {
      const now = performance.now();
      stepMs.push(now - t);
      t = now;
    },
  },
);

const forwardMacs = (problem.queryTokens * bankTokens * problem.dim) / 1e6;
const passes = result.report.trainQueries * int('epochs') + validation.length * (int('epochs') + 1);
const summary = {
  wallSeconds: result.wallMs / 1000,
  generateSeconds: generateMs / 1000,
  trainQueries: result.report.trainQueries,
  validationQueries: result.report.validationQueries,
  bankTokensPerQuery: bankTokens,
  dim: problem.dim,
  rank: int('rank'),
  epochs: int('epochs'),
  stepsPerEpoch: result.report.stepsPerEpoch,
  queryPasses: passes,
  msPerQueryPass: result.wallMs / passes,
  gmacPerSecond: (forwardMacs * passes) / result.wallMs,
  epochLosses: result.epochLosses,
  validationLosses: result.snapshots.map((s) => s.validationLoss),
  deltaNorms: result.snapshots.map((s) => s.deltaNorm),
  cpu: cpus()[0]?.model ?? 'unknown',
  node: process.version,
};

if (values.json) {
  out(JSON.stringify(summary));
} else {
  out(`adapter training benchmark (${summary.cpu}, node ${summary.node}, one thread)`);
  out(
    `  ${summary.trainQueries} train + ${summary.validationQueries} validation queries × ` +
      `${problem.queryTokens} tokens, ${problem.memories} memories = ${bankTokens} tokens per ` +
      `bank, d = ${problem.dim}, r = ${summary.rank}, ${summary.epochs} epochs × ` +
      `${summary.stepsPerEpoch} steps (generation ${summary.generateSeconds.toFixed(1)} s, untimed)`,
  );
  out(`  wall time: ${summary.wallSeconds.toFixed(2)} s`);
  out(
    `  ${passes} query passes (train forward+backward, validation forward): ` +
      `${summary.msPerQueryPass.toFixed(1)} ms each, ${summary.gmacPerSecond.toFixed(2)} GMAC/s ` +
      'in the MaxSim products',
  );
  out(`  step times (ms): ${stepMs.map((x) => x.toFixed(0)).join(' ')}`);
  out(`  train loss per epoch: ${summary.epochLosses.map((x) => x.toFixed(4)).join(' ')}`);
  out(
    `  validation loss per snapshot: ${summary.validationLosses.map((x) => x?.toFixed(4)).join(' ')}`,
  );
  out(`  ‖Δ‖ per snapshot: ${summary.deltaNorms.map((x) => x.toExponential(2)).join(' ')}`);
}
