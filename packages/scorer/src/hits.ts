import type { TokenHits } from '@bfe/index';

/**
 * One query's token proposals exactly as the scorer aggregated them: row `i` (query token `i`)
 * holds `k` hits, descending by their float64 similarity, ties in the index's order.
 */
export interface QueryHits {
  readonly k: number;
  /** `[n_q × k]` similarities (float64). */
  readonly values: Float64Array;
  /** `[n_q × k]` memory row of each hit. */
  readonly memories: Int32Array;
  /** `[n_q × k]` bank token index of each hit (a row of the memory token store). */
  readonly tokens: Int32Array;
  /**
   * `[n_q × candidates]` each candidate's best token similarity (float32, `-Infinity` for a
   * memory without tokens), candidates in {@link QueryScores.candidates} order; present when
   * MaxSim was computed.
   */
  readonly best?: Float32Array;
  /**
   * Each row is the exact float64 top-k over the candidates' tokens, in the same dot products
   * as the token store's `dots` (the exact fp32 backend): a memory's first hit in a row is then
   * its best token of all (the tie order keeps a memory's tokens in order).
   */
  readonly exact?: boolean;
}

/** A copy of one query's rows of the hits (and its bests, in candidate order). */
export function keepHits(
  hits: TokenHits,
  rowStart: number,
  nq: number,
  m: number,
  givenOf: Int32Array,
  exact = false,
): QueryHits {
  const k = hits.k;
  const from = rowStart * k;
  const to = (rowStart + nq) * k;
  let best: Float32Array | undefined;
  if (hits.best !== undefined) {
    best = new Float32Array(nq * m);
    for (let i = 0; i < nq; i++) {
      const base = (rowStart + i) * m;
      for (let s = 0; s < m; s++) best[i * m + givenOf[s]!] = hits.best[base + s]!;
    }
  }
  return {
    k,
    values: hits.values.slice(from, to),
    memories: hits.memories.slice(from, to),
    tokens: hits.tokens.slice(from, to),
    ...(best === undefined ? {} : { best }),
    exact,
  };
}
