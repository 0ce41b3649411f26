import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ArtifactCorruptError, type LoadedDataset, type Split } from '@bfe/core';
import {
  saveAdapter,
  trainAdapterAsync,
  type CandidateSet,
  type TrainingQuery,
} from '@bfe/adapter';
import type { OpenedBank } from '@bfe/encoder';
import { assertNoLeak } from '@bfe/split';
import type { ArtifactSpec } from '../../cache/key.js';
import type { ArtifactResult } from '../../cache/store.js';
import { evaluateFusionGrids, type FusionGridInput } from '../../score/fusion-grid.js';
import { groupByCandidates } from '../../score/pipeline.js';
import { codeVersion } from '../code-version.js';
import type { Experiment } from '../config.js';
import type { StageContext } from '../stage.js';
import {
  ADAPTER_FILE,
  TRAINING_RECORD_VERSION,
  ZERO_FLOOR_ADAPTER_FILE,
  adaptAll,
  type TrainingRecord,
} from './adapt-record.js';
import { selectOnValidation } from './adapt-select.js';
import type { IndexStage } from './index.js';
import type { DatasetStage } from './dataset.js';
import type { EncodeStage } from './encode.js';
import type { SplitStage } from './split.js';

export {
  loadSelectedAdapter,
  readTrainingRecord,
  trainingRecordSchema,
  type TrainingRecord,
} from './adapt-record.js';
// No wall-clock time in training.json: it is byte-identical for identical inputs (the label
// isolation test compares it byte for byte); timings go to the artifact's manifest.

/** The cache spec of the adapt stage: the encoded bank, the split, the adapter settings. */
export async function adaptStageSpec(
  e: Experiment,
  seed: number,
  inputs: { encode: string; split: string; index?: string },
  index?: Record<string, unknown>,
): Promise<ArtifactSpec> {
  return {
    stage: 'adapt',
    version: await codeVersion(
      ['@bfe/core', '@bfe/adapter', '@bfe/index', '@bfe/scorer', '@bfe/eval', '@bfe/split'],
      [
        'experiment/stages/adapt.ts',
        'experiment/stages/adapt-record.ts',
        'experiment/stages/adapt-select.ts',
        'score/pipeline.ts',
        'score/fusion-grid.ts',
      ],
    ),
    config: {
      adapter: e.adapter,
      // training.json's layout: an artifact of another version is never served.
      trainingRecord: TRAINING_RECORD_VERSION,
      seed,
      k: e.scorer.k,
      backend: e.scorer.backend,
      executionProvider: e.scorer.executionProvider,
      ks: e.eval.ks,
      ...(index === undefined ? {} : { index }),
    },
    inputs,
  };
}

/** Inputs of {@link computeAdapt}. */
export interface AdaptInput {
  readonly dir: string;
  readonly experiment: Experiment;
  readonly seed: number;
  readonly split: Split;
  /**
   * The encoded bank, both ways (the encode stage): the training and validation sets are copied
   * out of the bank in memory, which is then released; validation is scored, and query tokens
   * adapted, through the bank whose memory tokens stay in their file.
   */
  readonly banks: Pick<EncodeStage, 'bank' | 'fileBank' | 'releaseBank'>;
  readonly dataset: LoadedDataset;
  readonly progress: (label: string, done: number, total: number, extra?: string) => void;
  /** The token index the validation grid scores through (the experiment's `index`). */
  readonly openIndex?: FusionGridInput['openIndex'];
}

/**
 * Trains the query adapter on the split's train queries (their labels only), then selects,
 * for each adapter system on its own, the epoch (0 = identity … E) and α of the grid by
 * validation NDCG@10 of sparse fusion with the adapted query tokens (exact top-k search, as at
 * inference): `adapted` with the tail floor, `adapted-zero-floor` with `t_i = 0`
 * (`selectOnValidation`). Test queries are never read: the training input has no place for
 * them, and their labels are removed before anything here can look them up.
 * Writes `adapter.json` and `adapter-zero-floor.json` (each system's selected snapshot) and
 * `training.json`.
 */
