import { ConfigError } from '@bfe/core';
import type { TieOrder } from '@bfe/index';
import { standardization } from './fusion.js';
import type { QueryScores } from './scorer.js';

/**
 * The token-level score an intervention edits: the sparse score with the tail floor (`'tail'`:
 * `sparse-fusion`, `no-fusion`, `adapted`) or with `t_i = 0` (`'zero'`: `zero-floor`,
 * `adapted-zero-floor`).
 */
export type InterventionMatching = 'tail' | 'zero';

/** What {@link tokenInterventions} needs: one scored query and how its system fuses. */
export interface InterventionInput {
  /**
   * The scorer's result for the query, computed with `keepHits: true` (for an adapted system:
   * the pass over the adapter's query tokens).
   */
  readonly scores: QueryScores;
  readonly matching: InterventionMatching;
  /** The system's α: 0.5 for `sparse-fusion` by default, 0 for `no-fusion`. */
  readonly alpha: number;
  /** The bank's tie order (`tieOrder(memories.ids)`), as the system's ranking uses it. */
  readonly ties: TieOrder;
}

/** One query token's part in a memory's token-level score above the floor (Appendix D). */
export interface TokenExcess {
  /** Index of the query content token. */
  readonly queryToken: number;
  /** The memory's best similarity among the token's top-k proposals; NaN when floored. */
  readonly similarity: number;
  /** That proposal's token (a row of the memory token store, for its text); -1 when floored. */
  readonly bankToken: number;
  /** The floor the score used: `t_i` (`'tail'`) or 0 (`'zero'`). */
  readonly floor: number;
  /** No proposal of the memory reached above the floor: the memory got `t_i`, excess 0. */
  readonly floored: boolean;
  /** `(max(t_i, best_i(m)) − t_i) / n_q`: what removing this token takes from `s_sparse`. */
  readonly excess: number;
}

/** The memory's score and rank after one removal of query tokens' excess. */
export interface InterventionOutcome {
  /** The query tokens whose excess was removed (they get the floor), ascending. */
  readonly removed: readonly number[];
  /** The memory's token-level score after the removal. */
  readonly sparse: number;
  /** Its fused score after the removal (μ and σ of the original scores held fixed). */
  readonly score: number;
  /** 1 + the candidates that outrank it (higher score, or equal and earlier in the tie order). */
  readonly rank: number;
}

/** {@link tokenInterventions}' result for one memory of one query. */
export interface CandidateInterventions {
  /** Position of the memory in `QueryScores.candidates`. */
  readonly candidate: number;
  readonly memoryRow: number;
  readonly nQueryTokens: number;
  /** The memory's token-level score (the scorer's own value). */
  readonly sparse: number;
  /** Its fused score without intervention. */
  readonly score: number;
  /** Its fused rank without intervention. */
  readonly rank: number;
  /** Per query token, in order; empty for a query without content tokens. */
  readonly tokens: readonly TokenExcess[];
  /** The query tokens by excess, largest first (equal excess: lower index first). */
  readonly byExcess: readonly number[];
  /** One outcome per requested removal, in the order asked. */
  readonly outcomes: readonly InterventionOutcome[];
}

