import type { QueryScores } from './scorer.js';
import { standardize } from './fusion.js';
import { tokenStoreOf, type TokenBank } from './validate.js';

/**
 * How a system turns token matches into its token-level score: the sparse score with the tail
 * floor (`'tail'`), with `t_i = 0` (`'zero'`), exhaustive MaxSim (`'maxsim'`), or not at all
 * (`'none'`: the `pooled` system, whose score is the raw pooled cosine).
 */
export type EvidenceMatching = 'tail' | 'zero' | 'maxsim' | 'none';

/** What {@link explainCandidates} needs beside the scorer's output. */
export interface ExplainInput {
  /** The scorer's result for the query, computed with `keepHits: true`. */
  readonly scores: QueryScores;
  /** The memory bank the scorer read (for token offsets and the floored diagnostic). */
  readonly memories: TokenBank;
  /** The query's content tokens exactly as scored (adapted ones for an adapter) `[n_q × dim]`. */
  readonly queryTokens: Float32Array;
  /** The token-level score the system fuses: see {@link EvidenceMatching}. */
  readonly matching: EvidenceMatching;
  /** The system's α (0 for `no-fusion`). */
  readonly alpha: number;
  /**
   * The system fuses (default true); false: it ranks by the raw token-level score (the
   * `maxsim` system), so `score = sparsePart = sparse` and `alpha` is 0.
   */
  readonly fused?: boolean;
  /**
   * Diagnostic bests computed elsewhere (e.g. on the thread that holds the bank, in the same
   * float64 dots): for the `p`-th explained position and query token `i`, at `p·n_q + i`,
   * token -1 where not given (then computed here). See {@link missingBests}.
   */
  readonly bests?: DiagnosticBests;
}

/** {@link ExplainInput.bests}: best token within the memory and its float64 similarity. */
export interface DiagnosticBests {
  readonly token: Int32Array;
  readonly similarity: Float64Array;
}

/** One query token's part in a memory's token-level score (METHOD.md §2, Appendix D). */
export interface TokenEvidence {
  /** Index of the query content token. */
  readonly queryToken: number;
  /**
   * The memory token whose similarity the score used (index within the memory): the
   * memory's best hit among the query token's returned top-k (`'tail'`, `'zero'`), or its
   * exhaustive best (`'maxsim'`); -1 when the score used none (floored).
   */
  readonly memoryToken: number;
  /** Its similarity (the scorer's float64 value; MaxSim's float32 best); NaN when floored. */
  readonly similarity: number;
  /**
   * The memory got the floor instead of a match: no hit among the top-k proposals, or a hit
   * below the floor. Never true for `'maxsim'`.
   */
  readonly floored: boolean;
  /** The floor `t_i` the score used (0 for `'zero'` and `'maxsim'`). */
  readonly floor: number;
  /**
   * Diagnostic, **not used by the score**: the memory's true best token for this query token
   * (exhaustive, float64), whether or not it was proposed. Undefined for a memory without tokens.
   */
  readonly best: { readonly memoryToken: number; readonly similarity: number } | undefined;
  /** `max(t_i, best_i(m)) / n_q` (or MaxSim's `best_i(m) / n_q`): this token's score term. */
  readonly contribution: number;
  /** `contribution / s_sparse` (0 when `s_sparse` is 0). */
  readonly share: number;
}

/** Why one candidate scored what it did: its token evidence and the fused decomposition. */
export interface MemoryEvidence {
  /** Position of the candidate in `QueryScores.candidates`. */
  readonly candidate: number;
  /** Its memory row. */
  readonly memoryRow: number;
  readonly matching: EvidenceMatching;
  readonly nQueryTokens: number;
  /** Proposals per query token the scorer used. */
  readonly k: number;
  /** Per query token, in order; empty for a pooled-only query (no content tokens). */
  readonly tokens: readonly TokenEvidence[];
  /** `p_q·p_m`. */
  readonly pooled: number;
  /** The token-level score the system fused (`s_sparse`, its zero-floor form, or MaxSim). */
  readonly sparse: number;
  /** `z(pooled)` over the candidate set. */
  readonly zPooled: number;
  /** `z(sparse)` over the candidate set. */
  readonly zSparse: number;
  readonly alpha: number;
  /** `α·z(pooled)`. */
  readonly pooledPart: number;
  /** `(1−α)·z(sparse)`. */
  readonly sparsePart: number;
  /**
   * `pooledPart + sparsePart`: the system's score. For a pooled-only query (no content tokens)
   * and for `'none'` it is the raw pooled cosine: `alpha` 1, `pooledPart = pooled`,
   * `sparsePart = 0`, no token evidence.
   */
  readonly score: number;
}