export async function computeAdapt(input: AdaptInput): Promise<Record<string, unknown>> {
  const { experiment: e, seed, split, dataset } = input;
  const bank = await input.banks.fileBank();
  const { benchmark } = dataset;
  // Only train and validation labels enter: test labels are not in the object training and
  // selection read (label-isolation test: changing them leaves this artifact byte-identical).
  const labels = dataset.labels.restrictTo([...split.queries.train, ...split.queries.validation]);
  // The experiment file's `split.policy: query-disjoint-shared-bank` is the explicit opt-in to a
  // shared bank; the results stay marked diagnostic (splitMetaOf in score/write.ts).
  assertNoLeak(split, benchmark, {
    allowSharedBank: split.policy === 'query-disjoint-shared-bank',
  });
  const dim = bank.dim;
  const queryRow = new Map(bank.queries.ids.map((id, row) => [id, row] as const));
  const qOffsets = bank.queries.tokenOffsets;
  const mOffsets = bank.memories.tokenOffsets;
  const skippedNoPositive: Record<'train' | 'validation', string[]> = {
    train: [],
    validation: [],
  };

  const build = (memory: OpenedBank, part: 'train' | 'validation'): TrainingQuery[] => {
    const ids = new Set(split.queries[part]);
    const out: TrainingQuery[] = [];
    for (const group of groupByCandidates(bank, benchmark, ids)) {
      const rows = Array.from(group.rows);
      const memoryOffsets = new Int32Array(rows.length + 1);
      rows.forEach((r, i) => {
        memoryOffsets[i + 1] = memoryOffsets[i]! + (mOffsets[r + 1]! - mOffsets[r]!);
      });
      // over shared memory: the training workers read it in place (no second copy)
      const tokenVectors = new Float32Array(
        new SharedArrayBuffer(memoryOffsets[rows.length]! * dim * 4),
      );
      rows.forEach((r, i) =>
        tokenVectors.set(
          memory.memories.tokenVectors.subarray(mOffsets[r]! * dim, mOffsets[r + 1]! * dim),
          memoryOffsets[i]! * dim,
        ),
      );
      const memoryIds = rows.map((r) => bank.memories.ids[r] as string);
      const candidates: CandidateSet = { memoryIds, tokenVectors, memoryOffsets };
      const index = new Map(memoryIds.map((id, i) => [id, i] as const));
      for (const q of group.queries) {
        const row = queryRow.get(q.id);
        if (row === undefined) throw new ArtifactCorruptError(`query ${q.id} is not in the bank`);
        const positives = [...labels.relevant(q.id).keys()]
          .map((m) => index.get(m))
          .filter((i): i is number => i !== undefined);
        // No relevant memory: nothing to learn from or to validate on (listed in training.json).
        if (positives.length === 0) {
          skippedNoPositive[part].push(q.id);
          continue;
        }
        out.push({ queryId: q.id, tokens: tokensOf(row), candidates, positives });
      }
    }
    return out;
  };
  const tokensOf = (row: number): Float32Array =>
    bank.queries.tokenVectors.slice(qOffsets[row]! * dim, qOffsets[row + 1]! * dim);

  // The only read of the memory token vectors in memory: the sets are copies, so the bank can
  // be let go before training (validation below scores through the file).
  const { train, validation } = await copySets(input.banks, build);
  const t0 = performance.now();
  const steps = Math.ceil(train.length / e.adapter.batchSize) * e.adapter.epochs;
  let done = 0;
  const result = await trainAdapterAsync(
    { dim, train, validation },
    {
      rank: e.adapter.rank,
      seed,
      epochs: e.adapter.epochs,
      batchSize: e.adapter.batchSize,
      learningRate: e.adapter.lr,
      weightDecay: e.adapter.weightDecay,
      clipNorm: e.adapter.clip,
      temperature: e.adapter.temperature,
      policy: split.policy,
      workers: e.adapter.workers,
      kernel: e.adapter.kernel,
      splitHash: split.hash,
      modelHash: bank.manifest.model.sha256,
    },
    {
      onStep: (info) => {
        done += 1;
        input.progress('train adapter', done, steps, `loss ${info.loss.toFixed(4)}`);
      },
    },
  );
  const trainSeconds = (performance.now() - t0) / 1000;

  // Selection, per adapter system: validation NDCG@10 of every (epoch, α) with the tail floor
  // (`adapted`) and with t_i = 0 (`adapted-zero-floor`); first best in (epoch, grid) order.
  const t1 = performance.now();
  const { figures, selected } = await selectOnValidation({
    snapshots: result.snapshots,
    split,
    alphas: e.adapter.alphaGrid,
    queryTokensOf: (snapshot) => adaptAll(bank, snapshot.adapter),
    evaluate: (grid) =>
      evaluateFusionGrids(
        {
          ...grid,
          bank,
          benchmark,
          labels,
          k: e.scorer.k,
          ks: e.eval.ks,
          executionProvider: e.scorer.executionProvider,
          backend: e.scorer.backend,
          ...(e.scorer.threads === undefined ? {} : { threads: e.scorer.threads }),
          ...(input.openIndex === undefined ? {} : { openIndex: input.openIndex }),
        },
        ['tail', 'zero'],
      ),
    onSnapshot: (done, total) => input.progress('select adapter', done, total),
  });
  const snapshotOf = (epoch: number) => result.snapshots.find((s) => s.epoch === epoch)!;
  const chosen = snapshotOf(selected.tail.epoch);
  const chosenZero = snapshotOf(selected.zero.epoch);
  await saveAdapter(join(input.dir, ADAPTER_FILE), chosen.adapter);
  await saveAdapter(join(input.dir, ZERO_FLOOR_ADAPTER_FILE), chosenZero.adapter);
  const record: TrainingRecord = {
    schemaVersion: TRAINING_RECORD_VERSION,
    seed,
    splitHash: split.hash,
    modelSha256: bank.manifest.model.sha256,
    trainQueries: result.report.trainQueries,
    validationQueries: validation.length,
    skipped: {
      trainNoTokens: [...result.report.trainNoTokens],
      trainNoPositive: skippedNoPositive.train,
      validationNoPositive: skippedNoPositive.validation,
    },
    stepsPerEpoch: result.report.stepsPerEpoch,
    steps: [...result.stepLosses],
    epochs: result.snapshots.map((snapshot, i) => ({
      epoch: snapshot.epoch,
      trainLoss: snapshot.trainLoss,
      validationLoss: snapshot.validationLoss,
      deltaNorm: snapshot.deltaNorm,
      validation: [...figures[i]!.tail],
      validationZeroFloor: [...figures[i]!.zero],
    })),
    selected: {
      ...selected.tail,
      deltaNorm: chosen.deltaNorm,
      zeroFloor: { ...selected.zero, deltaNorm: chosenZero.deltaNorm },
    },
    clippedSteps: result.clippedSteps,
  };
  await writeFile(join(input.dir, 'training.json'), `${JSON.stringify(record, null, 2)}\n`);
  return {
    selectedEpoch: selected.tail.epoch,
    selectedAlpha: selected.tail.alpha,
    zeroFloorSelectedEpoch: selected.zero.epoch,
    zeroFloorSelectedAlpha: selected.zero.alpha,
    trainSeconds,
    selectionSeconds: (performance.now() - t1) / 1000,
  };
}

