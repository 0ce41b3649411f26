import { contentHash } from '@bfe/core';
import type { ArtifactResult } from '../../cache/store.js';
import type { Experiment } from '../config.js';
import type { StageContext } from '../stage.js';
import type { DatasetStage } from '../stages/dataset.js';
import type { EncodeStage } from '../stages/encode.js';
import type { IndexStage } from '../stages/index.js';
import { runScoreStage } from '../stages/score.js';
import type { SplitStage } from '../stages/split.js';
import { runCrossFitStage } from './stage.js';

/** What one training seed of a cross-fitted run leaves for the run folder. */
export interface CrossFitSeed {
  readonly seed: number;
  readonly splitSeed: number;
  /** The hash of the folds' split hashes, in fold order. */
  readonly splitHash: string;
  /** The pooled score artifact (`crossfit@<seed>`). */
  readonly score: ArtifactResult;
  /** Each fold's adapter is in the pooled results' `meta.crossFit.perFold`, not here. */
  readonly adapt: undefined;
}

/**
 * One training seed of a cross-fitted run (METHOD.md §8): for every fold, the adapter trained
 * on the fold's training units and selected on its validation units (never its test units),
 * then every system scored on the fold's test units; then the folds pooled
 * ({@link runCrossFitStage}). Stages are named `adapt@<seed>/fold<f>`, `score@<seed>/fold<f>`.
 */
export async function runCrossFitSeed(
  ctx: StageContext,
  e: Experiment,
  seed: number,
  foldSplits: readonly SplitStage[],
  inputs: {
    readonly dataset: DatasetStage;
    readonly encode: EncodeStage;
    readonly index: IndexStage | undefined;
  },
): Promise<CrossFitSeed> {
  const { dataset, encode, index } = inputs;
  const folds: { split: SplitStage; score: ArtifactResult }[] = [];
  for (const [f, split] of foldSplits.entries()) {
    const tag = `@${seed}/fold${f}`;
    let adapt: ArtifactResult | undefined;
    if (e.adapter.enabled) {
      const { runAdaptStage } = await import('../stages/adapt.js');
      adapt = await runAdaptStage(ctx, e, seed, {
        dataset,
        encode,
        split,
        tag,
        ...(index === undefined ? {} : { index }),
      });
    }
    const score = await runScoreStage(ctx, e, { tag, dataset, encode, split, adapt, index });
    folds.push({ split, score });
  }
  const score = await runCrossFitStage(ctx, e, { tag: `@${seed}`, dataset, folds });
  return {
    seed,
    splitSeed: foldSplits[0]?.split.seed ?? 0,
    splitHash: contentHash(foldSplits.map((s) => s.split.hash)),
    score,
    adapt: undefined,
  };
}
