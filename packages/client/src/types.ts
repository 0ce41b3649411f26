import type { SearchResult, SearchSystem } from '@bfe/store';

/** One search as a retriever asks it: a bank, a query text, and the ranking settings. */
export interface SearchQuery {
  readonly bank: string;
  readonly query: string;
  /** Results returned; the store's default (10) when absent. */
  readonly k?: number;
  /** One of the store's systems (`@bfe/store`'s `SEARCH_SYSTEMS`); `sparse-fusion` when absent. */
  readonly system?: SearchSystem;
  /** `hybrid`'s branch weights (≥ 0, scaled to sum 1); the store's thirds when absent. */
  readonly weights?: HybridWeights;
  /**
   * Only results whose calibrated `relevance` (`@bfe/store`'s `relevance.ts`) is at least this,
   * up to `k`: none when nothing in the bank looks relevant.
   */
  readonly minScore?: number;
}

/** `hybrid`'s weights of the pooled, sparse and BM25 branches (METHOD.md §8). */
export interface HybridWeights {
  readonly pooled: number;
  readonly sparse: number;
  readonly bm25: number;
}

/**
 * Where a retriever's memories come from: an open store in this process, or `bfe serve` over
 * HTTP. Both return the store's {@link SearchResult}s, best first (rank 1), with evidence.
 */
export interface SearchBackend {
  search(query: SearchQuery): Promise<readonly SearchResult[]>;
}
