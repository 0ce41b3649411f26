import { fuse } from '../fusion.js';
import type { SparseScorer } from '../scorer.js';
import { tieOrder, type TokenIndex } from '@bfe/index';
import type { CandidateGroup, RankQuery } from './groups.js';
import { checkTop, queryRowsOf, rankIds, type RankingSide, type Rankings } from './sides.js';

/** Inputs of {@link rankFusionGrid}. */
export interface FusionGridRankInput<Q extends RankQuery = RankQuery> {
  readonly memories: RankingSide;
  readonly queries: RankingSide;
  /** From {@link groupByCandidates}; rankings come back in this order, group by group. */
  readonly groups: readonly CandidateGroup<Q>[];
  readonly k: number;
  /** The α grid, each in [0, 1]. */
  readonly alphas: readonly number[];
  /** Memory ids kept per ranking. */
  readonly top: number;
  /** Query content tokens to use instead of `queries.tokenVectors` (an adapter's output). */
  readonly queryTokens?: Float32Array;
  /** Where the token proposals come from (`ScoreRequest.index`); default: exact float32. */
  readonly index?: TokenIndex;
}

/**
 * The token floor of a sparse-fusion grid: `tail` is `t_i` of METHOD.md §2 (the `sparse-fusion`
 * and `adapted` systems), `zero` is `t_i = 0` (the `zero-floor` and `adapted-zero-floor`
 * ablations).
 */
export type FusionFloor = 'tail' | 'zero';

/**
 * Sparse fusion at several α from one sparse search (METHOD.md §3–4): each query's sparse and
 * pooled branches are computed once (exact top-k, tail floor, k clamped to a smaller candidate
 * bank), then fused and ranked per α — exactly the `sparse-fusion` ranking a scorer pass at
 * that α gives; a query without content tokens ranks by the pooled score. Reads no labels;
 * the caller owns `scorer`.
 *
 * @throws ArtifactCorruptError when a group's query is not a row of `queries`.
 * @example
 * const grid = await rankFusionGrid(scorer, { memories, queries, groups, k: 64, alphas: [0.3, 0.5], top: 50 });
 * grid.get(0.3)?.get('q1'); // ['m7', 'm2', …]
 */
export async function rankFusionGrid<Q extends RankQuery>(
  scorer: SparseScorer,
  input: FusionGridRankInput<Q>,
): Promise<Map<number, Rankings>> {
  const grids = await rankFusionGrids(scorer, input, ['tail']);
  return grids.get('tail') as Map<number, Rankings>;
}

/**
 * {@link rankFusionGrid} for several token floors from the same sparse search: per floor of
 * `floors`, per α, the ranking a scorer pass at that α gives for `sparse-fusion` (`tail`) or
 * `zero-floor` (`zero`; with adapted `queryTokens`, `adapted` and `adapted-zero-floor`). Reads
 * no labels; the caller owns `scorer`.
 *
 * @throws ArtifactCorruptError when a group's query is not a row of `queries`.
 * @example
 * const grids = await rankFusionGrids(scorer, { memories, queries, groups, k: 64, alphas: [0.25, 0.5], top: 50 }, ['tail', 'zero']);
 * grids.get('zero')?.get(0.25)?.get('q1'); // ['m2', 'm7', …]
 */
export async function rankFusionGrids<Q extends RankQuery>(
  scorer: SparseScorer,
  input: FusionGridRankInput<Q>,
  floors: readonly FusionFloor[],
): Promise<Map<FusionFloor, Map<number, Rankings>>> {
  const { memories, groups, k, alphas, top } = input;
  checkTop(top, 'rankFusionGrid');
  if (new Set(floors).size !== floors.length) {
    throw new Error(`rankFusionGrids: floors repeat: ${floors.join(', ')}`);
  }
  const queries =
    input.queryTokens === undefined
      ? input.queries
      : { ...input.queries, tokenVectors: input.queryTokens };
  const rowsOf = queryRowsOf(input.queries);
  const ties = tieOrder(memories.ids);
  const runs = new Map<FusionFloor, Map<number, Rankings>>(
    floors.map((f) => [f, new Map(alphas.map((a) => [a, new Map()]))]),
  );
  for (const group of groups) {
    const scored = await scorer.score(
      {
        memories,
        queries,
        queryRows: rowsOf(group),
        candidates: group.rows,
        ...(input.index === undefined ? {} : { index: input.index }),
      },
      { k, maxsim: false, clampK: true },
    );
    scored.forEach((s, i) => {
      const id = (group.queries[i] as Q).id;
      for (const floor of floors) {
        // The scorer's own fusion of each floor (`SparseScorer.score`): pooled alone when the
        // query has no content token.
        const sparse = floor === 'tail' ? s.sparse : s.sparseZeroFloor;
        const perAlpha = runs.get(floor);
        for (const alpha of alphas) {
          const fused = s.pooledOnly ? s.systems.pooled : fuse(s.systems.pooled, sparse, alpha);
          perAlpha?.get(alpha)?.set(id, rankIds(s.candidates, fused, ties, top));
        }
      }
    });
  }
  return runs;
}
