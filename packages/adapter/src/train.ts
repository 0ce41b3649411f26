/**
 * Training of the query adapter (METHOD.md §4): seeded init, seeded per-epoch shuffles,
 * mini-batches of queries (mean loss), global gradient clip, AdamW; a snapshot after every
 * epoch, epoch 0 being the identity. The input carries the train and validation queries and
 * nothing else, so test labels have no way in.
 */
import { ConfigError } from '@bfe/core';
import type { Adapter } from './adapter.js';
import { LossPool } from './pool/loss-pool.js';
import { queryLoss, type AdapterGradients } from './loss/loss.js';
import { initAdapterParams, type AdapterParams } from './model.js';
import { AdamW, clipGradNorm } from './optimiser.js';
import {
  parseTrainOptions,
  trainingConfigOf,
  type ResolvedTrainOptions,
  type TrainOptions,
} from './options.js';
import { Prng, deriveSeed, shuffleInPlace } from './prng.js';
import {
  prepareInput,
  type PreparedQuery,
  type TrainingInput,
  type TrainingReport,
} from './train-input.js';

/** The adapter after one epoch (0 = before training: the identity). */
export interface AdapterSnapshot {
  readonly epoch: number;
  readonly adapter: Adapter;
  /** `√(‖A − A₀‖²_F + ‖B − B₀‖²_F)`, from the float64 master weights. */
  readonly deltaNorm: number;
  /** Mean of this epoch's step losses; null at epoch 0. */
  readonly trainLoss: number | null;
  /** Mean validation loss of this snapshot; null when switched off. */
  readonly validationLoss: number | null;
}

/** Everything a training run returns. */
export interface TrainResult {
  /** Epochs 0..E. */
  readonly snapshots: readonly AdapterSnapshot[];
  /** Mean step loss of each trained epoch 1..E. */
  readonly epochLosses: readonly number[];
  /** Mean batch loss of each optimiser step, in order. */
  readonly stepLosses: readonly number[];
  /** Global gradient norm of each step before clipping. */
  readonly gradNorms: readonly number[];
  /** Steps whose gradient was clipped. */
  readonly clippedSteps: number;
  /** Wall time of the whole call, milliseconds. */
  readonly wallMs: number;
  readonly report: TrainingReport;
  readonly options: ResolvedTrainOptions;
}

/** Progress of one optimiser step, for a caller's progress display. */
export interface TrainStepInfo {
  readonly epoch: number;
  /** Step within the epoch, from 0. */
  readonly step: number;
  readonly stepsPerEpoch: number;
  readonly loss: number;
  readonly gradNorm: number;
}

/** Callbacks; the library never prints. */
export interface TrainHooks {
  onStep?(info: TrainStepInfo): void;
  onSnapshot?(snapshot: AdapterSnapshot): void;
}

/** Checked input, parsed options and the state a run starts from. */
interface Session {
  readonly started: number;
  readonly config: ResolvedTrainOptions;
  readonly dim: number;
  readonly train: readonly PreparedQuery[];
  readonly validation: readonly PreparedQuery[];
  readonly report: TrainingReport;
  readonly params: AdapterParams<Float64Array>;
  readonly grads: AdapterGradients;
}

/**
 * Arithmetic the training loop asks of its driver (the calling thread or the worker pool):
 * `train` — the loss sum of these train queries, their gradient summed into the session's
 * `grads` (zeroed before asking); `validation` — the loss sum of all validation queries.
 */
type Work =
  { readonly kind: 'train'; readonly queries: readonly number[] } | { readonly kind: 'validation' };

/**
 * Trains the query adapter on `input.train`, computing the validation loss of every snapshot
 * on `input.validation`. Checks first, before any arithmetic: only `dim`, `train` and
 * `validation` keys (anything else, e.g. `test`, is a `LabelLeakError`); non-empty train and
 * validation (`ConfigError`); `assertTrainable` (guards.ts) on the query ids and, under the default
 * `connected-bank` policy, the candidate memory ids; shapes, finiteness and positives
 * (`AdapterInputError`). Train queries without tokens are skipped and listed in the report; a
 * train query without a positive is refused. Single-threaded: `workers` other than 1 is a
 * `ConfigError` (use {@link trainAdapterAsync}).
 * @example
 * const result = trainAdapter(
 *   { dim: 384, train, validation }, // TrainingQuery[]: tokens Float32Array [n_q * 384], …
 *   { epochs: 2, seed: 42, splitHash, modelHash },
 * );
 * result.snapshots.map((s) => s.validationLoss); // epochs 0, 1, 2
 */
