import { TieTally, dot64, tieOrder, type TieCounts } from '@bfe/index';
import type { CandidateGroup, RankQuery } from './groups.js';
import { checkTop, queryRowsOf, rankIds, type RankingSide, type Rankings } from './sides.js';

/**
 * The name of the `chunked-pooled` system at window size `size` (the paper's Appendix D
 * control): every memory cut into consecutive, non-overlapping, independent windows of `size`
 * tokens, each pooled natively, the memory scored by its best window.
 */
export type ChunkedPooledSystem = `chunked-pooled@${number}`;

/** One line of what the `chunked-pooled@N` systems compute, for tables and `results.json`. */
export const CHUNKED_POOLED_SUMMARY =
  'max over a memory’s independent, non-overlapping windows of N tokens (specials included) of ' +
  'p_q·p_w, each window pooled natively by the frozen encoder; a memory of ≤ N tokens is its ' +
  'own pooled vector (paper Appendix D control)';

/**
 * `chunked-pooled@<size>`.
 * @example chunkedPooledName(64) // 'chunked-pooled@64'
 */
export function chunkedPooledName(size: number): ChunkedPooledSystem {
  if (!Number.isInteger(size) || size < 1) {
    throw new Error(`chunkedPooledName: size must be a positive integer, got ${size}`);
  }
  return `chunked-pooled@${size}`;
}

/**
 * The pooled vectors of every memory's windows, by memory row: row `r`'s windows are the
 * vector rows `[offsets[r], offsets[r + 1])` of `vectors` (`[windows * dim]`, float32). Every
 * row has at least one window.
 */
export interface WindowPools {
  readonly dim: number;
  /** `[rows + 1]`, non-decreasing, `offsets[0] = 0`. */
  readonly offsets: Int32Array;
  readonly vectors: Float32Array;
}

/**
 * `max_w p_q·p_w` over each candidate's windows, in float64 (`dot64`, the pooled system's own
 * inner product, so a memory of one window scores exactly its pooled score), written into
 * `out` in candidate order.
 *
 * @throws Error when a candidate row has no window (a programmer error: every memory has one).
 * @example
 * // memory row 0: windows [1, 0] and [0, 1]; query [0.6, 0.8] → 0.8
 * chunkedPooledScoresInto(out, Float32Array.of(0.6, 0.8), 0, pools, Int32Array.of(0));
 */
export function chunkedPooledScoresInto(
  out: Float64Array,
  queryPooled: Float32Array,
  queryRow: number,
  pools: WindowPools,
  candidates: Int32Array,
): void {
  const { dim, offsets, vectors } = pools;
  const at = queryRow * dim;
  const n = candidates.length;
  for (let g = 0; g < n; g++) {
    const row = candidates[g]!;
    const from = offsets[row]!;
    const to = offsets[row + 1]!;
    if (!(to > from)) throw new Error(`chunkedPooledScores: memory row ${row} has no window`);
    let best = -Infinity;
    for (let w = from; w < to; w++) {
      const s = dot64(queryPooled, at, vectors, w * dim, dim);
      if (s > best) best = s;
    }
    out[g] = best;
  }
}

/** Inputs of {@link rankChunkedPooled}. */
export interface RankChunkedPooledInput<Q extends RankQuery = RankQuery> {
  /** The memory rows' ids (the tie order and the rankings' names). */
  readonly memories: { readonly ids: readonly string[] };
  /** The query side: its pooled vectors are the ordinary pooled queries. */
  readonly queries: RankingSide;
  readonly groups: readonly CandidateGroup<Q>[];
  /** Window pools aligned with `memories`' rows. */
  readonly pools: WindowPools;
  readonly top: number;
}

/**
 * Ranks every group's queries by {@link chunkedPooledScoresInto} on their own candidates, ties
 * broken by the seeded hash order of the memory ids (as every other system), cut to `top`;
 * tied positions within the top 10 are counted. Reads no labels.
 *
 * @throws ArtifactCorruptError when a group's query is not a row of `queries`.
 * @example
 * const { rankings } = rankChunkedPooled({ memories, queries, groups, pools, top: 50 });
 * rankings.get('q1'); // ['m7', 'm2', …]
 */
export function rankChunkedPooled<Q extends RankQuery>(
  input: RankChunkedPooledInput<Q>,
): { rankings: Rankings; ties: TieCounts } {
  const { memories, queries, groups, pools, top } = input;
  checkTop(top, 'rankChunkedPooled');
  if (pools.offsets.length !== memories.ids.length + 1) {
    throw new Error(
      `rankChunkedPooled: ${pools.offsets.length - 1} pooled rows for ${memories.ids.length} memories`,
    );
  }
  if (pools.dim !== queries.dim) {
    throw new Error(`rankChunkedPooled: windows are ${pools.dim}-d, queries ${queries.dim}-d`);
  }
  const ties = tieOrder(memories.ids);
  const tally = new TieTally();
  const rowsOf = queryRowsOf(queries);
  const rankings: Rankings = new Map();
  for (const group of groups) {
    const rows = rowsOf(group);
    const scores = new Float64Array(group.rows.length);
    for (let i = 0; i < rows.length; i++) {
      chunkedPooledScoresInto(scores, queries.pooled, rows[i]!, pools, group.rows);
      rankings.set(group.queries[i]!.id, rankIds(group.rows, scores, ties, top, tally));
    }
  }
  return { rankings, ties: tally.counts() };
}
