import type { ArtifactResult } from '../../cache/store.js';
import { scoreAndWrite, splitMetaOf } from '../../score/write.js';
import { codeVersion } from '../code-version.js';
import { isSelectionData, type Experiment } from '../config.js';
import type { StageContext } from '../stage.js';
import type { DatasetStage } from './dataset.js';
import type { EncodeStage } from './encode.js';
import type { IndexStage } from './index.js';
import type { SplitStage } from './split.js';

/** The runner modules whose code the score stage runs (part of its cache key). */
export const SCORE_STAGE_FILES = [
  'score/pipeline.ts',
  'score/outputs.ts',
  'score/k-sweep.ts',
  'score/write.ts',
  'experiment/stages/score.ts',
  'experiment/stages/adapt.ts',
  'experiment/stages/index.ts',
];

/**
 * score: every system on the evaluated part (all queries without a split), the adapted one too
 * when an adapter was trained; the artifact is `results.json`, `per-query.jsonl` and
 * `k-sweep.json`, written by the same function as `bfe score`. Like `bfe score`, it reads the
 * memory token vectors from the bank's file (`memoryTokens: 'file'` in its manifest, with the
 * bytes and reads it took).
 */
export async function runScoreStage(
  ctx: StageContext,
  e: Experiment,
  inputs: {
    readonly tag: string;
    readonly dataset: DatasetStage;
    readonly encode: EncodeStage;
    readonly split: SplitStage | undefined;
    readonly adapt: ArtifactResult | undefined;
    /** The experiment's `index` section, when written. */
    readonly index?: IndexStage | undefined;
  },
): Promise<ArtifactResult> {
  const { dataset, encode, split, adapt, index } = inputs;
  return ctx.run(
    `score${inputs.tag}`,
    {
      stage: 'score',
      version: await codeVersion(
        ['@bfe/core', '@bfe/index', '@bfe/scorer', '@bfe/eval', '@bfe/adapter'],
        SCORE_STAGE_FILES,
      ),
      config: {
        part: e.split.policy === 'none' ? 'all' : e.split.evaluate,
        k: e.scorer.k,
        alpha: e.scorer.alpha,
        kSweep: e.scorer.kSweep,
        backend: e.scorer.backend,
        executionProvider: e.scorer.executionProvider,
        eval: e.eval,
        ...(index === undefined ? {} : { index: index.keyConfig }),
      },
      inputs: {
        encode: encode.artifact.key,
        ...(split === undefined ? {} : { split: split.artifact.key }),
        ...(adapt === undefined ? {} : { adapt: adapt.key }),
        ...(index?.artifact === undefined ? {} : { index: index.artifact.key }),
      },
    },
    async (dir) => {
      // Memory token vectors stay in the bank's Arrow file, read by position as the scorer asks
      // (`fileTokenStore`): the scores are those of the in-memory bank, bit for bit, and RSS is
      // bounded by the search's chunk, not the bank. The in-memory bank (if the adapter or the
      // index stage opened it) is let go first.
      encode.releaseBank();
      const bank = await encode.fileBank();
      const { benchmark, labels } = await dataset.load();
      const part = e.split.evaluate;
      let adapted: { queryTokens: Float32Array; alpha: number } | undefined;
      let adapterMeta: Record<string, unknown> | undefined;
      if (adapt !== undefined) {
        const { loadSelectedAdapter } = await import('./adapt.js');
        const selected = await loadSelectedAdapter(adapt.dir, bank);
        adapted = { queryTokens: selected.queryTokens, alpha: selected.alpha };
        adapterMeta = selected.meta;
      }
      const { run } = await scoreAndWrite({
        out: dir,
        bank,
        benchmark,
        labels,
        queryIds: split === undefined ? undefined : new Set(split.split.queries[part]),
        k: e.scorer.k,
        alpha: e.scorer.alpha,
        ks: e.eval.ks,
        kSweep: e.scorer.kSweep,
        executionProvider: e.scorer.executionProvider,
        backend: e.scorer.backend,
        ...(e.scorer.threads === undefined ? {} : { threads: e.scorer.threads }),
        ...(adapted === undefined ? {} : { adapted }),
        ...(index === undefined ? {} : { openIndex: (kernel) => index.open(bank, kernel) }),
        onProgress: (done, total) => ctx.progress('score candidate groups', done, total),
        splitName: split === undefined ? 'all' : part,
        split: split === undefined ? undefined : splitMetaOf(split.split, { seed: true }),
        resamples: e.eval.resamples,
        seed: e.eval.seed,
        extraMeta: {
          // Train or validation part: the data the adapter is trained or selected on.
          selectionData: isSelectionData(e),
          ...(adapterMeta === undefined ? {} : { adapter: adapterMeta }),
          ...(index === undefined ? {} : { index: index.meta }),
        },
      });
      return {
        queries: run.stats.queries,
        scoringSeconds: run.stats.seconds.scoring,
        memoryTokens: 'tokenFile' in bank.memories ? 'file' : 'memory',
        memoryTokenFileReads: run.stats.memoryTokenFile,
      };
    },
  );
}
