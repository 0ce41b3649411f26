import type { Benchmark, RelevanceLabels } from '@bfe/core';
import type { Evaluation } from '@bfe/eval';
import { rankFusionGrids, type FusionFloor, type Rankings } from '@bfe/scorer';
import {
  groupEvaluator,
  groupByCandidates,
  withScorer,
  type ScoreBank,
  type ScorerSettings,
} from './pipeline.js';

/** Inputs of {@link evaluateFusionGrids}. */
export interface FusionGridInput extends ScorerSettings {
  readonly bank: ScoreBank;
  readonly benchmark: Benchmark;
  /** Read by the evaluator only, for the queries of `queryIds`. */
  readonly labels: RelevanceLabels;
  /** The queries ranked and evaluated (the adapter's selection: the validation part's only). */
  readonly queryIds: ReadonlySet<string>;
  readonly k: number;
  readonly alphas: readonly number[];
  readonly ks: readonly number[];
  /** Query content tokens to use instead of the bank's (an adapter's output), same layout. */
  readonly queryTokens?: Float32Array;
}

/**
 * Sparse fusion at several α and token floors from one sparse search (`@bfe/scorer`'s
 * `rankFusionGrids`), each (floor, α)'s rankings evaluated on `queryIds`. Used to select an
 * adapter's epoch and α on validation queries (METHOD.md §4): the tail floor for `adapted`,
 * the zero floor for `adapted-zero-floor`.
 *
 * @example
 * const grids = await evaluateFusionGrids({ bank, benchmark, labels, queryIds, k: 64, alphas: [0.25, 0.5, 0.75], ks: [10] }, ['tail', 'zero']);
 * grids.get('zero')?.get(0.25)?.metrics['ndcg@10']; // 0.41
 */
export async function evaluateFusionGrids(
  input: FusionGridInput,
  floors: readonly FusionFloor[],
): Promise<Map<FusionFloor, Map<number, Evaluation>>> {
  const { bank, benchmark, labels, k, alphas, ks } = input;
  const groups = groupByCandidates(bank, benchmark, input.queryIds);
  const keep = Math.max(50, ...ks);
  const grids = await withScorer(input, bank, (scorer, sides) =>
    rankFusionGrids(
      scorer,
      {
        ...sides,
        groups,
        k,
        alphas,
        top: keep,
        ...(input.queryTokens === undefined ? {} : { queryTokens: input.queryTokens }),
      },
      floors,
    ),
  );
  const evaluateRuns = groupEvaluator({
    groups,
    labels,
    subtasks: benchmark.subtasks,
    ks,
    keepTop: keep,
  });
  return new Map(
    floors.map((floor) => {
      const grid = grids.get(floor) as Map<number, Rankings>;
      return [floor, new Map(alphas.map((a) => [a, evaluateRuns(grid.get(a) as Rankings)]))];
    }),
  );
}
