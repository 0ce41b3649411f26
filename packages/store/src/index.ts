export type { BankView, EncodedTexts, Embedder, MemoryMeta } from './types.js';
export { MemoryStore } from './store.js';
export type { SearchRequest, StoreOptions, StoredMemory } from './store.js';
export type { BankStats, StoreStats } from './stats.js';
export { Snapshot } from './snapshot.js';
export { openEmbedder } from './embedder.js';
export type { EmbedderOptions, ModelChoice } from './embedder.js';
export { openEmbedderPool } from './embedder-pool.js';
export type { EmbedderPool, EmbedderPoolOptions, EmbedderPoolStats } from './embedder-pool.js';
export {
  BANK_NAME,
  DEFAULT_MAX_TEXT_BYTES,
  MAX_META_BYTES,
  MemoryInputError,
  bankNameSchema,
} from './input.js';
export type { MemoryInput } from './input.js';
export { StoreLockedError, LOCK_FILE } from './lock.js';
export { MANIFEST_FILE, manifestSchema } from './manifest.js';
export type { Manifest } from './manifest.js';
export type { CompactionReport } from './compaction.js';
export { encodedTexts } from './encode.js';
export {
  SEARCH_SYSTEMS,
  parseSearchOptions,
  searchOptionsSchema,
  searchView,
  searchViewWithInterventions,
} from './search.js';
export { interventionsOptionSchema, searchInterventions } from './search-interventions.js';
export type {
  InterventionRemoval,
  InterventionToken,
  InterventionsOption,
  SearchInterventions,
} from './search-interventions.js';
export type {
  BestsIndex,
  EvidenceToken,
  ResolvedSearchOptions,
  SearchEvidence,
  SearchOptions,
  SearchResult,
  SearchSystem,
  TokenIndexFactory,
} from './search.js';
export { renderEvidence } from './render.js';
export { DEFAULT_MAX_RESIDENT_TOKENS, residentIndexFactory } from './resident-index.js';
export { residentKernelPool } from './kernel-pool.js';
export type { ResidentKernel, ResidentKernelPool } from './kernel-pool.js';
export type { ResidentIndexFactory, ResidentIndexOptions } from './resident-index.js';
export { storeIndexFactory, storeIndexOptionsSchema } from './store-index.js';
export type {
  GraphStats,
  ResolvedStoreIndexOptions,
  StoreIndexFactory,
  StoreIndexOptions,
} from './store-index.js';
export type { IndexLink, IndexedStore, StoreChange } from './graph/keeper.js';
export { BankGraph } from './graph/bank-graph.js';
export type { GraphEntry, GraphParams, VersionRows } from './graph/bank-graph.js';
export { GRAPH_MARGIN, GraphTokenIndex } from './graph/graph-search.js';
export type { GraphSearchLimits, GraphSearchOutcome } from './graph/graph-search.js';
export { GRAPHS_DIR, graphMetaSchema } from './graph/graph-files.js';
export type { GraphMeta } from './graph/graph-files.js';
export { milvusIndexFactory } from './milvus-index.js';
export type { MilvusIndexFactory } from './milvus-index.js';
