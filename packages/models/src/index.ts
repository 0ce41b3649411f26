export { modelManifestSchema, MODEL_MANIFEST_FILE } from './model-manifest.js';
export type { ModelManifest } from './model-manifest.js';
export { DEFAULT_MODEL_NAME, MODEL_NAMES, MODEL_REGISTRY, getModelSpec } from './model-registry.js';
export type {
  HubSource,
  ModelSource,
  ModelSpec,
  PinnedFile,
  PinnedWheel,
  PypiSource,
  QuantizeSource,
} from './model-spec.js';
export { loadModelManifest, modelCacheDir, resolveModelDir } from './model-cache.js';
export type {
  LoadModelManifestOptions,
  ModelCacheOptions,
  ModelFetchEvent,
  ModelFetchResult,
  SourceAttempt,
} from './model-cache.js';
export { fetchModel } from './model-fetch.js';
export type { FetchModelOptions } from './model-fetch.js';
export type { ProcessRunner } from './fetch-context.js';
export { pypiWheelUrl } from './pypi-fetch.js';
export { importModelDir } from './model-dir.js';
export type { ImportModelOptions } from './model-dir.js';
export { describeModelDir } from './model-facts.js';
export type { ModelFactOverrides, ModelFacts } from './model-facts.js';
export { assertQueryModel, queryModelDifferences } from './query-model.js';
