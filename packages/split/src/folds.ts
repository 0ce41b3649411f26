import { ConfigError, SplitError, benchmarkHash, splitSchema } from '@bfe/core';
import type { Benchmark, Split, SplitName, SplitPolicy } from '@bfe/core';
import { z } from 'zod';
import { buildQueryBankGraph, describeStructure, summariseGraph } from './graph.js';
import {
  SHARED_BANK_POLICY,
  componentUnits,
  queryUnits,
  splitContentHash,
  type SplitBody,
  type Unit,
} from './make-split.js';
import { checkSeed, seededShuffle } from './shuffle.js';

/** The predeclared rule that picks each fold's validation units (METHOD.md §8 cross-fitting). */
export const CROSS_FIT_RULE = 'validation = the previous fold (cyclic); train = the other folds';

/**
 * Options of {@link makeFoldSplit} and {@link makeFoldSplits}.
 *
 * @example
 * const options: CrossFitOptions = { folds: 5, seed: 42 };
 */
export interface CrossFitOptions {
  /** Number of folds K ≥ 3 (test, validation and at least one training fold). */
  readonly folds: number;
  /** Integer in `[0, 2^32 − 1]`: the seed of the units' shuffle, as in `makeSplit`. */
  readonly seed: number;
  /**
   * `connected-bank` (default): the units are connected components, no memory is shared
   * between a fold's parts. `query-disjoint-shared-bank`: every query (its own haystack) is a
   * unit and the memories are shared; the folds are marked diagnostic only, as that split is.
   */
  readonly policy?: SplitPolicy;
}

/**
 * The fold sizes of `n` units in `k` folds: `⌊n/k⌋` each, the first `n mod k` one more.
 *
 * @example
 * foldSizes(10, 5); // [2, 2, 2, 2, 2]
 * foldSizes(11, 3); // [4, 4, 3]
 */
export function foldSizes(n: number, k: number): number[] {
  const base = Math.floor(n / k);
  return Array.from({ length: k }, (_, f) => base + (f < n % k ? 1 : 0));
}

/**
 * One fold of a cross-fitted split (METHOD.md §8): the units — connected components
 * (conversations, articles…) under `connected-bank`, single queries (each with its own
 * haystack) under `query-disjoint-shared-bank` — are put in the canonical order and shuffled with the
 * seed exactly as `makeSplit` does, then cut into `folds` contiguous folds ({@link foldSizes}).
 * Fold `fold` is the test part; the previous fold (cyclically, `fold − 1 mod K`) is the
 * validation part; every other fold is training. Every unit is therefore tested exactly once
 * over the K folds and validation units are never the fold's test units; under
 * `connected-bank` no memory is shared between the parts of one fold. Labels are not an input.
 *
 * With the same seed, the last fold of a 5-fold cross-fit of 10 units is the 60/20/20 strict
 * split: its test and validation units are the strict split's (both take the shuffle's last
 * two and the two before them).
 *
 * @throws ConfigError when the folds or the seed are malformed.
 * @throws SplitError when the benchmark has fewer components than folds.
 * @example
 * const split = makeFoldSplit(benchmark, { folds: 5, seed: 42 }, 0);
 * split.crossFit; // { folds: 5, fold: 0, validationFold: 4, rule: '…' }
 * split.unitCounts; // { train: 6, validation: 2, test: 2 } for LoCoMo's 10 conversations
 */
export function makeFoldSplit(benchmark: Benchmark, options: CrossFitOptions, fold: number): Split {
  const { folds, seed } = options;
  const strict = (options.policy ?? 'connected-bank') === 'connected-bank';
  checkSeed(seed);
  if (!Number.isInteger(folds) || folds < 3) {
    throw new ConfigError(
      `Cross-fitting needs an integer number of folds ≥ 3 (test, validation, train), got ${folds}.`,
    );
  }
  if (!Number.isInteger(fold) || fold < 0 || fold >= folds) {
    throw new ConfigError(`Fold ${fold} is not one of 0…${folds - 1}.`);
  }
  const graph = buildQueryBankGraph(benchmark);
  const units = strict ? componentUnits(graph) : queryUnits(graph);
  if (units.length < folds) {
    throw new SplitError(
      `Cannot cross-fit '${benchmark.name}' in ${folds} folds: the query–bank graph has ` +
        `${describeStructure(summariseGraph(graph))}, and every fold needs at least one ` +
        `${strict ? 'component' : 'query'}.`,
      {
        suggestion:
          units.length >= 3
            ? `Use at most ${units.length} folds.`
            : `Policy '${SHARED_BANK_POLICY}' (diagnostic only) makes every query a unit.`,
      },
    );
  }
  const shuffled = seededShuffle(units, seed);
  const sizes = foldSizes(units.length, folds);
  const starts = sizes.map((_, f) => sizes.slice(0, f).reduce((a, b) => a + b, 0));
  const validationFold = (fold - 1 + folds) % folds;
  const partOf = (f: number): SplitName =>
    f === fold ? 'test' : f === validationFold ? 'validation' : 'train';

  const queries = { train: [] as string[], validation: [] as string[], test: [] as string[] };
  const bankSets = {
    train: new Set<number>(),
    validation: new Set<number>(),
    test: new Set<number>(),
  };
  const unitCounts = { train: 0, validation: 0, test: 0 };
  sizes.forEach((size, f) => {
    const part = partOf(f);
    for (let u = starts[f] as number; u < (starts[f] as number) + size; u++) {
      const unit = shuffled[u] as Unit;
      for (const q of unit.queryIds) queries[part].push(q);
      for (const b of unit.banks) bankSets[part].add(b);
      unitCounts[part] += 1;
    }
  });
  const banks = { train: [] as string[], validation: [] as string[], test: [] as string[] };
  for (const part of ['train', 'validation', 'test'] as const) {
    queries[part].sort();
    banks[part] = [...bankSets[part]].map((b) => graph.bankIds[b] as string).sort();
  }
  const body: SplitBody = {
    schemaVersion: 1,
    dataset: benchmark.name,
    benchmarkHash: benchmarkHash(benchmark),
    policy: strict ? 'connected-bank' : SHARED_BANK_POLICY,
    seed,
    // The unit counts this fold gives each part (an integer reading of the ratios).
    ratios: [unitCounts.train, unitCounts.validation, unitCounts.test],
    unit: strict ? 'component' : 'query',
    unitCounts,
    queries,
    banks,
    diagnosticOnly: !strict,
    promotionEligible: strict,
    marks: strict ? [] : ['shared-unlabelled-memory'],
    crossFit: { folds, fold, validationFold, rule: CROSS_FIT_RULE },
  };
  const parsed = splitSchema.safeParse({ ...body, hash: splitContentHash(body) });
  if (!parsed.success) {
    throw new Error(`makeFoldSplit built an invalid split:\n${z.prettifyError(parsed.error)}`);
  }
  return parsed.data;
}

/**
 * Every fold of a cross-fitted split, fold 0 first ({@link makeFoldSplit}).
 *
 * @example
 * const splits = makeFoldSplits(benchmark, { folds: 5, seed: 42 });
 * splits.flatMap((s) => s.queries.test).length; // every query with a candidate bank, once
 */
export function makeFoldSplits(benchmark: Benchmark, options: CrossFitOptions): Split[] {
  return Array.from({ length: options.folds }, (_, f) => makeFoldSplit(benchmark, options, f));
}