/**
 * Token evidence (the paper's Appendix D analysis) for some candidates of one scored query,
 * recomputed from exactly what the scorer used: its kept hits, its floors `t_i`, and the same
 * standardisation over the whole candidate set (`standardize`, as `fuse` does). For each query
 * token: the memory token it matched and the similarity, whether the memory was floored
 * instead, the memory's true best token (a diagnostic the score does not use), and the token's
 * term `max(t_i, best_i(m))/n_q` and share; the terms sum to the scorer's `s_sparse` (up to
 * float64 rounding) and `pooledPart + sparsePart` is the system's fused score.
 *
 * @throws Error when the scores were computed without `keepHits` (or without MaxSim for
 *   `'maxsim'`), or a candidate position is out of range (programmer errors).
 * @example
 * const [scores] = await scorer.score(request, { k: 64, alpha: 0.5, keepHits: true });
 * const [why] = explainCandidates({ scores, memories, queryTokens, matching: 'tail', alpha: 0.5 }, [3]);
 * why.tokens[0]; // { queryToken: 0, memoryToken: 5, similarity: 0.81, floored: false, share: 0.2, … }
 * why.pooledPart + why.sparsePart === scores.systems['sparse-fusion'][3];
 */
export function explainCandidates(
  input: ExplainInput,
  positions: readonly number[],
): MemoryEvidence[] {
  const { scores, matching, alpha } = input;
  const m = scores.candidates.length;
  const pooled = scores.systems.pooled;
  const sparseAll = tokenScores(scores, matching);
  const zp = standardize(pooled);
  const zs = standardize(sparseAll);
  return positions.map((g, p) => {
    if (!(Number.isInteger(g) && g >= 0 && g < m)) {
      throw new Error(`explainCandidates: candidate position ${g} is not in 0..${m - 1}`);
    }
    const memoryRow = scores.candidates[g]!;
    const base = {
      candidate: g,
      memoryRow,
      matching,
      nQueryTokens: scores.nQueryTokens,
      k: scores.k,
    };
    if (scores.pooledOnly || matching === 'none') {
      // The score is the raw pooled cosine: every system of a pooled-only query, and `pooled`.
      const p = pooled[g]!;
      const sparse = matching === 'none' ? 0 : sparseAll[g]!;
      return {
        ...base,
        tokens: [],
        pooled: p,
        sparse,
        zPooled: zp[g]!,
        zSparse: 0,
        alpha: 1,
        pooledPart: p,
        sparsePart: 0,
        score: p,
      };
    }
    const tokens = tokenEvidence(input, g, p, memoryRow, sparseAll[g]!);
    if (input.fused === false) {
      const sp = sparseAll[g]!;
      return {
        ...base,
        tokens,
        pooled: pooled[g]!,
        sparse: sp,
        zPooled: zp[g]!,
        zSparse: zs[g]!,
        alpha: 0,
        pooledPart: 0,
        sparsePart: sp,
        score: sp,
      };
    }
    const pooledPart = alpha * zp[g]!;
    const sparsePart = (1 - alpha) * zs[g]!;
    return {
      ...base,
      tokens,
      pooled: pooled[g]!,
      sparse: sparseAll[g]!,
      zPooled: zp[g]!,
      zSparse: zs[g]!,
      alpha,
      pooledPart,
      sparsePart,
      score: pooledPart + sparsePart,
    };
  });
}

/** The token-level scores the system fuses, per candidate. */
function tokenScores(scores: QueryScores, matching: EvidenceMatching): Float64Array {
  if (matching === 'tail' || matching === 'none') return scores.sparse;
  if (matching === 'zero') return scores.sparseZeroFloor;
  const maxsim = scores.systems.maxsim;
  if (maxsim === undefined) throw new Error('explainCandidates: MaxSim was not computed');
  return maxsim;
}

/**
 * The diagnostic bests {@link explainCandidates} must compute with dot products for these
 * positions (those its hits do not already hold: a memory without a hit for the query token, or
 * hits that are not exact), as quadruples `[slot, queryToken, tokenStart, tokenEnd)` of the
 * memory bank's tokens, `slot = p·n_q + i`: what to compute elsewhere and pass as
 * {@link ExplainInput.bests} (the best token relative to `tokenStart`, first of equals).
 */
