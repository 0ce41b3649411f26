import { ConfigError, type Split } from '@bfe/core';
import {
  CHUNKED_POOLED_SUMMARY,
  normalizeHybridWeights,
  resolveBm25Options,
  type HybridWeights,
} from '@bfe/scorer';
import { CHUNK_DEFINITION, windowPools } from '../../chunks/files.js';
import type { ArtifactResult } from '../../cache/store.js';
import {
  selectHybridWeights,
  type HybridSelection,
  type SelectHybridInput,
} from '../../score/hybrid-select.js';
import type { ScoreRunInput } from '../../score/pipeline.js';
import { scoreAndWrite, splitMetaOf } from '../../score/write.js';
import { codeVersion } from '../code-version.js';
import { isSelectionData, type Experiment } from '../config.js';
import type { StageContext } from '../stage.js';
import type { ChunksStage } from './chunks.js';
import type { DatasetStage } from './dataset.js';
import type { EncodeStage } from './encode.js';
import type { IndexStage } from './index.js';
import type { SplitStage } from './split.js';
import type { TransferredFrom } from '../transfer.js';

/** The runner modules whose code the score stage runs (part of its cache key). */
export const SCORE_STAGE_FILES = [
  'score/pipeline.ts',
  'score/outputs.ts',
  'score/k-sweep.ts',
  'score/write.ts',
  'score/hybrid-select.ts',
  'experiment/stages/score.ts',
  'experiment/stages/adapt.ts',
  'experiment/stages/adapt-record.ts',
  'experiment/stages/index.ts',
  'chunks/files.ts',
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
    /** `adapt` is another experiment's adapter (`adapter.from`): where it comes from. */
    readonly transferredFrom?: TransferredFrom;
    /** The `chunks@<size>` stages of `systems.chunkedPooled`, in the order of its sizes. */
    readonly chunks?: readonly ChunksStage[];
  },
): Promise<ArtifactResult> {
  const { dataset, encode, split, adapt, index, transferredFrom } = inputs;
  const chunks = inputs.chunks ?? [];
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
        // Left out without the section, so the key (and every file) stays as it was.
        ...(e.systems?.hybrid === undefined ? {} : { hybrid: e.systems.hybrid }),
        ...(chunks.length === 0 ? {} : { chunkedPooled: chunks.map((c) => c.size) }),
        // Left out unless written: a default run's key changes only with the BM25 code.
        ...(e.scorer.bm25 === undefined ? {} : { bm25: e.scorer.bm25 }),
        // The adapt key is an input; the source's names are written into results.json.
        ...(transferredFrom === undefined ? {} : { transferredFrom }),
      },
      inputs: {
        encode: encode.artifact.key,
        ...(split === undefined ? {} : { split: split.artifact.key }),
        ...(adapt === undefined ? {} : { adapt: adapt.key }),
        ...(index?.artifact === undefined ? {} : { index: index.artifact.key }),
        ...Object.fromEntries(chunks.map((c) => [`chunks@${c.size}`, c.artifact.key])),
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
      const { datasetLanguage } = await import('@bfe/datasets');
      const bm25 = resolveBm25Options(e.scorer.bm25, datasetLanguage(e.dataset.name));
      let adapted: ScoreRunInput['adapted'];
      let adapterMeta: Record<string, unknown> | undefined;
      if (adapt !== undefined) {
        const { loadSelectedAdapter } = await import('./adapt-record.js');
        // adapted and adapted-zero-floor, each at its own validation-selected epoch and α.
        const { meta, ...selected } = await loadSelectedAdapter(adapt.dir, bank);
        adapted = selected;
        adapterMeta = transferredFrom === undefined ? meta : { transferredFrom, ...meta };
      }
      const hybrid = await hybridSystems(e, {
        bank,
        benchmark,
        labels,
        split: split?.split,
        bm25,
        ...(index === undefined ? {} : { openIndex: (kernel) => index.open(bank, kernel) }),
      });
      const chunked = await chunkedPooledSystems(bank, chunks);
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
        ...(hybrid === undefined ? {} : { hybrid: hybrid.systems }),
        ...(chunked === undefined ? {} : { chunkedPooled: chunked.systems }),
        bm25,
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
          ...(hybrid === undefined ? {} : { hybrid: hybrid.meta }),
          ...(chunked === undefined ? {} : { chunkedPooled: chunked.meta }),
        },
      });
      return {
        queries: run.stats.queries,
        scoringSeconds: run.stats.seconds.scoring,
        ...(hybrid === undefined
          ? {}
          : {
              bm25Seconds: run.stats.seconds.bm25,
              bm25IndexSeconds: run.stats.seconds.bm25Index,
              hybridSeconds: run.stats.seconds.hybrid,
              ...(hybrid.selectionSeconds === undefined
                ? {}
                : { hybridSelectionSeconds: hybrid.selectionSeconds }),
            }),
        memoryTokens: 'tokenFile' in bank.memories ? 'file' : 'memory',
        memoryTokenFileReads: run.stats.memoryTokenFile,
      };
    },
  );
}