/**
 * The paper's token interventions (Appendix D) for one memory of one scored query: each query
 * token's excess over the floor `(max(t_i, best_i(m)) − t_i)/n_q` (METHOD.md §2), and the
 * memory's fused rank after removing the excess of given sets of query tokens. A removal edits
 * score contributions, not text: only this memory's token-level score changes (the removed
 * tokens get the floor), the standardisation keeps the original candidates' μ and σ
 * (METHOD.md §3), every other candidate keeps its fused score, and rank = 1 + the candidates
 * that outrank it, ties broken by the system's tie order (METHOD.md §8). The memory's score is
 * recomputed in the scorer's own float64 order, so an empty removal gives back its exact score
 * and rank. Reads no labels: which memory to analyse is the caller's choice.
 *
 * @throws Error when the scores were computed without `keepHits`, the candidate or a removed
 *   token is out of range, or α is outside [0, 1] (programmer errors).
 * @example
 * const [scores] = await scorer.score(request, { k: 64, alpha: 0.5, keepHits: true });
 * const ties = tieOrder(memories.ids);
 * const top = tokenInterventions({ scores, matching: 'tail', alpha: 0.5, ties }, 3, [[]]);
 * top.tokens[2]; // { queryToken: 2, similarity: 0.81, floor: 0.42, floored: false, excess: 0.049 }
 * const removals = [1, 2, 3].map((n) => top.byExcess.slice(0, n));
 * tokenInterventions({ scores, matching: 'tail', alpha: 0.5, ties }, 3, removals).outcomes;
 * // [{ removed: [2], sparse: 0.51, score: 1.2, rank: 4 }, …]
 */
export function tokenInterventions(
  input: InterventionInput,
  candidate: number,
  removals: readonly (readonly number[])[],
): CandidateInterventions {
  const { scores, matching, alpha, ties } = input;
  const m = scores.candidates.length;
  if (!(Number.isInteger(candidate) && candidate >= 0 && candidate < m)) {
    throw new Error(`tokenInterventions: candidate position ${candidate} is not in 0..${m - 1}`);
  }
  if (!(alpha >= 0 && alpha <= 1)) {
    throw new Error(`tokenInterventions: alpha must be in [0, 1], got ${alpha}`);
  }
  const nq = scores.pooledOnly ? 0 : scores.nQueryTokens;
  const tokenLevel = matching === 'tail' ? scores.sparse : scores.sparseZeroFloor;
  const pooled = scores.systems.pooled;
  // A query without content tokens ranks by the raw pooled cosine (every system falls back).
  const fused = new Float64Array(m);
  const zp = standardization(pooled);
  const zs = standardization(tokenLevel);
  const fusedOf = (g: number, sparse: number): number =>
    nq === 0
      ? pooled[g]!
      : alpha * ((pooled[g]! - zp.mean) * zp.scale) + (1 - alpha) * ((sparse - zs.mean) * zs.scale);
  for (let g = 0; g < m; g++) fused[g] = fusedOf(g, tokenLevel[g]!);
  const rankOf = (score: number): number => {
    const rank = ties.rank;
    const mine = rank[scores.candidates[candidate]!]!;
    let above = 0;
    for (let g = 0; g < m; g++) {
      if (g === candidate) continue;
      const f = fused[g]!;
      if (f > score || (f === score && rank[scores.candidates[g]!]! < mine)) above++;
    }
    return above + 1;
  };

  const tokens = nq === 0 ? [] : tokenExcesses(scores, candidate, matching);
  const byExcess = tokens
    .map((t) => t.queryToken)
    .sort((a, b) => tokens[b]!.excess - tokens[a]!.excess || a - b);
  const sparseWithout = (removed: ReadonlySet<number>): number => {
    if (nq === 0) return tokenLevel[candidate]!;
    // The scorer's own sums in its own order: Σ t_i, then the gains over the floor token by token.
    let floors = 0;
    for (let i = 0; i < nq; i++) floors += tokens[i]!.floor;
    let gain = 0;
    for (let i = 0; i < nq; i++) {
      const t = tokens[i]!;
      if (!t.floored && !removed.has(i)) gain += t.similarity - t.floor;
    }
    return matching === 'tail' ? (floors + gain) / nq : gain / nq;
  };
  const outcomes = removals.map((set): InterventionOutcome => {
    for (const i of set) {
      if (!(Number.isInteger(i) && i >= 0 && i < nq)) {
        throw new Error(`tokenInterventions: query token ${i} is not in 0..${nq - 1}`);
      }
    }
    const removed = [...new Set(set)].sort((a, b) => a - b);
    const sparse = sparseWithout(new Set(removed));
    const score = fusedOf(candidate, sparse);
    return { removed, sparse, score, rank: rankOf(score) };
  });
  return {
    candidate,
    memoryRow: scores.candidates[candidate]!,
    nQueryTokens: nq,
    sparse: tokenLevel[candidate]!,
    score: fused[candidate]!,
    rank: rankOf(fused[candidate]!),
    tokens,
    byExcess,
    outcomes,
  };
}

