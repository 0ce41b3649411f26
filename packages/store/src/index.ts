export type {
  BankView,
  EmbedOptions,
  EncodedTexts,
  Embedder,
  MemoryMeta,
  ViewLexicon,
} from './types.js';
export { MemoryStore } from './store.js';
export type { SearchRequest, StoreOptions, StoredMemory } from './store.js';
export type { BankStats, StoreStats } from './stats.js';
export type { CommitStats } from './log/group-commit.js';
export { Snapshot } from './log/snapshot.js';
export { PieceTokens, contiguousTokens, viewTokens } from './view-tokens.js';
export { openEmbedder } from './encode/embedder.js';
export { checkQueryModel } from './encode/query-model.js';
export type { EmbedderOptions, ModelChoice } from './encode/embedder.js';
export { DEFAULT_ENCODE_BATCH, openEmbedderPool } from './encode/embedder-pool.js';
export type {
  EmbedderPool,
  EmbedderPoolOptions,
  EmbedderPoolStats,
} from './encode/embedder-pool.js';
export {
  BANK_NAME,
  DEFAULT_MAX_TEXT_BYTES,
  MAX_META_BYTES,
  MemoryInputError,
  bankNameSchema,
} from './input.js';
export type { MemoryInput } from './input.js';
export { StoreLockedError, LOCK_FILE } from './log/lock.js';
export { MANIFEST_FILE, manifestSchema } from './log/manifest.js';
export type { Manifest } from './log/manifest.js';
export { DEFAULT_STORE_CODEC, storeCodecSchema, storeWindowSchema } from './log/settings.js';
export type { StoreCodec, StoreSettings, StoreWindow } from './log/settings.js';
export type { CompactionReport } from './log/compaction.js';
export { encodedTexts } from './encode/encode.js';
export {
  SEARCH_SYSTEMS,
  parseSearchOptions,
  searchOptionsSchema,
  searchView,
  searchViewWithInterventions,
} from './search/search.js';
export { interventionsOptionSchema, searchInterventions } from './search/search-interventions.js';
export type {
  InterventionRemoval,
  InterventionToken,
  InterventionsOption,
  SearchInterventions,
} from './search/search-interventions.js';
export type {
  BestsIndex,
  EvidenceToken,
  ResolvedSearchOptions,
  SearchEvidence,
  SearchOptions,
  SearchResult,
  SearchSystem,
  TokenIndexFactory,
} from './search/search.js';
export {
  SHIPPED_CALIBRATIONS,
  calibrationFor,
  parseRelevanceCalibration,
  relevance,
  relevanceCalibrationSchema,
  shippedCalibrations,
} from './search/relevance.js';
export type { RelevanceCalibration } from './search/relevance.js';
export { HYBRID_DEFAULT_WEIGHTS } from './search/search-hybrid.js';
export type { Bm25Evidence } from './search/search-hybrid.js';
export { BankLexicon } from './lexical/bank-lexicon.js';
export type { Bm25TermEvidence } from './lexical/bank-lexicon.js';
export { StoreLexicon, lexiconOfView } from './lexical/store-lexicon.js';
export type { LexicalStats } from './lexical/store-lexicon.js';
export { renderEvidence } from './search/render.js';
export {
  bm25EvidenceJsonSchema,
  evidenceJsonSchema,
  evidenceTokenJsonSchema,
  interventionsFromJson,
  interventionsJsonSchema,
  interventionsToJson,
  searchResponseJsonSchema,
  searchResultFromJson,
  searchResultJsonSchema,
  searchResultToJson,
} from './search/wire.js';
export type {
  EvidenceJson,
  InterventionsJson,
  SearchResponseJson,
  SearchResultJson,
} from './search/wire.js';
export { DEFAULT_MAX_RESIDENT_TOKENS, residentIndexFactory } from './index/resident-index.js';
export { residentKernelPool } from './index/kernel-pool.js';
export type { ResidentKernel, ResidentKernelPool } from './index/kernel-pool.js';
export type { ResidentIndexFactory, ResidentIndexOptions } from './index/resident-index.js';
export { storeIndexFactory, storeIndexOptionsSchema } from './index/store-index.js';
export type {
  GraphStats,
  IvfStats,
  ResolvedStoreIndexOptions,
  StoreIndexFactory,
  StoreIndexOptions,
} from './index/store-index.js';
export { storeIvfOptionsSchema } from './index/ivf/ivf-options.js';
export type { StoreIvfOptions } from './index/ivf/ivf-options.js';
export { ivfCentroids } from './index/ivf/ivf-bank.js';
export type { IndexLink, IndexedStore, StoreChange } from './index/graph/keeper.js';
export { BankGraph } from './index/graph/bank-graph.js';
export type {
  GraphEntry,
  GraphParams,
  GraphSnapshot,
  VersionRows,
} from './index/graph/bank-graph.js';
export { graphWorkerHost, localHnswMaker } from './index/graph/graph-hnsw.js';
export type { GraphHnsw, GraphHnswMaker } from './index/graph/graph-hnsw.js';
export { GRAPH_MARGIN, GraphTokenIndex } from './index/graph/graph-search.js';
export type { GraphSearchLimits, GraphSearchOutcome } from './index/graph/graph-search.js';
export { GRAPHS_DIR, graphMetaSchema } from './index/graph/graph-files.js';
export { IVF_DIR, ivfMetaSchema } from './index/ivf/ivf-files.js';
export type { GraphMeta } from './index/graph/graph-files.js';
export { milvusIndexFactory } from './index/milvus-index.js';
export type { MilvusFactoryOptions, MilvusIndexFactory } from './index/milvus-index.js';
export {
  directoryBytes,
  manifestEmbedder,
  openForMaintenance,
  requireManifest,
} from './tools/open.js';
export type { MaintenanceStore } from './tools/open.js';
export { storeReport } from './tools/stats.js';
export type { BankReport, StoreReport } from './tools/stats.js';
export { compactStore } from './tools/compact.js';
export type { CompactReport } from './tools/compact.js';
export { verifyStore } from './tools/verify.js';
export type { VerifyOptions, VerifyProblem, VerifyReport, WalReport } from './tools/verify.js';
export { EXPORT_FILES, EXPORT_FORMAT, exportStore } from './tools/export.js';
export type { ExportOptions, ExportReport } from './tools/export.js';
export { IpcFileOut } from './tools/ipc-out.js';