export function missingBests(
  scores: QueryScores,
  memories: Pick<TokenBank, 'tokenOffsets'>,
  positions: readonly number[],
): Int32Array {
  const hits = scores.hits;
  const nq = scores.nQueryTokens;
  if (hits === undefined || scores.pooledOnly) return new Int32Array(0);
  const k = hits.k;
  const out: number[] = [];
  for (const [p, g] of positions.entries()) {
    const row = scores.candidates[g]!;
    const start = memories.tokenOffsets[row]!;
    const end = memories.tokenOffsets[row + 1]!;
    if (end === start) continue;
    for (let i = 0; i < nq; i++) {
      let h = 0;
      if (hits.exact === true) while (h < k && hits.memories[i * k + h] !== row) h++;
      if (hits.exact !== true || h === k) out.push(p * nq + i, i, start, end);
    }
  }
  return Int32Array.from(out);
}

function tokenEvidence(
  input: ExplainInput,
  g: number,
  p: number,
  row: number,
  sparse: number,
): TokenEvidence[] {
  const { scores, memories, matching, queryTokens } = input;
  const hits = scores.hits;
  if (hits === undefined) {
    throw new Error('explainCandidates: the scores were computed without keepHits');
  }
  const nq = scores.nQueryTokens;
  const dim = memories.dim;
  if (queryTokens.length !== nq * dim) {
    throw new Error(
      `explainCandidates: ${queryTokens.length} query token floats, expected ${nq} × ${dim}`,
    );
  }
  const k = hits.k;
  const m = scores.candidates.length;
  const start = memories.tokenOffsets[row]!;
  const end = memories.tokenOffsets[row + 1]!;
  const size = end - start;
  let own: Int32Array | undefined;
  let sims: Float64Array | undefined;
  const out: TokenEvidence[] = [];
  for (let i = 0; i < nq; i++) {
    // Hits are sorted descending: the memory's first hit in the row is its best proposal.
    let h = 0;
    while (h < k && hits.memories[i * k + h] !== row) h++;
    const matched = h < k;
    // The diagnostic: the memory's best token over all its tokens, in the store's own float64
    // dot products. Exact hits already hold it when the memory has one in the row (its best
    // token ranks first among its tokens, the tie order keeping token order): the same dots.
    let best: { readonly memoryToken: number; readonly similarity: number } | undefined;
    const given = input.bests?.token[p * nq + i] ?? -1;
    if (size === 0) best = undefined;
    else if (given >= 0)
      best = { memoryToken: given, similarity: input.bests!.similarity[p * nq + i]! };
    else if (matched && hits.exact === true)
      best = { memoryToken: hits.tokens[i * k + h]! - start, similarity: hits.values[i * k + h]! };
    else {
      if (own === undefined || sims === undefined) {
        own = new Int32Array(size);
        for (let j = 0; j < size; j++) own[j] = start + j;
        sims = new Float64Array(size);
      }
      tokenStoreOf(memories).dots(own, size, queryTokens, i * dim, sims);
      let bestJ = 0;
      for (let j = 1; j < size; j++) if (sims[j]! > sims[bestJ]!) bestJ = j;
      best = { memoryToken: bestJ, similarity: sims[bestJ]! };
    }
    if (matching === 'maxsim') {
      const v = hits.best?.[i * m + g];
      if (v === undefined) throw new Error('explainCandidates: MaxSim bests were not kept');
      const used = v === -Infinity ? -1 : v;
      const contribution = used / nq;
      out.push({
        queryToken: i,
        memoryToken: best?.memoryToken ?? -1,
        similarity: v,
        floored: false,
        floor: 0,
        best,
        contribution,
        share: sparse === 0 ? 0 : contribution / sparse,
      });
      continue;
    }
    const t = matching === 'tail' ? scores.tailFloor[i]! : 0;
    const s = matched ? hits.values[i * k + h]! : -Infinity;
    const floored = !matched || s < t;
    const contribution = Math.max(t, s) / nq;
    out.push({
      queryToken: i,
      memoryToken: matched && !floored ? hits.tokens[i * k + h]! - start : -1,
      similarity: matched && !floored ? s : Number.NaN,
      floored,
      floor: t,
      best,
      contribution,
      share: sparse === 0 ? 0 : contribution / sparse,
    });
  }
  return out;
}
