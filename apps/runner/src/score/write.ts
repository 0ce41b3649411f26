import { join } from 'node:path';
import { writeFileAtomic, type Benchmark, type Split } from '@bfe/core';
import { perQueryLines, writePerQueryJsonl, type Results } from '@bfe/eval';
import { queryClusters, restrictClusters, type QueryClusters } from '@bfe/split';
import { runScore, type ScoreRun, type ScoreRunInput } from './pipeline.js';
import type { KSweep } from './k-sweep.js';
import { buildScoreOutputs, type SplitMeta } from './outputs.js';

/** The files a scored run writes into its output directory. */
export const SCORE_FILES = ['results.json', 'per-query.jsonl', 'k-sweep.json'] as const;

/** Inputs of {@link scoreAndWrite}: the run, and the facts `results.json` records. */
export interface ScoreAndWriteInput extends ScoreRunInput {
  /** Where {@link SCORE_FILES} go; undefined: nothing is written. */
  readonly out: string | undefined;
  /** `all`, or the evaluated split part. */
  readonly splitName: string;
  readonly split?: SplitMeta | undefined;
  readonly resamples: number;
  readonly seed: number;
  /** More facts for `results.json`'s `meta` (e.g. the adapter's selection). */
  readonly extraMeta?: Record<string, unknown>;
}

/** What {@link scoreAndWrite} computed and wrote. */
export interface ScoredAndWritten {
  readonly run: ScoreRun;
  readonly results: Results;
  readonly sweep: KSweep;
  /** The cluster (connected bank component) of every scored query, and the bank unit. */
  readonly clusters: QueryClusters;
}

/**
 * Scores, evaluates and writes one run: `bfe score` and the experiment's score stage both go
 * through here, so the same inputs give the same `results.json`, `per-query.jsonl` and
 * `k-sweep.json` byte for byte. Each file is written atomically.
 */
export async function scoreAndWrite(input: ScoreAndWriteInput): Promise<ScoredAndWritten> {
  const run = await runScore(input);
  const clusters = scoredClusters(input.benchmark as Benchmark, run);
  const { results, sweep } = buildScoreOutputs({
    run,
    benchmark: input.benchmark as Benchmark,
    bank: input.bank,
    splitName: input.splitName,
    split: input.split,
    k: input.k,
    alpha: input.alpha,
    executionProvider: input.executionProvider ?? 'cpu',
    resamples: input.resamples,
    seed: input.seed,
    clusters,
    ...(input.extraMeta === undefined ? {} : { extraMeta: input.extraMeta }),
  });
  if (input.out !== undefined) {
    await writeFileAtomic(join(input.out, 'results.json'), `${JSON.stringify(results, null, 2)}\n`);
    await writePerQueryJsonl(
      join(input.out, 'per-query.jsonl'),
      (function* () {
        for (const s of run.systems) yield* perQueryLines(s.name, s.evaluation, clusters.of);
      })(),
    );
    await writeFileAtomic(join(input.out, 'k-sweep.json'), `${JSON.stringify(sweep, null, 2)}\n`);
  }
  return { run, results, sweep, clusters };
}

/**
 * `queryClusters(benchmark)` restricted to the scored queries (evaluated and dropped), so the
 * cluster count in `results.json` is the evaluated part's (METHOD.md §6 "Intervals").
 */
export function scoredClusters(benchmark: Benchmark, run: ScoreRun): QueryClusters {
  const first = run.systems[0]?.evaluation;
  const ids = first === undefined ? [] : [...first.queries, ...first.droppedQueries];
  return restrictClusters(
    queryClusters(benchmark),
    ids.map((q) => q.queryId),
  );
}

/**
 * The split facts `results.json` records. `bfe score` names the split file it read; a run's
 * split stage records the seed it drew the split with.
 */
export function splitMetaOf(split: Split, source: { file: string } | { seed: true }): SplitMeta {
  return {
    ...('file' in source ? { splitFile: source.file } : {}),
    splitHash: split.hash,
    splitPolicy: split.policy,
    ...('seed' in source ? { splitSeed: split.seed } : {}),
    diagnosticOnly: split.diagnosticOnly,
    promotionEligible: split.promotionEligible,
    marks: split.marks,
  };
}
