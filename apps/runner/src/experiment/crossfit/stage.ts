import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { writeFileAtomic } from '@bfe/core';
import { parseResults, readPerQueryJsonl, writePerQueryJsonl } from '@bfe/eval';
import { queryClusters } from '@bfe/split';
import type { ArtifactResult } from '../../cache/store.js';
import { codeVersion } from '../code-version.js';
import type { Experiment } from '../config.js';
import type { StageContext } from '../stage.js';
import type { DatasetStage } from '../stages/dataset.js';
import type { SplitStage } from '../stages/split.js';
import { mergeFolds, type FoldScore } from './merge.js';

/** One fold of a cross-fitted run: its split and its score artifact. */
export interface FoldArtifacts {
  readonly split: SplitStage;
  readonly score: ArtifactResult;
}

/**
 * crossfit: pools one training seed's fold score artifacts into a score artifact over every
 * query ({@link mergeFolds}): `results.json` (with `meta.crossFit`: each fold's tested units,
 * split hash, figures and selections), `per-query.jsonl` (every query once) and an empty
 * `k-sweep.json` (the sweep is not pooled across folds; `split.folds` requires
 * `scorer.kSweep: []`). Its key is the folds' score keys, so it reruns only when a fold does.
 */
export async function runCrossFitStage(
  ctx: StageContext,
  e: Experiment,
  inputs: {
    readonly tag: string;
    readonly dataset: DatasetStage;
    readonly folds: readonly FoldArtifacts[];
  },
): Promise<ArtifactResult> {
  const { dataset, folds } = inputs;
  return ctx.run(
    `crossfit${inputs.tag}`,
    {
      stage: 'crossfit',
      version: await codeVersion(
        ['@bfe/core', '@bfe/eval', '@bfe/split'],
        ['experiment/crossfit/stage.ts', 'experiment/crossfit/merge.ts'],
      ),
      config: { folds: folds.length, resamples: e.eval.resamples, seed: e.eval.seed },
      inputs: Object.fromEntries(folds.map((f, i) => [`fold${i}`, f.score.key])),
    },
    async (dir) => {
      const scores: FoldScore[] = await Promise.all(
        folds.map(async (f) => ({
          split: f.split.split,
          results: parseResults(
            JSON.parse(await readFile(join(f.score.dir, 'results.json'), 'utf8')),
            join(f.score.dir, 'results.json'),
          ),
          lines: await readPerQueryJsonl(join(f.score.dir, 'per-query.jsonl')),
        })),
      );
      const { benchmark } = await dataset.load();
      const { results, lines } = mergeFolds({
        folds: scores,
        resamples: e.eval.resamples,
        seed: e.eval.seed,
        clusters: queryClusters(benchmark),
      });
      await writeFileAtomic(join(dir, 'results.json'), `${JSON.stringify(results, null, 2)}\n`);
      await writePerQueryJsonl(join(dir, 'per-query.jsonl'), lines);
      const sweep = {
        schemaVersion: 1,
        dataset: results.dataset,
        split: results.split,
        alpha: e.scorer.alpha,
        mainK: e.scorer.k,
        points: [],
      };
      await writeFile(join(dir, 'k-sweep.json'), `${JSON.stringify(sweep, null, 2)}\n`);
      return { folds: folds.length, queries: results.systems[0]?.nQueries ?? 0 };
    },
  );
}
