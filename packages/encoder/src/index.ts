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
} from './model-registry.js';
export { loadModelManifest, modelCacheDir, resolveModelDir } from './model-cache.js';
export type {
  LoadModelManifestOptions,
  ModelCacheOptions,
  ModelFetchEvent,
  ModelFetchResult,
  SourceAttempt,
} from './model-cache.js';
export { fetchModel, pypiWheelUrl } from './model-fetch.js';
export type { FetchModelOptions, ProcessRunner } from './model-fetch.js';
export { describeModelDir, importModelDir } from './model-dir.js';
export type { ImportModelOptions, ModelFacts } from './model-dir.js';
export { EncoderSession } from './onnx-session.js';
export type { ExecutionProvider, SessionOptions } from './onnx-session.js';
export { TextTokenizer } from './tokenizer.js';
export type { TokenizedText } from './tokenizer.js';
export { encodePass } from './pass.js';
export type { EncodedChunk, PassOptions, PoolingSpec } from './pass.js';
export { openEncoder } from './encoder.js';
export type { Encoder } from './encoder.js';
export { encodeBenchmark } from './encode-benchmark.js';
export type { EncodeBenchmarkOptions } from './encode-benchmark.js';
export { bankFileNames, toHalf, writeBankTables } from './bank-files.js';
export type { BankMetadata, BankRole, VectorDtype, WrittenCounts } from './bank-files.js';
export { BANK_MANIFEST_FILE, bankContentHash, bankManifestSchema } from './bank-manifest.js';
export type { BankManifest } from './bank-manifest.js';
export { openBank } from './bank-reader.js';
export type { BankSide, OpenedBank } from './bank-reader.js';
