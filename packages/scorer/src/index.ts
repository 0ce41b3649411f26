export { SparseScorer } from './scorer.js';
export type {
  QueryScores,
  ScoreRequest,
  ScorerOptions,
  SystemName,
  SystemScores,
} from './scorer.js';
export type { QueryHits } from './hits.js';
export { explainCandidates, missingBests } from './evidence.js';
export type {
  DiagnosticBests,
  EvidenceMatching,
  ExplainInput,
  MemoryEvidence,
  TokenEvidence,
} from './evidence.js';
export { namedTokenRemovals, tokenInterventions, topExcessRemovals } from './interventions.js';
export type {
  CandidateInterventions,
  InterventionInput,
  InterventionMatching,
  InterventionOutcome,
  TokenExcess,
} from './interventions.js';
export { TOP_CUTOFF, median, summarizeInterventions } from './interventions-summary.js';
export type { InterventionRecord, InterventionSummaryRow } from './interventions-summary.js';
export type { TokenBank } from './validate.js';
export { parseScoreOptions, scoreOptionsSchema } from './options.js';
export type { ResolvedScoreOptions, ScoreOptions } from './options.js';
export {
  SIGMA_FLOOR,
  fuse,
  rankCandidates,
  standardization,
  standardize,
  standardizeInto,
} from './fusion.js';
export type { RankedCandidates } from './fusion.js';
// Token search lives in @bfe/index; these re-exports keep the scorer's callers unchanged.
export { TIE_DEPTH, TIE_SEED, TieTally, tieKey, tieOrder, tiedPositions } from '@bfe/index';
export type { TieCounts, TieOrder } from '@bfe/index';
export { ScorerInputError } from '@bfe/index';
export type { ScorerInputReason } from '@bfe/index';
export {
  BM25_DEFAULTS,
  BM25_PARAMS,
  Bm25Corpus,
  Bm25Index,
  bm25BuildOptions,
  bm25Idf,
  bm25Meta,
  bm25Scores,
  bm25TermWeight,
  resolveBm25Options,
} from './bm25.js';
export type { Bm25BuildOptions, Bm25Idf, Bm25Options, Bm25Params } from './bm25.js';
export { bm25Tokens, bm25Words, foldText } from './bm25-text.js';
export type { Bm25Language } from './bm25-text.js';
export { groupByCandidates } from './ranking/groups.js';
export type { CandidateGroup, MemoryCatalog, RankQuery } from './ranking/groups.js';
export {
  ADAPTED_SYSTEMS,
  HYBRID_SYSTEMS,
  SCORE_SYSTEMS,
  SWEEP_SYSTEMS,
  SYSTEMS,
} from './ranking/systems.js';
export type {
  RankingSystem,
  SweepSystem,
  SystemDescriptor,
  SystemSource,
} from './ranking/systems.js';
export { rankIds } from './ranking/sides.js';
export type { RankingSide, Rankings } from './ranking/sides.js';
export { rankSystems } from './ranking/rank-systems.js';
export type {
  RankSystemsInput,
  RankingStats,
  SweepRankings,
  SystemRankings,
} from './ranking/rank-systems.js';
export {
  CHUNKED_POOLED_SUMMARY,
  chunkedPooledName,
  chunkedPooledScoresInto,
  rankChunkedPooled,
} from './ranking/chunked-pooled.js';
export type {
  ChunkedPooledSystem,
  RankChunkedPooledInput,
  WindowPools,
} from './ranking/chunked-pooled.js';
export { rankFusionGrid, rankFusionGrids } from './ranking/fusion-grid.js';
export type { FusionFloor, FusionGridRankInput } from './ranking/fusion-grid.js';
export {
  fuseHybrid,
  normalizeHybridWeights,
  rankHybridGrid,
  simplexGrid,
} from './ranking/hybrid.js';
export type { HybridGridRankInput, HybridWeights } from './ranking/hybrid.js';
export { rankBm25 } from './ranking/bm25-rank.js';
export type { RankBm25Input } from './ranking/bm25-rank.js';
