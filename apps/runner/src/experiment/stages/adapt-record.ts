import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ArtifactCorruptError } from '@bfe/core';
import { adapterQueryTransform, loadAdapter } from '@bfe/adapter';
import type { BankSide, FileBankSide, OpenedBank } from '@bfe/encoder';
import { z } from 'zod';

/**
 * The version of `training.json`. 2: each adapter system has its own selection
 * (`selected.zeroFloor`, `epochs[].validationZeroFloor`, `adapter-zero-floor.json`); a record
 * without it (version 1: `adapted-zero-floor` reused `adapted`'s epoch and α) is refused, never
 * read as if the zero floor had been selected.
 */
export const TRAINING_RECORD_VERSION = 2;

/** The adapt artifact's file of the `adapted` system's selected snapshot. */
export const ADAPTER_FILE = 'adapter.json';
/** The adapt artifact's file of the `adapted-zero-floor` system's selected snapshot. */
export const ZERO_FLOOR_ADAPTER_FILE = 'adapter-zero-floor.json';

const alphaFiguresSchema = z.strictObject({
  alpha: z.number(),
  ndcg10: z.number(),
  recall10: z.number(),
});

const selectionShape = {
  epoch: z.int().nonnegative(),
  alpha: z.number(),
  validationNdcg10: z.number(),
  deltaNorm: z.number().nonnegative(),
};

/** `training.json` of an adapt artifact: the receipts of METHOD.md §4. */
export const trainingRecordSchema = z.strictObject({
  schemaVersion: z.literal(TRAINING_RECORD_VERSION),
  seed: z.int(),
  splitHash: z.string(),
  modelSha256: z.string(),
  /** Train queries trained on; validation queries with a positive (the skipped ones are listed). */
  trainQueries: z.int().nonnegative(),
  validationQueries: z.int().nonnegative(),
  /**
   * Queries left out, by reason (listed, never silent): train queries with no content token or
   * no relevant memory among their candidates (nothing to learn from), validation queries with
   * no relevant memory among their candidates (nothing to select on; evaluation drops them).
   */
  skipped: z.strictObject({
    trainNoTokens: z.array(z.string()),
    trainNoPositive: z.array(z.string()),
    validationNoPositive: z.array(z.string()),
  }),
  stepsPerEpoch: z.int().nonnegative(),
  /** Mean loss of each optimiser step, in order. */
  steps: z.array(z.number()),
  epochs: z.array(
    z.strictObject({
      epoch: z.int().nonnegative(),
      /** Mean step loss of the epoch (null: epoch 0, the identity). */
      trainLoss: z.number().nullable(),
      validationLoss: z.number().nullable(),
      /** ‖ΔA, ΔB‖ from the initialisation. */
      deltaNorm: z.number().nonnegative(),
      /** Validation headline figures per α of the grid, tail floor (`adapted`). */
      validation: z.array(alphaFiguresSchema),
      /** The same with `t_i = 0` (`adapted-zero-floor`). */
      validationZeroFloor: z.array(alphaFiguresSchema),
    }),
  ),
  /**
   * The `adapted` system's selection on validation NDCG@10; `zeroFloor`, the
   * `adapted-zero-floor` system's own, on its own validation NDCG@10.
   */
  selected: z.strictObject({ ...selectionShape, zeroFloor: z.strictObject(selectionShape) }),
  clippedSteps: z.int().nonnegative(),
});
/** A parsed `training.json`. */
export type TrainingRecord = z.infer<typeof trainingRecordSchema>;

/** Reads `training.json` of an adapt artifact. */
export async function readTrainingRecord(dir: string): Promise<TrainingRecord> {
  const raw = JSON.parse(await readFile(join(dir, 'training.json'), 'utf8')) as unknown;
  const parsed = trainingRecordSchema.safeParse(raw);
  if (!parsed.success) {
    const version = (raw as { schemaVersion?: unknown } | null)?.schemaVersion ?? 1;
    throw new ArtifactCorruptError(
      version === TRAINING_RECORD_VERSION
        ? `${dir}/training.json is not a training record`
        : `${dir}/training.json is a training record of version ${String(version)}, not ` +
            `${TRAINING_RECORD_VERSION} (no selection of its own for adapted-zero-floor)`,
    );
  }
  return parsed.data;
}

/** Every query content token of the bank through the adapter (rows stay aligned). */
export function adaptAll(
  bank: OpenedBank<BankSide | FileBankSide>,
  adapter: Parameters<typeof adapterQueryTransform>[0],
): Float32Array {
  const rows = bank.queries.tokenVectors.length / bank.dim;
  return adapterQueryTransform(adapter)(bank.queries.tokenVectors, rows, bank.dim);
}

/** A selected adapter applied to the bank's query tokens, with its α. */
export interface SelectedQueryTokens {
  readonly queryTokens: Float32Array;
  readonly alpha: number;
}

/**
 * The selected adapters of an adapt artifact, applied to every query token of `bank`: the
 * `adapted` system's with its α, `zeroFloor` the `adapted-zero-floor` system's (the same
 * `queryTokens` array when both selected the same epoch), and the facts `results.json`
 * records about both.
 *
 * @example
 * const s = await loadSelectedAdapter(adaptDir, bank);
 * s.queryTokens; // Float32Array [queryTokens * 384]; s.zeroFloor.alpha; // 0.5
 */
export async function loadSelectedAdapter(
  dir: string,
  bank: OpenedBank<BankSide | FileBankSide>,
): Promise<
  SelectedQueryTokens & { zeroFloor: SelectedQueryTokens; meta: Record<string, unknown> }
> {
  const record = await readTrainingRecord(dir);
  const { selected } = record;
  const zf = selected.zeroFloor;
  const adapter = await loadAdapter(join(dir, ADAPTER_FILE));
  const queryTokens = adaptAll(bank, adapter);
  const zeroFloorTokens =
    zf.epoch === selected.epoch
      ? queryTokens
      : adaptAll(bank, await loadAdapter(join(dir, ZERO_FLOOR_ADAPTER_FILE)));
  return {
    queryTokens,
    alpha: selected.alpha,
    zeroFloor: { queryTokens: zeroFloorTokens, alpha: zf.alpha },
    meta: {
      seed: record.seed,
      rank: adapter.rank,
      selectedEpoch: selected.epoch,
      selectedAlpha: selected.alpha,
      validationNdcg10: selected.validationNdcg10,
      deltaNorm: selected.deltaNorm,
      // Epoch 0 is the identity adapter: the adapted row is then sparse fusion with a
      // re-selected α, not a trained adapter.
      identity: selected.epoch === 0,
      // adapted-zero-floor's own selection, on its own validation NDCG@10.
      zeroFloor: {
        selectedEpoch: zf.epoch,
        selectedAlpha: zf.alpha,
        validationNdcg10: zf.validationNdcg10,
        deltaNorm: zf.deltaNorm,
        identity: zf.epoch === 0,
      },
      splitHash: record.splitHash,
      selection:
        'validation NDCG@10 over epoch × α, per system (adapted: tail floor; ' +
        'adapted-zero-floor: t_i = 0); test labels never read',
    },
  };
}
