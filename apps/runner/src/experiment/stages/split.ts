import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Split } from '@bfe/core';
import { makeSplit } from '@bfe/split';
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
 * training seeds sharing one split share this one artifact.
 */
export async function runSplitStage(
  ctx: StageContext,
  e: Experiment,
  seed: number,
  dataset: DatasetStage,
): Promise<SplitStage> {
  const artifact = await ctx.run(
    `split@${seed}`,
    {
      stage: 'split',
      version: await codeVersion(['@bfe/core', '@bfe/split']),
      config: { policy: e.split.policy, seed, ratios: e.split.ratios },
      inputs: { dataset: dataset.artifact.key },
    },
    async (dir) => {
      const { benchmark } = await dataset.load();
      const split = makeSplit(benchmark, {
        policy: e.split.policy as Split['policy'],
        seed,
        ratios: e.split.ratios,
      });
      await writeFile(join(dir, 'split.json'), `${JSON.stringify(split, null, 2)}\n`);
      return { splitHash: split.hash };
    },
  );
  return { artifact, split: await readSplitFile(join(artifact.dir, 'split.json')) };
}
