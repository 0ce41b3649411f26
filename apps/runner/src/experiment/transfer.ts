import { resolve } from 'node:path';
import { ConfigError } from '@bfe/core';
import type { ArtifactResult } from '../cache/store.js';
import { readExperiment, type Experiment } from './config.js';
import type { StageContext } from './stage.js';
import { runDatasetStage, type DatasetStage } from './stages/dataset.js';
import { runEncodeStage } from './stages/encode.js';
import { encodeIdentity } from './stages/encode-shard.js';
import { runIndexStage } from './stages/index.js';
import { runSplitStage, type SplitStage } from './stages/split.js';

/** Where a transferred adapter comes from: `results.json`'s `meta.adapter.transferredFrom`. */
export interface TransferredFrom {
  /** The source experiment's name. */
  readonly experiment: string;
  /** The source experiment's dataset (`dataset.name` as written there). */
  readonly dataset: string;
  /** The cache key of the source's adapt artifact (the adapter applied). */
  readonly adaptKey: string;
}

/** A transfer source, opened: its experiment, file, dataset stage and stage context. */
export interface TransferSource {
  readonly experiment: Experiment;
  /** The source experiment file, resolved. */
  readonly path: string;
  readonly dataset: DatasetStage;
  /** The run's stage context with every stage name prefixed `source/`. */
  readonly ctx: StageContext;
}

/**
 * Opens the source of `adapter.from` (sections/adapter-from.ts) before the target encodes anything:
 * reads the source experiment (relative to `configPath`), refuses one that trains no adapter of
 * its own or is cross-fitted, runs its dataset stage, and refuses an encoder whose query side
 * differs from the target's (model SHA-256, pooling, query prefix, query truncation), since the
 * adapter maps that encoder's query token states. Undefined without `adapter.from`.
 *
 * @throws {ConfigError} naming both experiment files.
 * @example
 * const source = await openTransferSource(ctx, e, 'configs/experiments/transfer/x.yaml', dataset);
 * source?.experiment.name; // 'locomo-minilm'
 */
export async function openTransferSource(
  ctx: StageContext,
  e: Experiment,
  configPath: string,
  dataset: DatasetStage,
): Promise<TransferSource | undefined> {
  const from = e.adapter.from;
  if (from === undefined) return undefined;
  const path = resolve(configPath, '..', from);
  const source = await readExperiment(path);
  if (!source.adapter.enabled) {
    throw new ConfigError(
      `${configPath}: adapter.from: ${path} trains no adapter of its own (adapter.enabled is not true)`,
      { suggestion: 'Name an experiment with adapter.enabled: true and a split to train on.' },
    );
  }
  if (source.split.folds !== undefined) {
    throw new ConfigError(
      `${configPath}: adapter.from: ${path} is cross-fitted (split.folds ${source.split.folds}): ` +
        'it has one adapter per fold, and transferring one of them is not supported',
      { suggestion: 'Name a source experiment with one split (no split.folds).' },
    );
  }
  const sourceCtx: StageContext = {
    ...ctx,
    run: (name, spec, compute) => ctx.run(`source/${name}`, spec, compute),
  };
  const sourceDataset = await runDatasetStage(sourceCtx, source, path);
  const [target, sourceId] = await Promise.all([
    encodeIdentity(e, dataset),
    encodeIdentity(source, sourceDataset),
  ]);
  const querySide = (id: typeof target): Record<string, unknown> => ({
    model: id.modelManifest.name,
    sha256: id.modelManifest.modelSha256,
    pooling: id.modelManifest.pooling,
    queryPrefix: id.modelManifest.prefixes.query,
    maxLength: id.config.maxLength,
  });
  const [a, b] = [querySide(target), querySide(sourceId)];
  const differ = Object.keys(a).filter((key) => a[key] !== b[key]);
  if (differ.length > 0) {
    const show = (side: Record<string, unknown>): string =>
      differ.map((key) => `${key} ${JSON.stringify(side[key])}`).join(', ');
    throw new ConfigError(
      `${configPath}: adapter.from: the query encoder differs from ${path}'s: ` +
        `${configPath} has ${show(a)}; ${path} has ${show(b)}. The adapter maps one encoder's ` +
        'query token states and cannot be applied to another',
      { suggestion: 'Give both experiments the same model (and model.maxLength).' },
    );
  }
  return { experiment: source, path, dataset: sourceDataset, ctx: sourceCtx };
}

/**
 * The source's adapter at training seed `seed`: the source's split (its own split seed, or
 * `seed` under `split.seed: per-seed`), encode, index and adapt stages, under the keys a run of
 * the source experiment gives them (so its cached adapt artifact is reused). Before anything is
 * trained, a source on the target's own dataset whose train or validation part holds any query
 * the target evaluates (`evaluated`: the target's evaluated part, or every query without a
 * split) is refused: the adapter would be trained or selected on the target's test labels.
 *
 * @throws {ConfigError} naming both files and the shared queries.
 */
export async function runTransferAdapt(
  source: TransferSource,
  target: { readonly experiment: Experiment; readonly configPath: string },
  seed: number,
  evaluated: () => Promise<readonly string[]>,
): Promise<{ adapt: ArtifactResult; transferredFrom: TransferredFrom }> {
  const s = source.experiment;
  const ctx = source.ctx;
  const split: SplitStage = await runSplitStage(
    ctx,
    s,
    s.split.seed === 'per-seed' ? seed : s.split.seed,
    source.dataset,
  );
  if (datasetIdentity(s, source.path) === datasetIdentity(target.experiment, target.configPath)) {
    const seen = new Set([...split.split.queries.train, ...split.split.queries.validation]);
    const shared = (await evaluated()).filter((id) => seen.has(id));
    if (shared.length > 0) {
      throw new ConfigError(
        `${target.configPath}: adapter.from: ${source.path} trains or selects its adapter on ` +
          `${shared.length} of the queries ${target.configPath} evaluates (${shared.slice(0, 3).join(', ')}` +
          `${shared.length > 3 ? ', …' : ''}): the same dataset, and its train/validation part ` +
          'overlaps the evaluated part, so test labels would train or select the adapter',
        {
          suggestion:
            "Train on another dataset, or evaluate the source split's own test part (the same split).",
        },
      );
    }
  }
  const encode = await runEncodeStage(ctx, s, source.dataset);
  const index = await runIndexStage(ctx, s, encode, source.dataset);
  const { runAdaptStage } = await import('./stages/adapt.js');
  const adapt = await runAdaptStage(ctx, s, seed, {
    dataset: source.dataset,
    encode,
    split,
    ...(index === undefined ? {} : { index }),
  });
  return {
    adapt,
    transferredFrom: { experiment: s.name, dataset: s.dataset.name, adaptKey: adapt.key },
  };
}

/** A dataset's identity across experiment files: `lmeb:` folders resolved as the dataset stage does. */
function datasetIdentity(e: Experiment, configPath: string): string {
  const name = e.dataset.name;
  return name.startsWith('lmeb:')
    ? `lmeb:${resolve(configPath, '..', name.slice('lmeb:'.length))}`
    : name;
}
