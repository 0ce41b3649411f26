export {
  BUDGET_KS,
  DEFAULT_KS,
  assertNoDuplicates,
  cappedRecallAt,
  checkKs,
  filterToCandidates,
  gradesOf,
  metricName,
  metricNames,
  ndcgAt,
  queryMetrics,
  rankByScore,
  recallAt,
} from './metrics.js';
export type { Gains, MetricKind, MetricName, MetricValues, Relevance } from './metrics.js';
export { aggregate, evaluate } from './evaluate.js';
export type {
  DroppedQuery,
  EvaluateInput,
  Evaluation,
  EvaluationDiagnostics,
  QueryRecord,
  SubtaskSummary,
} from './evaluate.js';
export {
  DEFAULT_RESAMPLES,
  DEFAULT_SEED,
  MAX_SEED,
  comparePaired,
  pairedBootstrap,
  pairedDifferences,
  pairedRandomizationTest,
  stratifiedMean,
} from './significance.js';
export type { PairedDifference, PairedTestOptions, Strata } from './significance.js';
export {
  countClusters,
  pairedClusterBootstrap,
  pairedClusterIds,
  pairedClusterRandomizationTest,
} from './significance-cluster.js';
export type { ClusterDifference, StrataClusters } from './significance-cluster.js';
export {
  KNOWN_SYSTEMS,
  MIN_HEADLINE_CLUSTERS,
  buildResults,
  clusterDifferenceSchema,
  metricNameSchema,
  metricValuesSchema,
  pairedDifferenceSchema,
  parseResults,
  resultsSchema,
  significanceSchema,
  systemNameSchema,
  systemResult,
  systemResultSchema,
} from './results.js';
export type { BuildResultsInput, Results, SystemResult } from './results.js';
export {
  clustersFromPerQuery,
  perQueryLineSchema,
  perQueryLines,
  recomputeFromPerQuery,
} from './per-query.js';
export type { PerQueryLine, RecomputeOptions } from './per-query.js';
export { parsePerQueryLine, readPerQueryJsonl, writePerQueryJsonl } from './per-query-io.js';
export {
  DEFAULT_TRANSITION_K,
  DEFAULT_TRANSITION_PAIRS,
  HIT_DEFINITION,
  isHit,
  queryTransitions,
  subtaskTransitionCountsSchema,
  transitionCountsSchema,
  transitionIssues,
  transitionPairsFor,
  transitionsBetween,
  transitionsFromPerQuery,
  transitionsSchema,
} from './transitions.js';
export type { TransitionCounts, TransitionLine, Transitions } from './transitions.js';
