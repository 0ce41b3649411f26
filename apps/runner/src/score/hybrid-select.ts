import { ConfigError, type Benchmark, type RelevanceLabels, type Split } from '@bfe/core';
import { evaluate } from '@bfe/eval';
import {
  rankHybridGrid,
  simplexGrid,
  type Bm25Options,
  type HybridWeights,
  type Rankings,
} from '@bfe/scorer';
import {
  evaluationScope,
  groupByCandidates,
  withScorer,
  type ScoreBank,
  type ScorerSettings,
} from './pipeline.js';

/** One point of the validation grid, with its figures. */
export interface HybridGridPoint {
  readonly weights: HybridWeights;
  readonly ndcg10: number;
  readonly recall10: number;
}

/** What {@link selectHybridWeights} chose, and from what (recorded in `results.json`). */
export interface HybridSelection {
  /** The grid's step: weights `i·step` on the simplex. */
  readonly step: number;
  readonly selected: HybridWeights;
  readonly validationNdcg10: number;
  /** Validation queries ranked (those with a relevant memory are the ones evaluated). */
  readonly validationQueries: number;
  /** Every point, in grid order (the tie order: the first best wins). */
  readonly grid: readonly HybridGridPoint[];
  readonly selection: string;
}

/**
 * Refuses a selection that could see test labels: there must be validation queries, none of
 * them a test query.
 *
 * @throws ConfigError naming the problem.
 */
export function checkSelectionSplit(split: Split): void {
  const validation = split.queries.validation;
  if (validation.length === 0) {
    throw new ConfigError(
      'hybrid-selected: the split has no validation queries to select the weights on',
      { suggestion: 'Give the split a validation part, or leave systems.hybrid.grid out.' },
    );
  }
  const test = new Set(split.queries.test);
  const shared = validation.filter((q) => test.has(q));
  if (shared.length > 0) {
    throw new ConfigError(
      `hybrid-selected: ${shared.length} validation queries are also test queries ` +
        `(${shared.slice(0, 3).join(', ')}…): selecting on them would read test labels`,
    );
  }
}

/** Inputs of {@link pickHybridWeights}. */
export interface PickHybridInput {
  readonly step: number;
  readonly grid: readonly HybridWeights[];
  /** One ranking per grid point, in grid order; validation queries only. */
  readonly rankings: readonly Rankings[];
  /** Every label the dataset has: only the validation queries' are kept, here. */
  readonly labels: RelevanceLabels;
  readonly split: Split;
  readonly candidates: ReadonlyMap<string, ReadonlySet<string>>;
  readonly subtaskOf: ReadonlyMap<string, string>;
  readonly subtasks: readonly string[];
  readonly ks: readonly number[];
  readonly keepTop: number;
}

/**
 * Evaluates each grid point's rankings on the validation labels and picks the best NDCG@10,
 * the first in grid order on a tie. Only validation labels enter: the labels are restricted
 * to the split's validation queries before anything reads them, and a ranking of any other
 * query is refused.
 *
 * @throws ConfigError when the split could leak test labels ({@link checkSelectionSplit}) or a
 *   ranked query is not a validation query.
 */
export function pickHybridWeights(input: PickHybridInput): HybridSelection {
  const { split, grid, rankings } = input;
  checkSelectionSplit(split);
  if (rankings.length !== grid.length || grid.length === 0) {
    throw new Error(`pickHybridWeights: ${grid.length} grid points, ${rankings.length} rankings`);
  }
  const validation = new Set(split.queries.validation);
  for (const q of input.subtaskOf.keys()) {
    if (!validation.has(q)) {
      throw new ConfigError(
        `hybrid-selected: query '${q}' is not a validation query; the weights are selected on validation queries only`,
      );
    }
  }
  const labels = input.labels.restrictTo(validation);
  const points = grid.map((weights, i): HybridGridPoint => {
    const e = evaluate({
      runs: rankings[i]!,
      labels,
      candidates: input.candidates,
      subtaskOf: input.subtaskOf,
      subtasks: input.subtasks,
      ks: input.ks,
      keepTop: input.keepTop,
    });
    return { weights, ndcg10: e.metrics['ndcg@10'] ?? 0, recall10: e.metrics['recall@10'] ?? 0 };
  });
  let best = points[0]!;
  for (const p of points) if (p.ndcg10 > best.ndcg10) best = p;
  return {
    step: input.step,
    selected: best.weights,
    validationNdcg10: best.ndcg10,
    validationQueries: input.subtaskOf.size,
    grid: points,
    selection:
      'validation NDCG@10 over the simplex grid (first best in grid order); test labels never read',
  };
}

/** Inputs of {@link selectHybridWeights}. */
export interface SelectHybridInput extends ScorerSettings {
  readonly bank: ScoreBank;
  readonly benchmark: Benchmark;
  /** Every label: restricted to the split's validation queries before use. */
  readonly labels: RelevanceLabels;
  readonly split: Split;
  readonly k: number;
  /** The simplex grid's step (`systems.hybrid.grid`). */
  readonly step: number;
  readonly ks: readonly number[];
  /** BM25's language and IDF, as the scored run's (`resolveBm25Options`). */
  readonly bm25?: Bm25Options;
}

/**
 * `hybrid-selected`'s weights (METHOD.md §8): the hybrid system ranked on the split's
 * validation queries at every point of the simplex grid (`rankHybridGrid`: one scorer pass and
 * one BM25 index per candidate group), each evaluated on validation labels only, the best
 * NDCG@10 kept ({@link pickHybridWeights}). Test queries are neither ranked nor read.
 *
 * @throws ConfigError when the split could leak test labels.
 */
export async function selectHybridWeights(input: SelectHybridInput): Promise<HybridSelection> {
  const { bank, benchmark, split, k, ks, step } = input;
  checkSelectionSplit(split);
  const grid = simplexGrid(step);
  const groups = groupByCandidates(bank, benchmark, new Set(split.queries.validation));
  const memoryText = new Map(benchmark.memories.map((m) => [m.id, m.text]));
  const keepTop = Math.max(50, ...ks);
  const rankings = await withScorer(input, bank, (scorer, sides) =>
    rankHybridGrid(scorer, {
      ...sides,
      memoryTexts: bank.memories.ids.map((id) => memoryText.get(id) ?? ''),
      groups,
      k,
      grid,
      top: keepTop,
      ...(input.bm25 === undefined ? {} : { bm25: input.bm25 }),
    }),
  );
  const { candidates, subtaskOf } = evaluationScope(groups);
  return pickHybridWeights({
    step,
    grid,
    rankings,
    labels: input.labels,
    split,
    candidates,
    subtaskOf,
    subtasks: benchmark.subtasks,
    ks,
    keepTop,
  });
}
