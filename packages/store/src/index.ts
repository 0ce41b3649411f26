export type { BankView, EncodedTexts, Embedder, MemoryMeta } from './types.js';
export { encodedTexts } from './encode.js';
export { SEARCH_SYSTEMS, parseSearchOptions, searchOptionsSchema, searchView } from './search.js';
export type {
  EvidenceToken,
  ResolvedSearchOptions,
  SearchEvidence,
  SearchOptions,
  SearchResult,
  SearchSystem,
  TokenIndexFactory,
} from './search.js';
export { renderEvidence } from './render.js';