/**
 * The hybrid systems of `systems.hybrid` (METHOD.md §8): `hybrid` at the predeclared weights
 * (scaled to sum 1) and, with a `grid`, `hybrid-selected` at the weights chosen on the split's
 * validation labels only (`selectHybridWeights`); with what `results.json` records of them.
 * Undefined without the section.
 */
async function hybridSystems(
  e: Experiment,
  inputs: Omit<SelectHybridInput, 'k' | 'step' | 'ks' | 'split'> & {
    readonly split: Split | undefined;
  },
): Promise<
  | {
      systems: { weights: HybridWeights; selected?: HybridWeights };
      meta: Record<string, unknown>;
      /** Seconds of the validation selection; undefined without a grid. */
      selectionSeconds: number | undefined;
    }
  | undefined
> {
  const config = e.systems?.hybrid;
  if (config === undefined) return undefined;
  const weights = normalizeHybridWeights(config.weights);
  const t0 = performance.now();
  let selection: HybridSelection | undefined;
  if (config.grid !== undefined) {
    if (inputs.split === undefined) {
      throw new ConfigError('systems.hybrid.grid needs a split with validation queries');
    }
    selection = await selectHybridWeights({
      ...inputs,
      split: inputs.split,
      k: e.scorer.k,
      step: config.grid,
      ks: e.eval.ks,
      executionProvider: e.scorer.executionProvider,
      backend: e.scorer.backend,
      ...(e.scorer.threads === undefined ? {} : { threads: e.scorer.threads }),
    });
  }
  return {
    systems: { weights, ...(selection === undefined ? {} : { selected: selection.selected }) },
    meta: {
      extension: 'METHOD.md §8 lexical branch (bfe’s extension, not the paper’s method)',
      weights,
      bm25Text: 'each memory’s whole text (never truncated)',
      ...(selection === undefined ? {} : { selected: selection }),
    },
    selectionSeconds: selection === undefined ? undefined : (performance.now() - t0) / 1000,
  };
}

/**
 * The `chunked-pooled@<size>` systems' window pools (each cut memory's windows, every other
 * memory its bank pooled vector) and what `results.json` records of them; undefined without
 * `systems.chunkedPooled`.
 */
async function chunkedPooledSystems(
  bank: {
    readonly memories: { readonly ids: readonly string[]; readonly pooled: Float32Array };
    readonly dim: number;
  },
  chunks: readonly ChunksStage[],
): Promise<
  | {
      systems: NonNullable<ScoreRunInput['chunkedPooled']>;
      meta: Record<string, unknown>;
    }
  | undefined
> {
  if (chunks.length === 0) return undefined;
  const systems: Array<NonNullable<ScoreRunInput['chunkedPooled']>[number]> = [];
  const sizes: Record<string, unknown>[] = [];
  for (const c of chunks) {
    const { layout, vectors } = await c.load();
    const memories = { ids: bank.memories.ids, pooled: bank.memories.pooled, dim: bank.dim };
    systems.push({ size: c.size, pools: windowPools(memories, layout, vectors) });
    sizes.push({
      size: c.size,
      memories: layout.memories,
      cutMemories: layout.cut.length,
      windows: layout.windows + layout.memories - layout.cut.length,
      longestMemoryTokens: layout.longest,
    });
  }
  return {
    systems,
    meta: {
      control: 'the paper’s Appendix D (independent short windows), not METHOD.md §8’s windows',
      summary: CHUNKED_POOLED_SUMMARY,
      windows: CHUNK_DEFINITION,
      queries: 'the ordinary pooled queries',
      sizes,
    },
  };
}