export function trainAdapter(
  input: TrainingInput,
  options: TrainOptions = {},
  hooks: TrainHooks = {},
): TrainResult {
  const session = prepareSession(input, options, 'sync');
  const steps = trainSteps(session, hooks);
  let next = steps.next();
  while (next.done !== true) next = steps.next(localWork(session, next.value));
  return next.value;
}

/**
 * {@link trainAdapter} that keeps the event loop running — timers, signal handlers and lock
 * heartbeats — during a long training, and spreads each batch over `options.workers` worker
 * threads (default `min(2, os.availableParallelism())`). Every check runs before a thread
 * starts; the threads are terminated when the promise settles, also on error (a failing
 * worker rejects it).
 *
 * With `workers: 1` it computes on the calling thread, yielding after every optimiser step:
 * the same arithmetic and the same result as {@link trainAdapter}, bit for bit. With `w > 1`
 * each batch (and the validation split) is cut into `w` contiguous runs of about equal cost,
 * one per worker, whose losses and gradients are added in worker order: the result is the
 * same on every run with the same `w`, and differs from one thread only in float64
 * summation order (relative differences ~1e-15 per step, which training can amplify slowly);
 * the `onnxruntime` kernel's fused backward is another such order (`loss-ort.ts`).
 * @example
 * const result = await trainAdapterAsync({ dim: 384, train, validation }, { workers: 2 });
 */
export async function trainAdapterAsync(
  input: TrainingInput,
  options: TrainOptions = {},
  hooks: TrainHooks = {},
): Promise<TrainResult> {
  const session = prepareSession(input, options, 'async');
  const steps = trainSteps(session, hooks);
  if (session.config.workers === 1 && session.config.kernel === 'js') {
    let next = steps.next();
    while (next.done !== true) {
      const done = localWork(session, next.value);
      await new Promise<void>((resolve) => setImmediate(resolve));
      next = steps.next(done);
    }
    return next.value;
  }
  const { train, validation, config, params, grads } = session;
  const pool = await LossPool.start({
    dim: session.dim,
    rank: config.rank,
    temperature: config.temperature,
    kernel: config.kernel,
    queries: [...train, ...validation],
    workers: config.workers,
  });
  try {
    // pool indices: train queries first, then validation
    const validationIds = validation.map((_, i) => train.length + i);
    let next = steps.next();
    while (next.done !== true) {
      const work = next.value;
      const sum =
        work.kind === 'train'
          ? await pool.lossSum(params, work.queries, grads)
          : await pool.lossSum(params, validationIds);
      next = steps.next(sum);
    }
    return next.value;
  } finally {
    await pool.close();
  }
}

/** The calling thread's answer to a {@link Work} request (the single-thread arithmetic). */
function localWork(session: Session, work: Work): number {
  const { params, config } = session;
  let sum = 0;
  if (work.kind === 'train') {
    for (const q of work.queries) {
      sum += queryLoss(params, session.train[q]!, config.temperature, session.grads);
    }
  } else {
    for (const q of session.validation) sum += queryLoss(params, q, config.temperature);
  }
  return sum;
}

/** Parses the options and checks the input; nothing is computed or started before this. */
function prepareSession(
  input: TrainingInput,
  options: TrainOptions,
  mode: 'sync' | 'async',
): Session {
  const started = performance.now();
  const parsed = parseTrainOptions(options);
  if (mode === 'sync' && parsed.workers !== 1 && options.workers !== undefined) {
    throw new ConfigError(
      `trainAdapter is single-threaded; workers: ${parsed.workers} needs trainAdapterAsync.`,
    );
  }
  if (mode === 'sync' && parsed.kernel !== 'js' && options.kernel !== undefined) {
    throw new ConfigError(
      `trainAdapter is synchronous and runs the js kernel; kernel: ${parsed.kernel} needs trainAdapterAsync.`,
    );
  }
  const config = mode === 'sync' ? { ...parsed, workers: 1, kernel: 'js' as const } : parsed;
  const { train, validation, report } = prepareInput(input, config);
  const dim = input.dim;
  if (config.rank > dim) {
    throw new ConfigError(`adapter rank ${config.rank} exceeds the token dimension ${dim}.`);
  }
  const params = initAdapterParams(dim, config.rank, config.seed, config.initStd);
  const grads = { a: new Float64Array(params.a.length), b: new Float64Array(params.b.length) };
  return { started, config, dim, train, validation, report, params, grads };
}

