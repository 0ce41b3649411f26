// The runner is an app: its library surface is the file formats other code reads.
export {
  buildRunResults,
  parseRunResults,
  runResultsSchema,
  seedSelectionSchema,
} from './experiment/run-results.js';
export type { RunResults, RunResultsInput, SeedSelection } from './experiment/run-results.js';
export {
  seedMeans,
  seedMeansSchema,
  seedMetricSchema,
  seedSystemSchema,
} from './score/seed-means.js';
export type { SeedMeans, SeedMetric, SeedSystem } from './score/seed-means.js';
