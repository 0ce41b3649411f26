export {
  ArtifactCorruptError,
  BfeError,
  ConfigError,
  DataError,
  DataMissingError,
  FetchError,
  HashMismatchError,
  LabelLeakError,
  SplitError,
  UnknownDatasetError,
} from './errors.js';
export type { BfeErrorCode, BfeErrorOptions } from './errors.js';
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
export { LoadReport, formatPath, validateRecord } from './load-report.js';
export type { LoadIssue, LoadReportJson, ReportItem } from './load-report.js';
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
export type { LinesRead } from './jsonl.js';
