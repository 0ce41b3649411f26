import { availableParallelism } from 'node:os';
import { z } from 'zod';
import { ConfigError, splitPolicySchema } from '@bfe/core';
import { DEFAULT_TEMPERATURE } from './loss/loss.js';
import { DEFAULT_INIT_STD, DEFAULT_RANK } from './model.js';
import { DEFAULT_ADAMW } from './optimiser.js';

/**
 * The adapter's training hyperparameters (METHOD.md §4), the source of truth for their types
 * and defaults; recorded in every adapter file as `trainingConfig`.
 */
export const trainingConfigSchema = z.strictObject({
  /** `r`: columns of B, rows of A. */
  rank: z.number().int().min(1).default(DEFAULT_RANK),
  /** Seeds A's initialisation (stream 0) and each epoch's shuffle (stream `epoch`). */
  seed: z.number().int().default(42),
  /** Standard deviation of the initial entries of A. */
  initStd: z.number().positive().default(DEFAULT_INIT_STD),
  /** Passes over the training queries; snapshots are taken after each (and at 0). */
  epochs: z.number().int().min(0).max(1000).default(2),
  /** Queries per optimiser step; the loss is their mean. */
  batchSize: z.number().int().min(1).default(16),
  learningRate: z.number().positive().default(DEFAULT_ADAMW.learningRate),
  beta1: z.number().min(0).lt(1).default(DEFAULT_ADAMW.beta1),
  beta2: z.number().min(0).lt(1).default(DEFAULT_ADAMW.beta2),
  adamEpsilon: z.number().positive().default(DEFAULT_ADAMW.epsilon),
  /** Decoupled weight decay, applied to A and B. */
  weightDecay: z.number().min(0).default(DEFAULT_ADAMW.weightDecay),
  /** Global gradient-norm clip over A and B together. */
  clipNorm: z.number().positive().default(1),
  /** `τ` of the cross-entropy. */
  temperature: z.number().positive().default(DEFAULT_TEMPERATURE),
  /** The split policy the data came from; `connected-bank` also refuses shared memories. */
  policy: splitPolicySchema.default('connected-bank'),
});

/** Training hyperparameters with defaults filled in. */
export type TrainingConfig = z.output<typeof trainingConfigSchema>;

/** Upper bound of the `workers` option (a guard against a typo spawning hundreds of threads). */
export const MAX_TRAIN_WORKERS = 16;

/**
 * Default `workers` of `trainAdapterAsync`: `min(2, os.availableParallelism())`.
 * @example defaultTrainWorkers(); // 2 on a 2-core machine, 1 on a single core
 */
export function defaultTrainWorkers(): number {
  return Math.min(2, availableParallelism());
}

/**
 * What computes MaxSim during training: `onnxruntime` — a float32 MatMul on onnxruntime's CPU
 * provider, the maxima then recomputed exactly in float64 in WebAssembly with SIMD
 * (`wasm-kernel.ts`) and MaxSim's backward fused into that pass (`assembly/fused.ts`: the
 * losses bit for bit, the gradients within float64 rounding of the reference's); `onnxruntime-js`
 * — the same MatMul, the float64 parts in JavaScript (`maxsim-exact.ts`), the same result as
 * `js` bit for bit; or `js`, the reference loops.
 */
export const TRAIN_KERNELS = ['onnxruntime', 'onnxruntime-js', 'js'] as const;
export type TrainKernel = (typeof TRAIN_KERNELS)[number];

/** Everything `trainAdapter` accepts: the hyperparameters plus provenance and switches. */
export const trainOptionsSchema = z.strictObject({
  ...trainingConfigSchema.shape,
  /** Hash of the split file the queries come from, copied into every snapshot. */
  splitHash: z.string().min(1).optional(),
  /** Hash of the encoder model that made the token states, copied into every snapshot. */
  modelHash: z.string().min(1).optional(),
  /** Compute the validation loss at every snapshot (forward passes only). */
  validationLoss: z.boolean().default(true),
  /**
   * Worker threads that compute each batch's losses and gradients in `trainAdapterAsync`
   * (1 = on the calling thread). Default {@link defaultTrainWorkers}. Not a hyperparameter:
   * it changes float64 summation order only, so it is not recorded in adapter files.
   * `trainAdapter` (sync) is single-threaded and refuses any other value than 1.
   */
  workers: z.number().int().min(1).max(MAX_TRAIN_WORKERS).default(defaultTrainWorkers),
  /**
   * {@link TRAIN_KERNELS}; default `onnxruntime` in `trainAdapterAsync` (`trainAdapter`, sync,
   * runs `js` and refuses `onnxruntime`). Not a hyperparameter: both give the same result bit
   * for bit, so it is not recorded in adapter files.
   */
  kernel: z.enum(TRAIN_KERNELS).default('onnxruntime'),
});

/** Training options as a caller writes them (every field optional). */
export type TrainOptions = z.input<typeof trainOptionsSchema>;
/** Training options with defaults filled in. */
export type ResolvedTrainOptions = z.output<typeof trainOptionsSchema>;

/**
 * Parses training options.
 * @throws {ConfigError} naming each bad field.
 * @example
 * parseTrainOptions({ epochs: 1 }); // { rank: 32, seed: 42, epochs: 1, batchSize: 16, … }
 */
export function parseTrainOptions(options: unknown = {}): ResolvedTrainOptions {
  const parsed = trainOptionsSchema.safeParse(options);
  if (!parsed.success) {
    throw new ConfigError(`adapter training options: ${z.prettifyError(parsed.error)}`);
  }
  return parsed.data;
}

// Non-strict twin of the schema: keeps the hyperparameters, drops provenance and switches.
const trainingConfigPicker = z.object(trainingConfigSchema.shape);

/** The hyperparameters of resolved options (what an adapter file records). */
export function trainingConfigOf(options: ResolvedTrainOptions): TrainingConfig {
  return trainingConfigPicker.parse(options);
}
