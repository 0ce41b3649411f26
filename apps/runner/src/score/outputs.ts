import type { Benchmark } from '@bfe/core';
import { bankContentHash } from '@bfe/encoder';
import { buildResults, transitionPairsFor, type Results } from '@bfe/eval';
import { bm25Meta } from '@bfe/scorer';
import { buildKSweep, type KSweep } from './k-sweep.js';
import type { ScoreBank, ScoreRun } from './pipeline.js';
import { tiesMeta } from './ties.js';

/** The split facts a results file records (absent when every query is evaluated). */
export interface SplitMeta {
  readonly splitFile?: string;
  readonly splitHash: string;
  readonly splitPolicy: string;
  readonly splitSeed?: number;
  readonly diagnosticOnly: boolean;
  readonly promotionEligible?: boolean;
  readonly marks: readonly string[];
}

/** What {@link buildScoreOutputs} needs besides the scored run. */
export interface ScoreOutputsInput {
  readonly run: ScoreRun;
  readonly benchmark: Benchmark;
  readonly bank: ScoreBank;
  /** `all`, or the evaluated split part. */
  readonly splitName: string;
  readonly split?: SplitMeta | undefined;
  readonly k: number;
  readonly alpha: number;
  readonly executionProvider: string;
  readonly resamples: number;
  readonly seed: number;
  /** More facts for `results.json`'s `meta` (e.g. the adapter's selection). */
  readonly extraMeta?: Record<string, unknown>;
  /** Each query's cluster (bank component) and the bank unit: cluster intervals beside the query ones. */
  readonly clusters?: { readonly unit: string; readonly of: ReadonlyMap<string, string> };
}

/**
 * `results.json` (every system compared with pooled, query-level transitions of the
 * predeclared pairs) and `k-sweep.json` of a scored run, with
 * the facts needed to read them: model, bank, dataset options, split, BM25 settings, counts.
 * Shared by `bfe score` and `bfe run`, so both write the same files for the same inputs.
 */
export function buildScoreOutputs(input: ScoreOutputsInput): { results: Results; sweep: KSweep } {
  const { run, benchmark, bank, splitName } = input;
  const model = bank.manifest.model;
  const results = buildResults({
    dataset: benchmark.name,
    split: splitName,
    systems: run.systems,
    compareTo: comparedWith(run),
    // pooled → sparse-fusion, and → adapted when an adapter was trained (paper Appendix D).
    transitions: transitionPairsFor(run.systems.map((s) => s.name)),
    resamples: input.resamples,
    seed: input.seed,
    ...(input.clusters === undefined ? {} : { clusters: input.clusters }),
    meta: JSON.parse(
      JSON.stringify({
        k: input.k,
        alpha: input.alpha,
        // NDCG gains: 'graded' (gain = grade, as trec_eval) when a label has a grade above 1.
        gains: run.systems[0]?.evaluation.gains,
        executionProvider: input.executionProvider,
        model: {
          name: model.name,
          modelId: model.modelId,
          sha256: model.sha256,
          pooling: model.pooling,
        },
        bank: {
          // Canonical hash of bank.json without createdAt/seconds (see bankContentHash).
          contentHash: bankContentHash(bank.manifest),
          dtype: bank.manifest.dtype,
          maxLength: bank.manifest.maxLength,
        },
        benchmarkHash: bank.manifest.benchmarkHash,
        datasetOptions: { ...benchmark.options },
        ...(input.split ?? {}),
        candidates: 'each query’s own: every memory of its candidateBankIds, or its candidateIds',
        ties: tiesMeta(run.ties),
        bm25: bm25Meta(run.bm25),
        queries: run.stats.queries,
        candidateGroups: run.stats.groups,
        clampedGroups: run.stats.clampedGroups,
        pooledOnlyQueries: run.stats.pooledOnlyQueries,
        ...(input.extraMeta ?? {}),
      }),
    ) as Record<string, never>,
  });
  const pooled = run.systems.find((s) => s.name === 'pooled')?.evaluation;
  if (pooled === undefined) throw new Error('buildScoreOutputs: no pooled evaluation');
  const sweep = buildKSweep({
    dataset: benchmark.name,
    split: splitName,
    alpha: input.alpha,
    mainK: input.k,
    pooled,
    points: run.sweep,
    resamples: input.resamples,
    seed: input.seed,
  });
  return { results, sweep };
}

/**
 * The systems every other one is compared with: pooled; sparse fusion too when an adapter was
 * trained (the training-free fusion it starts from, METHOD.md §4) or a `chunked-pooled@N` row
 * is there (the paper's Appendix D asks whether short windows close the gap to it), or a
 * hybrid system is there, which is also compared with BM25, the lexical branch it adds
 * (METHOD.md §8).
 */
function comparedWith(run: ScoreRun): string[] {
  const has = (name: string): boolean => run.systems.some((s) => s.name === name);
  if (has('hybrid') || has('hybrid-selected')) {
    return ['pooled', 'sparse-fusion', ...(has('bm25') ? ['bm25'] : [])];
  }
  const chunked = run.systems.some((s) => s.name.startsWith('chunked-pooled@'));
  return has('adapted') || chunked ? ['pooled', 'sparse-fusion'] : ['pooled'];
}
