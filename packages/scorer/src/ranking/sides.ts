import { ArtifactCorruptError } from '@bfe/core';
import { rankCandidates } from '../fusion.js';
import type { TieOrder, TieTally } from '@bfe/index';
import type { TokenBank } from '../validate.js';
import type { CandidateGroup, RankQuery } from './groups.js';

/** One side of a bank as ranking reads it: a {@link TokenBank} whose rows have ids. */
export interface RankingSide extends TokenBank {
  /** Row ids: memory ids name the rankings, query ids find each query's row. */
  readonly ids: readonly string[];
}

/** Query id → ranked memory ids, best first, cut to the top; queries in group order. */
export type Rankings = Map<string, string[]>;

/**
 * A function giving each group's query rows in `queries`, in the group's query order.
 *
 * @throws ArtifactCorruptError (from the returned function) when a query id is not a row.
 */
export function queryRowsOf(
  queries: RankingSide,
): (group: CandidateGroup<RankQuery>) => Int32Array {
  const queryRow = new Map(queries.ids.map((id, row) => [id, row] as const));
  return (group) =>
    Int32Array.from(group.queries, (q) => {
      const row = queryRow.get(q.id);
      if (row === undefined) throw new ArtifactCorruptError(`Query '${q.id}' is not in the bank.`);
      return row;
    });
}

/**
 * Ranked memory ids, best first (ties: the bank's seeded tie order, see `rankCandidates`), cut
 * to `top`; `tally`, when given, counts the ranking's tied positions within the top 10.
 *
 * @example
 * rankIds(Int32Array.of(0, 2), Float64Array.of(0.1, 0.9), tieOrder(['a', 'b', 'c']), 1); // ['c']
 */
export function rankIds(
  candidates: Int32Array,
  scores: Float64Array,
  ties: TieOrder,
  top: number,
  tally?: TieTally,
): string[] {
  const ranked = rankCandidates(candidates, scores, ties);
  tally?.add(ranked.scores);
  return ranked.ids.slice(0, top);
}

/** @throws Error unless `top` is a positive integer (a programmer error). */
export function checkTop(top: number, caller: string): void {
  if (!Number.isInteger(top) || top < 1) {
    throw new Error(`${caller}: top must be a positive integer, got ${top}`);
  }
}
