import { z } from 'zod';
import { DataError } from '@bfe/core';
import type { TieOrder } from '@bfe/index';
import {
  namedTokenRemovals,
  rankCandidates,
  tokenInterventions,
  topExcessRemovals,
  type InterventionMatching,
  type QueryScores,
} from '@bfe/scorer';
import type { BankView, EncodedTexts } from '../types.js';

/**
 * A search's token interventions (the paper's Appendix D): for one memory (default: the search's
 * top result), each query token's excess over the floor and the memory's rank after removing
 * the top 1…`removeTop` excess contributions and each named token.
 */
export const interventionsOptionSchema = z.strictObject({
  /** The memory to analyse; default: the top-ranked one. */
  memory: z.string().min(1).optional(),
  /** Remove the top 1…n excess contributions, n ≤ 6 (the paper's six). */
  removeTop: z.number().int().min(1).max(6).default(6),
  /** Named removals: a token's text (every occurrence) or `#i` (the i-th content token). */
  tokens: z.array(z.string().min(1)).max(32).default([]),
});

/** {@link interventionsOptionSchema} as a caller writes it. */
export type InterventionsOption = z.input<typeof interventionsOptionSchema>;

/** One query token's excess over the floor for the analysed memory, with vocabulary pieces. */
export interface InterventionToken {
  readonly queryToken: number;
  readonly queryTokenId: number;
  readonly queryPiece: string | undefined;
  /** The matched memory token's vocabulary id; -1 when floored. */
  readonly memoryTokenId: number;
  readonly memoryPiece: string | undefined;
  /** NaN when floored. */
  readonly similarity: number;
  readonly floor: number;
  readonly floored: boolean;
  /** `(max(t_i, best_i(m)) − t_i)/n_q`. */
  readonly excess: number;
}

/** The memory's rank after one removal. */
export interface InterventionRemoval {
  /** `top n`, or the named token. */
  readonly label: string;
  /** Query token positions removed (they get the floor). */
  readonly removed: readonly number[];
  readonly sparse: number;
  readonly score: number;
  readonly rank: number;
}

/** A search's interventions on one memory. */
export interface SearchInterventions {
  readonly id: string;
  /** Its rank, score and token-level score without intervention. */
  readonly rank: number;
  readonly score: number;
  readonly sparse: number;
  readonly tokens: readonly InterventionToken[];
  readonly removals: readonly InterventionRemoval[];
}

/** What {@link searchInterventions} reads from the search that scored the query. */
export interface InterventionsInput {
  readonly scores: QueryScores;
  readonly matching: InterventionMatching;
  readonly ties: TieOrder;
  readonly view: BankView;
  readonly query: EncodedTexts;
}

/** The system's α and the search's ranking (candidate positions, best first). */
export interface InterventionsRanking {
  readonly alpha: number;
  readonly order: Int32Array;
}

/**
 * Runs {@link interventionsOptionSchema}'s request on a scored search (`@bfe/scorer`'s
 * `tokenInterventions`: only the memory's `s_sparse` changes, μ and σ stay the original ones,
 * ties as the search breaks them).
 *
 * @throws DataError for a memory the bank does not hold.
 * @throws ConfigError for a named token the query does not have.
 */
export function searchInterventions(
  input: InterventionsInput,
  ranking: InterventionsRanking,
  options: {
    readonly interventions?: z.output<typeof interventionsOptionSchema> | undefined;
    readonly tokenText?: ((id: number) => string) | undefined;
  },
): SearchInterventions {
  const { scores, view, query } = input;
  const { tokenText } = options;
  const option = options.interventions ?? interventionsOptionSchema.parse({});
  let g = ranking.order[0]!;
  if (option.memory !== undefined) {
    g = Array.from(scores.candidates).findIndex((row) => view.ids[row] === option.memory);
    if (g < 0) throw new DataError(`interventions: the bank holds no memory '${option.memory}'`);
  }
  const piece = (id: number): string | undefined =>
    id < 0 || tokenText === undefined ? undefined : tokenText(id);
  const q0 = query.tokenOffsets[0]!;
  const nq = query.tokenOffsets[1]! - q0;
  const queryIds = Array.from({ length: nq }, (_, i) => query.tokenIds[q0 + i]!);
  const pieces = queryIds.map((id) => piece(id) ?? `[${id}]`);
  const spec = { scores, matching: input.matching, alpha: ranking.alpha, ties: input.ties };
  const first = tokenInterventions(spec, g, []);
  const ns = Array.from({ length: option.removeTop }, (_, i) => i + 1);
  const named = namedTokenRemovals(option.tokens, pieces);
  const r = tokenInterventions(spec, g, [
    ...topExcessRemovals(first.byExcess, ns),
    ...named.map((n) => n.tokens),
  ]);
  const labels = [...ns.map((n) => `top ${n}`), ...named.map((n) => n.label)];
  // The bank token of a match is a row of the view's token table: its vocabulary id is there.
  return {
    id: view.ids[scores.candidates[g]!]!,
    rank: r.rank,
    score: r.score,
    sparse: r.sparse,
    tokens: r.tokens.map((t, i) => {
      const memoryTokenId = t.bankToken < 0 ? -1 : view.tokenIds[t.bankToken]!;
      return {
        queryToken: t.queryToken,
        queryTokenId: queryIds[i]!,
        queryPiece: piece(queryIds[i]!),
        memoryTokenId,
        memoryPiece: piece(memoryTokenId),
        similarity: t.similarity,
        floor: t.floor,
        floored: t.floored,
        excess: t.excess,
      };
    }),
    removals: r.outcomes.map((o, j) => ({ label: labels[j]!, ...o })),
  };
}

/**
 * Candidate `g`'s place in `rankCandidates(candidates, scores, ties)` without sorting the bank:
 * one pass counting the candidates that rank above it (a higher score, or an equal one earlier
 * in the tie order).
 */
export function candidateRank(
  g: number,
  candidates: Int32Array,
  scores: Float64Array,
  ties: TieOrder,
): number {
  const rank = ties.rank;
  const mine = scores[g]!;
  const mineTie = rank[candidates[g]!]!;
  const n = candidates.length;
  let above = 0;
  for (let i = 0; i < n; i++) {
    const p = scores[i]!;
    if (p > mine || (p === mine && rank[candidates[i]!]! < mineTie)) above++;
  }
  return above + 1;
}

/** Up to this many candidates, {@link candidateRanks} counts per candidate; above, it ranks once. */
const RANK_BY_PASS = 16;

/**
 * {@link candidateRank} of each of `gs`: a counting pass each for a few (O(n) each), else one
 * `rankCandidates` of every candidate (O(n log n)) read back — a search for a whole bank's
 * ranking explains each of its results' pooled rank without a pass per result.
 */
export function candidateRanks(
  gs: readonly number[],
  candidates: Int32Array,
  scores: Float64Array,
  ties: TieOrder,
): number[] {
  if (gs.length <= RANK_BY_PASS) return gs.map((g) => candidateRank(g, candidates, scores, ties));
  const { order } = rankCandidates(candidates, scores, ties);
  const place = new Int32Array(order.length);
  for (let i = 0; i < order.length; i++) place[order[i]!] = i + 1;
  return gs.map((g) => place[g]!);
}
