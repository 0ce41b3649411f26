export {
  OFFICIAL_FILES,
  dataLocationFromEnv,
  fetchOfficialFile,
  resolveOfficialFile,
} from './files.js';
export type { DataLocation, FetchResult, OfficialFile, OfficialFileKey } from './files.js';
export {
  DATASET_NAMES,
  datasetLanguage,
  datasetOptionsSchema,
  datasetSources,
  describeDatasets,
  fetchDataset,
  loadDataset,
  readJsonFile,
} from './registry.js';
export type { DatasetLanguage } from './registry.js';
export { summarize } from './inspect.js';
export type { DatasetSummary, Distribution } from './inspect.js';
export { loadReportPath, saveLoadReport } from './report-file.js';
export { parseLocomo, locomoOptionsSchema } from './locomo.js';
export type { LocomoOptions } from './locomo.js';
export { parseLongMemEval } from './longmemeval.js';
export { LONGMEMEVAL_PROTOCOLS, longMemEvalOptionsSchema } from './longmemeval-options.js';
export type {
  LongMemEvalOptions,
  LongMemEvalOptionsInput,
  LongMemEvalProtocol,
} from './longmemeval-options.js';
export { parseCovidQa, covidQaOptionsSchema } from './covidqa.js';
export type { CovidQaOptions } from './covidqa.js';
export { loadLmebFolder, lmebOptionsSchema } from './lmeb.js';
export type { LmebOptions } from './lmeb.js';
