import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Split } from '@bfe/core';
import { makeFoldSplit, makeSplit } from '@bfe/split';
import type { ArtifactResult } from '../../cache/store.js';
import { readSplitFile } from '../../data/read-split.js';
import { codeVersion } from '../code-version.js';
import type { Experiment } from '../config.js';
import type { StageContext } from '../stage.js';
import type { DatasetStage } from './dataset.js';

/** The split stage's outcome: its artifact and the split it holds. */
export interface SplitStage {
  readonly artifact: ArtifactResult;
  readonly split: Split;
}

/**
 * split: seeded and label-free (the policy reads the benchmark's memories and queries, never
 * its labels); the artifact is `split.json`, whose hash goes into every later key. `seed` is
 * the split's own seed (`split.seed`, or the training seed under `split.seed: per-seed`), so
 * training seeds sharing one split share this one artifact. With `split.folds`, `fold` names
 * the cross-fitting fold this split tests (`makeFoldSplit`); one artifact per fold.
 */
export async function runSplitStage(
  ctx: StageContext,
  e: Experiment,
  seed: number,
  dataset: DatasetStage,
  fold?: number,
): Promise<SplitStage> {
  const folds = e.split.folds;
  if ((folds === undefined) !== (fold === undefined)) {
    throw new Error('runSplitStage: a fold is given exactly when split.folds is');
  }
  const policy = e.split.policy as Split['policy'];
  const artifact = await ctx.run(
    fold === undefined ? `split@${seed}` : `split@${seed}/fold${fold}`,
    {
      stage: 'split',
      version: await codeVersion(['@bfe/core', '@bfe/split']),
      config:
        fold === undefined
          ? { policy: e.split.policy, seed, ratios: e.split.ratios }
          : { policy: e.split.policy, seed, folds, fold },
      inputs: { dataset: dataset.artifact.key },
    },
    async (dir) => {
      const { benchmark } = await dataset.load();
      const split =
        fold === undefined || folds === undefined
          ? makeSplit(benchmark, { policy, seed, ratios: e.split.ratios })
          : makeFoldSplit(benchmark, { folds, seed, policy }, fold);
      await writeFile(join(dir, 'split.json'), `${JSON.stringify(split, null, 2)}\n`);
      return { splitHash: split.hash };
    },
  );
  return { artifact, split: await readSplitFile(join(artifact.dir, 'split.json')) };
}
