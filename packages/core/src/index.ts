export {
  ArtifactCorruptError,
  BfeError,
  ConfigError,
  DataError,
  DataMissingError,
  EmptyDatasetError,
  FetchError,
  HashMismatchError,
  LabelLeakError,
  SplitError,
  UnknownDatasetError,
} from './errors.js';
export type { BfeErrorCode, BfeErrorOptions } from './errors.js';
export {
  StorageError,
  formatBytes,
  injectedStorageFault,
  isStorageErrno,
  toStorageError,
  toStorageErrorSync,
} from './storage-error.js';
export type { StorageErrorCode, StorageErrorDetails } from './storage-error.js';
export { RecordHasher, bytesSha256, canonicalJson, contentHash, fileSha256 } from './hash.js';
export {
  artifactManifestSchema,
  memorySchema,
  metaSchema,
  querySchema,
  sourceFileSchema,
  splitNameSchema,
  splitPolicySchema,
  splitSchema,
} from './schemas.js';
export type {
  ArtifactManifest,
  Benchmark,
  Memory,
  Meta,
  Query,
  SourceFile,
  Split,
  SplitName,
  SplitPolicy,
} from './schemas.js';
export { RelevanceLabels } from './labels.js';
export {
  LoadReport,
  formatLoadSummary,
  formatPath,
  loadSummarySchema,
  summarizeLoad,
  validateRecord,
} from './load-report.js';
export type { LoadIssue, LoadReportJson, LoadSummary, ReportItem } from './load-report.js';
export { benchmarkHash } from './benchmark.js';
export type { LoadedDataset } from './benchmark.js';
export { flatListValues, float16ListVector, float32ListVector, readArrowFile } from './arrow.js';
export {
  fsyncDirs,
  fsyncPath,
  writeDirAtomic,
  writeFileAtomic,
  writeWithHandle,
} from './atomic-write.js';
export { readJsonl, readLines, writeJsonlAtomic } from './jsonl.js';
export { Utf8Check, decodeUtf8Strict } from './utf8.js';
export type { LinesRead } from './jsonl.js';
export { isProcessAlive, startWorker } from './process.js';
export type { StartWorkerOptions } from './process.js';
export { MAX_SEED, checkSeed, seededPermutation, seededShuffle } from './shuffle.js';
export { terminalTable, terminalTableLines } from './text-table.js';
export type { TextTable } from './text-table.js';