/** Per query token: the memory's first (best) proposal in the token's hits against the floor. */
function tokenExcesses(
  scores: QueryScores,
  candidate: number,
  matching: InterventionMatching,
): TokenExcess[] {
  const hits = scores.hits;
  if (hits === undefined) {
    throw new Error('tokenInterventions: the scores were computed without keepHits');
  }
  const nq = scores.nQueryTokens;
  const k = hits.k;
  const row = scores.candidates[candidate]!;
  const out: TokenExcess[] = [];
  for (let i = 0; i < nq; i++) {
    let h = 0;
    while (h < k && hits.memories[i * k + h] !== row) h++;
    const t = matching === 'tail' ? scores.tailFloor[i]! : 0;
    const s = h < k ? hits.values[i * k + h]! : -Infinity;
    // The scorer adds a gain only where the proposal is strictly above the floor.
    const floored = !(s > t);
    out.push({
      queryToken: i,
      similarity: floored ? Number.NaN : s,
      bankToken: floored ? -1 : hits.tokens[i * k + h]!,
      floor: t,
      floored,
      excess: floored ? 0 : (s - t) / nq,
    });
  }
  return out;
}

/**
 * The removals {@link tokenInterventions} reports for the paper's "top-n" rows: the `n` query
 * tokens of largest excess, for each `n` (at most all the query's tokens).
 *
 * @example
 * topExcessRemovals([4, 0, 2, 1], [1, 2, 6]); // [[4], [4, 0], [4, 0, 2, 1]]
 */
export function topExcessRemovals(byExcess: readonly number[], ns: readonly number[]): number[][] {
  return ns.map((n) => byExcess.slice(0, Math.min(n, byExcess.length)));
}

/** A token piece as {@link namedTokenRemovals} compares it: lower case, without `##` or `▁`. */
function plainPiece(piece: string): string {
  return piece.replace(/^##/, '').replace(/^▁/, '').toLowerCase();
}

/**
 * The query token positions each name picks, for the paper's single-token removals: a
 * token's text (every query token with that piece, case-insensitive, WordPiece's `##` and
 * SentencePiece's `▁` ignored) or `#i` (the i-th query content token, from 0).
 *
 * @throws ConfigError for a name no query token has (listing the query's tokens) or an index
 *   out of range.
 * @example
 * namedTokenRemovals(['progress', '#0'], ['how', 'is', 'progress', '?']);
 * // [{ label: "'progress'", tokens: [2] }, { label: 'how (#0)', tokens: [0] }]
 */
export function namedTokenRemovals(
  names: readonly string[],
  pieces: readonly string[],
): { label: string; tokens: number[] }[] {
  return names.map((name) => {
    const index = /^#(\d+)$/.exec(name);
    if (index !== null) {
      const i = Number(index[1]);
      if (i >= pieces.length) {
        throw new ConfigError(
          `token ${name}: the query has ${pieces.length} content tokens (#0…#${pieces.length - 1})`,
        );
      }
      return { label: `${pieces[i]} (#${i})`, tokens: [i] };
    }
    const want = plainPiece(name);
    const tokens = pieces.flatMap((p, i) => (plainPiece(p) === want ? [i] : []));
    if (tokens.length === 0) {
      throw new ConfigError(
        `token '${name}': no query token has this text; the query's tokens: ${pieces.join(' ')}`,
      );
    }
    return { label: `'${name}'`, tokens };
  });
}
