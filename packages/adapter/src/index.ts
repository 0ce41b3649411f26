export { adapterQueryTransform } from './adapter.js';
export type { Adapter, AdapterMeta } from './adapter.js';
export {
  DEFAULT_INIT_STD,
  DEFAULT_RANK,
  NORM_EPSILON,
  adapterBackward,
  applyAdapter,
  applyAdapterInto,
  createForwardCache,
  initAdapterParams,
} from './model.js';
export type { AdapterForwardCache, AdapterParams, FloatArray } from './model.js';
export {
  DEFAULT_TEMPERATURE,
  EMPTY_MEMORY_SIMILARITY,
  maxSim,
  maxSimBackward,
  maxSimInto,
  multiPositiveCrossEntropy,
  queryLoss,
} from './loss/loss.js';
export type { AdapterGradients, LossQuery, MaxSimResult, TokenSegments } from './loss/loss.js';
export { AdamW, DEFAULT_ADAMW, clipGradNorm } from './optimiser.js';
export type { AdamWOptions } from './optimiser.js';
export { trainAdapter, trainAdapterAsync } from './train.js';
export type { AdapterSnapshot, TrainHooks, TrainResult, TrainStepInfo } from './train.js';
export type { CandidateSet, TrainingInput, TrainingQuery, TrainingReport } from './train-input.js';
export {
  MAX_TRAIN_WORKERS,
  TRAIN_KERNELS,
  defaultTrainWorkers,
  parseTrainOptions,
  trainOptionsSchema,
  trainingConfigOf,
  trainingConfigSchema,
} from './options.js';
export type { ResolvedTrainOptions, TrainKernel, TrainOptions, TrainingConfig } from './options.js';
export { assertTrainable } from './guards.js';
export type { SplitIds, TrainableSplit } from './guards.js';
export {
  ADAPTER_FORMAT,
  adapterFileSchema,
  adapterWeightsSha256,
  loadAdapter,
  parseAdapter,
  saveAdapter,
  serializeAdapter,
} from './file.js';
export type { AdapterFile } from './file.js';
export { AdapterInputError } from './errors.js';
export type { AdapterInputReason } from './errors.js';
export { Prng, deriveSeed, shuffleInPlace } from './prng.js';
