import { DataError } from '@bfe/core';
import {
  buildResults,
  recomputeFromPerQuery,
  transitionPairsFor,
  type PerQueryLine,
  type Results,
} from '@bfe/eval';
import type { Split } from '@bfe/core';

/** One fold's outcome as the merge reads it: its split and its score stage's files. */
export interface FoldScore {
  readonly split: Split;
  /** The fold's `results.json` (its test part). */
  readonly results: Results;
  /** The fold's `per-query.jsonl` lines. */
  readonly lines: readonly PerQueryLine[];
}

/**
 * The `meta` keys of a fold's results that describe that fold alone (its split, its selected
 * adapter and hybrid weights, its counts): they move to `crossFit.perFold`, the rest is shared.
 */
const PER_FOLD_META = [
  'splitHash',
  'ties',
  'queries',
  'candidateGroups',
  'clampedGroups',
  'pooledOnlyQueries',
  'adapter',
  'hybrid',
] as const;

/** Inputs of {@link mergeFolds}. */
export interface MergeFoldsInput {
  readonly folds: readonly FoldScore[];
  /** The paired tests' resamples and seed (the experiment's `eval`). */
  readonly resamples: number;
  readonly seed: number;
  /** Query → cluster (bank unit), for the cluster intervals; undefined: query-level only. */
  readonly clusters?: { readonly unit: string; readonly of: ReadonlyMap<string, string> };
}

/**
 * Pools the folds of a cross-fitted run (METHOD.md §8) into one results file over every
 * query: the folds' per-query lines are concatenated (each query must be tested by exactly one
 * fold) and every metric, subtask figure and paired comparison is recomputed from them, as
 * `bfe eval` does, with the same comparisons as each fold and the predeclared query-level
 * transitions. Each fold's own figures, split, tested units and selections stay in
 * `meta.crossFit.perFold`.
 *
 * @throws DataError when two folds test one query, or when the folds disagree on their
 *   systems, cut-offs or subtasks.
 * @example
 * const { results, lines } = mergeFolds({ folds, resamples: 10_000, seed: 42 });
 * results.systems[0].nQueries; // every fold's test queries together
 */
export function mergeFolds(input: MergeFoldsInput): { results: Results; lines: PerQueryLine[] } {
  const first = input.folds[0];
  if (first === undefined) throw new Error('mergeFolds: no folds');
  const systems = first.results.systems.map((s) => s.name);
  const tested = new Map<string, number>();
  input.folds.forEach((fold, f) => {
    const names = fold.results.systems.map((s) => s.name);
    if (names.join() !== systems.join()) {
      throw new DataError(
        `Fold ${f} has systems ${names.join(', ')}; fold 0 ${systems.join(', ')}.`,
      );
    }
    if (
      fold.results.ks.join() !== first.results.ks.join() ||
      fold.results.subtasks.join('\u0000') !== first.results.subtasks.join('\u0000')
    ) {
      throw new DataError(`Fold ${f} has other cut-offs or subtasks than fold 0.`);
    }
    for (const q of fold.split.queries.test) {
      const other = tested.get(q);
      if (other !== undefined) {
        throw new DataError(`Query '${q}' is tested by folds ${other} and ${f}.`);
      }
      tested.set(q, f);
    }
    for (const line of fold.lines) {
      if (tested.get(line.queryId) !== f) {
        throw new DataError(
          `Fold ${f}'s per-query file holds '${line.queryId}', not its test query.`,
        );
      }
    }
  });
  const lines = input.folds.flatMap((fold) => fold.lines);
  const bySystem = recomputeFromPerQuery(lines, {
    ks: first.results.ks,
    subtasks: first.results.subtasks,
  });
  // The bases fold 0 compares with, in system order (the order the score stage gives them).
  const compareTo = systems.filter((name) =>
    first.results.systems.some((s) => s.comparisons?.[name] !== undefined),
  );
  const { shared, perFold } = splitMeta(input.folds);
  const results = buildResults({
    dataset: first.results.dataset,
    split: first.results.split,
    systems: systems.map((name) => ({ name, evaluation: bySystem.get(name)! })),
    compareTo,
    // Recounted over every query, not summed from the folds.
    transitions: transitionPairsFor(systems),
    resamples: input.resamples,
    seed: input.seed,
    ...(input.clusters === undefined ? {} : { clusters: input.clusters }),
    meta: {
      ...shared,
      crossFit: {
        folds: input.folds.length,
        seed: first.split.seed,
        units: first.split.unit,
        rule: first.split.crossFit?.rule ?? null,
        perFold,
      },
    } as unknown as Record<string, never>,
  });
  return { results, lines };
}

/** The folds' shared meta (fold 0's, less the per-fold keys) and each fold's own facts. */
function splitMeta(folds: readonly FoldScore[]): {
  shared: Record<string, unknown>;
  perFold: Record<string, unknown>[];
} {
  const shared: Record<string, unknown> = { ...(folds[0]?.results.meta ?? {}) };
  for (const key of PER_FOLD_META) delete shared[key];
  const perFold = folds.map((fold, f) => {
    const meta = (fold.results.meta ?? {}) as Record<string, unknown>;
    const own: Record<string, unknown> = {};
    for (const key of PER_FOLD_META) if (meta[key] !== undefined) own[key] = meta[key];
    // Each system's fold headline, with the queries it averages (those with a relevant memory).
    const headline: Record<string, Record<string, number>> = {};
    for (const s of fold.results.systems) {
      headline[s.name] = {
        'recall@10': s.metrics['recall@10'] as number,
        'ndcg@10': s.metrics['ndcg@10'] as number,
        nQueries: s.nQueries,
      };
    }
    return {
      fold: f,
      splitHash: fold.split.hash,
      // Conversations, articles… (connected-bank) or the tested queries' own haystacks.
      testUnits: fold.split.unit === 'component' ? fold.split.banks.test : fold.split.queries.test,
      validationUnits:
        fold.split.unit === 'component'
          ? fold.split.banks.validation
          : fold.split.queries.validation,
      nTestQueries: fold.split.queries.test.length,
      metrics: headline,
      ...own,
    };
  });
  return { shared, perFold };
}
