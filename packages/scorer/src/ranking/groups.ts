import { ArtifactCorruptError } from '@bfe/core';
import { tieOrder } from '@bfe/index';

/**
 * A query as ranking sees it: its id, its candidates — whole banks (`candidateBankIds`: a
 * LoCoMo conversation, a COVID-QA article) or explicit memory ids (`candidateIds`: a
 * LongMemEval haystack) — and its text, read by BM25 only. `@bfe/core`'s `Query` fits.
 */
export interface RankQuery {
  readonly id: string;
  /** Read by BM25 only. */
  readonly text?: string | undefined;
  /** Candidate memories by id; used when `candidateBankIds` is absent. */
  readonly candidateIds?: readonly string[] | undefined;
  /** Candidate memories: every memory row of these banks. */
  readonly candidateBankIds?: readonly string[] | undefined;
}

/**
 * The memory rows' ids and bank ids, aligned with the rows of the memory token bank
 * (`@bfe/encoder`'s `BankSide` fits).
 */
export interface MemoryCatalog {
  readonly ids: readonly string[];
  /** Each row's bank; needed only by queries that name candidate banks. */
  readonly bankIds?: readonly string[] | undefined;
}

/** One set of queries that rank the same candidate memories (LoCoMo: one conversation). */
export interface CandidateGroup<Q extends RankQuery = RankQuery> {
  /**
   * Memory rows in the bank's tie order (`tieOrder`: a seeded hash of each memory id), never in
   * bank order: every sum over the candidates, and so every score, is the same whatever order
   * the bank's rows are in.
   */
  readonly rows: Int32Array;
  /** Their ids, e.g. for an evaluator's candidate filter. */
  readonly ids: ReadonlySet<string>;
  /** The group's queries, in the order they were given. */
  readonly queries: Q[];
}

/**
 * Resolves every query's candidates to memory rows and groups queries by identical candidate
 * sets, each group's rows in the bank's tie order. Groups come in the order of their first query, queries within a group in the order
 * given, so rankings come back in the caller's query order, group by group.
 *
 * @throws ArtifactCorruptError when a candidate memory id is not in `memories`, when a query
 *   resolves to no memory at all, or when a query names candidate banks but `memories` has no
 *   bank ids.
 * @example
 * const groups = groupByCandidates(
 *   { ids: ['a:1', 'a:2', 'b:1'], bankIds: ['a', 'a', 'b'] },
 *   [{ id: 'q1', candidateBankIds: ['a'] }, { id: 'q2', candidateIds: ['a:2', 'a:1'] }],
 * );
 * groups[0].rows;    // Int32Array [0, 1] or [1, 0]: by the tie keys of 'a:1' and 'a:2'
 * groups[0].queries; // [q1, q2]: the same candidates
 */
export function groupByCandidates<Q extends RankQuery>(
  memories: MemoryCatalog,
  queries: readonly Q[],
): CandidateGroup<Q>[] {
  const memoryRow = new Map<string, number>();
  memories.ids.forEach((id, row) => memoryRow.set(id, row));
  let rowsOfBank: Map<string, number[]> | undefined;
  const bankRows = (q: Q, bank: string): readonly number[] => {
    if (rowsOfBank === undefined) {
      const bankIds = memories.bankIds;
      if (bankIds === undefined) {
        throw new ArtifactCorruptError(
          `Query '${q.id}' names candidate banks, but the memories have no bank ids.`,
        );
      }
      rowsOfBank = new Map();
      for (let row = 0; row < bankIds.length; row++) {
        const b = bankIds[row] as string;
        const rows = rowsOfBank.get(b);
        if (rows === undefined) rowsOfBank.set(b, [row]);
        else rows.push(row);
      }
    }
    return rowsOfBank.get(bank) ?? [];
  };

  const tieRank = tieOrder(memories.ids).rank;
  const groups = new Map<string, { rows: Int32Array; queries: Q[] }>();
  for (const q of queries) {
    const rows: number[] = [];
    if (q.candidateBankIds !== undefined) {
      for (const b of q.candidateBankIds) rows.push(...bankRows(q, b));
    } else {
      for (const id of q.candidateIds ?? []) {
        const row = memoryRow.get(id);
        if (row === undefined) {
          throw new ArtifactCorruptError(
            `Candidate memory '${id}' of query '${q.id}' is not in the bank.`,
          );
        }
        rows.push(row);
      }
    }
    const sorted = Int32Array.from(new Set(rows)).sort();
    if (sorted.length === 0) {
      throw new ArtifactCorruptError(`Query '${q.id}' has no candidate memory in the bank.`);
    }
    const key = sorted.join(',');
    const group = groups.get(key);
    if (group === undefined) {
      const ordered = sorted.slice().sort((a, b) => tieRank[a]! - tieRank[b]!);
      groups.set(key, { rows: ordered, queries: [q] });
    } else group.queries.push(q);
  }
  return [...groups.values()].map((g) => ({
    rows: g.rows,
    ids: new Set(Array.from(g.rows, (r) => memories.ids[r] as string)),
    queries: g.queries,
  }));
}
