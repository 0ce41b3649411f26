// PLACEHOLDER — provided by the explain branch (issue 14). This file holds only the signature the
// store calls; the lead replaces it with the real `searchView` (scorer, index, token evidence)
// at the merge. Nothing in the store's tests goes through it.
import type { BankView, EncodedTexts } from './types.js';

/** Search options (the explain branch defines the real ones). */
export interface SearchOptions {
  readonly k?: number;
  readonly system?: string;
  readonly alpha?: number;
}

/** The sparse side of scoring (the explain branch defines the real one). */
export interface SparseScorer {
  readonly name: string;
}

/** One ranked memory (the explain branch defines the real one, with its evidence). */
export interface SearchResult {
  readonly id: string;
  readonly score: number;
}

/** Ranks a bank's memories for one encoded query. Provided by the explain branch. */
export function searchView(
  view: BankView,
  query: EncodedTexts,
  options: SearchOptions,
  scorer: SparseScorer,
): Promise<SearchResult[]> {
  void view;
  void query;
  void options;
  void scorer;
  return Promise.reject(new Error('searchView: provided by the explain branch'));
}
