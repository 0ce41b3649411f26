import type { SearchResult, SearchSystem } from '@bfe/store';

/** One search as a retriever asks it: a bank, a query text, and the ranking settings. */
export interface SearchQuery {
  readonly bank: string;
  readonly query: string;
  /** Results returned; the store's default (10) when absent. */
  readonly k?: number;
  /** One of the store's systems (`@bfe/store`'s `SEARCH_SYSTEMS`); `sparse-fusion` when absent. */
  readonly system?: SearchSystem;
}

/**
 * Where a retriever's memories come from: an open store in this process, or `bfe serve` over
 * HTTP. Both return the store's {@link SearchResult}s, best first (rank 1), with evidence.
 */
export interface SearchBackend {
  search(query: SearchQuery): Promise<readonly SearchResult[]>;
}