/** Builds both sets from the bank in memory, then releases it (no reference is kept here). */
async function copySets(
  banks: AdaptInput['banks'],
  build: (memory: OpenedBank, part: 'train' | 'validation') => TrainingQuery[],
): Promise<{ train: TrainingQuery[]; validation: TrainingQuery[] }> {
  const memory = await banks.bank();
  const sets = { train: build(memory, 'train'), validation: build(memory, 'validation') };
  banks.releaseBank();
  return sets;
}

/**
 * adapt: trains the query adapter on the split's train labels and selects epoch × α per
 * adapter system on its validation labels only (see {@link computeAdapt}); the artifact is
 * `adapter.json`, `adapter-zero-floor.json` and `training.json`.
 */
export async function runAdaptStage(
  ctx: StageContext,
  e: Experiment,
  seed: number,
  inputs: {
    dataset: DatasetStage;
    encode: EncodeStage;
    split: SplitStage;
    index?: IndexStage;
    /** The stage's name suffix; default `@<seed>` (a cross-fitted run adds `/fold<f>`). */
    tag?: string;
  },
): Promise<ArtifactResult> {
  const { dataset, encode, split, index } = inputs;
  const keys = { encode: encode.artifact.key, split: split.artifact.key };
  return ctx.run(
    `adapt${inputs.tag ?? `@${seed}`}`,
    await adaptStageSpec(
      e,
      seed,
      index?.artifact === undefined ? keys : { ...keys, index: index.artifact.key },
      index?.keyConfig,
    ),
    async (dir) =>
      computeAdapt({
        dir,
        experiment: e,
        seed,
        split: split.split,
        banks: encode,
        dataset: await dataset.load(),
        progress: ctx.progress,
        ...(index === undefined
          ? {}
          : { openIndex: async (kernel) => index.open(await encode.fileBank(), kernel) }),
      }),
  );
}