/**
 * The training loop as a coroutine: it yields each {@link Work} it needs and receives the
 * loss sum, so that one loop serves the synchronous, the yielding and the parallel driver.
 */
function* trainSteps(session: Session, hooks: TrainHooks): Generator<Work, TrainResult, number> {
  const { started, config, dim, train, validation, report, params, grads } = session;
  const initialA = params.a.slice();
  const initialB = params.b.slice();
  const optimiser = new AdamW([params.a, params.b], {
    learningRate: config.learningRate,
    beta1: config.beta1,
    beta2: config.beta2,
    epsilon: config.adamEpsilon,
    weightDecay: config.weightDecay,
  });
  const trainingConfig = trainingConfigOf(config);

  const snapshots: AdapterSnapshot[] = [];
  function* takeSnapshot(epoch: number, trainLoss: number | null): Generator<Work, void, number> {
    let validationLoss: number | null = null;
    if (config.validationLoss && validation.length > 0) {
      validationLoss = (yield { kind: 'validation' }) / validation.length;
    }
    const snapshot: AdapterSnapshot = {
      epoch,
      adapter: {
        dim,
        rank: config.rank,
        a: Float32Array.from(params.a),
        b: Float32Array.from(params.b),
        meta: {
          seed: config.seed,
          epoch,
          splitHash: config.splitHash ?? null,
          modelHash: config.modelHash ?? null,
          trainingConfig,
        },
      },
      deltaNorm: Math.hypot(distance(params.a, initialA), distance(params.b, initialB)),
      trainLoss,
      validationLoss,
    };
    snapshots.push(snapshot);
    hooks.onSnapshot?.(snapshot);
  }

  yield* takeSnapshot(0, null);
  const stepLosses: number[] = [];
  const gradNorms: number[] = [];
  const epochLosses: number[] = [];
  let clippedSteps = 0;
  const order = train.map((_, i) => i);
  const stepsPerEpoch = report.stepsPerEpoch;
  for (let epoch = 1; epoch <= config.epochs; epoch++) {
    // The order of epoch e depends on (seed, e) only.
    for (let i = 0; i < order.length; i++) order[i] = i;
    shuffleInPlace(order, new Prng(deriveSeed(config.seed, epoch)));
    let epochSum = 0;
    for (let step = 0; step < stepsPerEpoch; step++) {
      const batch = order.slice(step * config.batchSize, (step + 1) * config.batchSize);
      grads.a.fill(0);
      grads.b.fill(0);
      const sum = yield { kind: 'train', queries: batch };
      const inv = 1 / batch.length;
      const loss = sum * inv;
      if (!Number.isFinite(loss)) {
        throw new Error(`trainAdapter: non-finite loss ${loss} at epoch ${epoch}, step ${step}`);
      }
      for (let k = 0; k < grads.a.length; k++) grads.a[k]! *= inv;
      for (let k = 0; k < grads.b.length; k++) grads.b[k]! *= inv;
      const gradNorm = clipGradNorm([grads.a, grads.b], config.clipNorm);
      if (gradNorm > config.clipNorm) clippedSteps += 1;
      optimiser.step([grads.a, grads.b]);
      stepLosses.push(loss);
      gradNorms.push(gradNorm);
      epochSum += loss;
      hooks.onStep?.({ epoch, step, stepsPerEpoch, loss, gradNorm });
    }
    const epochLoss = epochSum / stepsPerEpoch;
    epochLosses.push(epochLoss);
    yield* takeSnapshot(epoch, epochLoss);
  }
  return {
    snapshots,
    epochLosses,
    stepLosses,
    gradNorms,
    clippedSteps,
    wallMs: performance.now() - started,
    report,
    options: config,
  };
}

function distance(x: Float64Array, y: Float64Array): number {
  let ss = 0;
  for (let k = 0; k < x.length; k++) {
    const d = x[k]! - y[k]!;
    ss += d * d;
  }
  return Math.sqrt(ss);
}
