export { SparseScorer } from './scorer.js';
export type {
  QueryScores,
  ScoreRequest,
  ScorerOptions,
  SystemName,
  SystemScores,
} from './scorer.js';
export type { TokenBank } from './validate.js';
export { parseScoreOptions, scoreOptionsSchema } from './options.js';
export type { ResolvedScoreOptions, ScoreOptions } from './options.js';
export { SIGMA_FLOOR, fuse, rankCandidates, standardize, standardizeInto } from './fusion.js';
export type { RankedCandidates } from './fusion.js';
export { TIE_DEPTH, TIE_SEED, TieTally, tieKey, tieOrder, tiedPositions } from './ties.js';
export type { TieCounts, TieOrder } from './ties.js';
export {
  DEFAULT_CHUNK_SIZE,
  DEFAULT_MARGIN,
  DEFAULT_MAX_SCORE_FLOATS,
  effectiveChunkSize,
  exactTopK,
  flatBankSource,
} from './top-k.js';
export { RunningTopK } from './running-top-k.js';
export { dot64, dotsInto } from './dots.js';
export type { BankChunkSource, ExactTopKOptions, TopKResult } from './top-k.js';
export { CandidateBank } from './candidate-bank.js';
export { NonFiniteScoresError } from './kernel.js';
export type { ChunkTopK, SimilarityKernel } from './kernel.js';
export { JsSimilarityKernel } from './js-kernel.js';
export { OrtSimilarityKernel } from './ort-kernel.js';
export type { ExecutionProvider, OrtKernelOptions } from './ort-kernel.js';
export { GRAPH_NAMES, MAX_RESIDENT_BANK_BYTES, similarityGraph } from './onnx-graph.js';
export type { SimilarityGraphSpec } from './onnx-graph.js';
export { ScorerInputError } from './errors.js';
export type { ScorerInputReason } from './errors.js';
export { BM25_PARAMS, BM25_WEIGHT_DECIMALS, Bm25Index, bm25Scores, bm25Tokens } from './bm25.js';
export type { Bm25BuildOptions, Bm25Engine, Bm25Params } from './bm25.js';
export { groupByCandidates } from './ranking/groups.js';
export type { CandidateGroup, MemoryCatalog, RankQuery } from './ranking/groups.js';
export { ADAPTED_SYSTEMS, SCORE_SYSTEMS, SWEEP_SYSTEMS, SYSTEMS } from './ranking/systems.js';
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
export { rankFusionGrid } from './ranking/fusion-grid.js';
export type { FusionGridRankInput } from './ranking/fusion-grid.js';
