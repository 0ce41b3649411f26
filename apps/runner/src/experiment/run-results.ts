import { DataError, loadSummarySchema, type LoadSummary } from '@bfe/core';
import { resultsSchema, type Results } from '@bfe/eval';
import { z } from 'zod';
import { checkSeedLengths, seedMeans, seedMeansShape } from '../score/seed-means.js';

const splitSeedSchema = z.union([z.int().nonnegative(), z.literal('per-seed')]);

/** The adapter each training seed selected on validation NDCG@10 (METHOD.md §4). */
export const seedSelectionSchema = z.strictObject({
  seed: z.int().nonnegative(),
  selectedEpoch: z.int().nonnegative(),
  selectedAlpha: z.number().min(0).max(1),
  /**
   * Epoch 0 was selected: this seed's `adapted` row is the identity adapter (no trained
   * weights) with a re-selected α, not a trained adapter.
   */
  identity: z.boolean(),
  /** `adapted-zero-floor`'s own selection, on its own validation NDCG@10 (`t_i = 0`). */
  zeroFloor: z
    .strictObject({
      selectedEpoch: z.int().nonnegative(),
      selectedAlpha: z.number().min(0).max(1),
    })
    .optional(),
});

/**
 * A run folder's `results.json`: the mean over the training seeds with its sample standard
 * deviation for every system and metric, the per-seed figures beside it, and each seed's full
 * evaluation results (also under `seeds/<seed>/results.json`). A run without a split has one
 * entry, seed null, and plain figures (std null).
 *
 * @example
 * runResultsSchema.parse(JSON.parse(readFileSync('runs/locomo-minilm/<id>/results.json', 'utf8')));
 * // { kind: 'run-results', seeds: [42, 43, 44], splitSeed: 42, selectionData: false,
 * //   identicalAcrossSeeds: false,
 * //   systems: [{ name: 'adapted', metrics: { 'ndcg@10': { mean, std, perSeed: [a, b, c] } }, … }],
 * //   runs: [{ seed: 42, splitHash, results }, …] }
 */
export const runResultsSchema = z
  .strictObject({
    schemaVersion: z.literal(1),
    kind: z.literal('run-results'),
    dataset: z.string().min(1),
    /** The evaluated part (`test`, `validation`, `train`), or `all` without a split. */
    split: z.string().min(1),
    /** The split's seed: one split shared by every training seed, `per-seed`, or null. */
    splitSeed: splitSeedSchema.nullable(),
    /**
     * The evaluated part is one the adapter is trained (`train`) or selected (`validation`)
     * on: these figures are not held-out results.
     */
    selectionData: z.boolean(),
    /**
     * What loading the dataset dropped, repaired and left unresolved (totals and per reason);
     * absent only in results written before it was recorded.
     */
    load: loadSummarySchema.optional(),
    ...seedMeansShape,
    /** Per training seed, when the adapter was trained. */
    adapter: z.strictObject({ seeds: z.array(seedSelectionSchema).min(1) }).optional(),
    /** Each training seed's results, in seed order. */
    runs: z
      .array(
        z.strictObject({
          seed: z.int().nonnegative().nullable(),
          splitHash: z.string().nullable(),
          results: resultsSchema,
        }),
      )
      .min(1),
  })
  .superRefine((value, ctx) => {
    checkSeedLengths(value, ctx);
    const recomputed = seedMeans(value.runs);
    const stated = {
      seeds: value.seeds,
      identicalAcrossSeeds: value.identicalAcrossSeeds,
      systems: value.systems,
    };
    if (JSON.stringify(recomputed) !== JSON.stringify(stated)) {
      ctx.addIssue({
        code: 'custom',
        path: ['systems'],
        message: 'the seed means do not match the per-seed results in runs',
      });
    }
  });

/** A run folder's `results.json`. */
export type RunResults = z.infer<typeof runResultsSchema>;
/** One seed's adapter selection in {@link RunResults}. */
export type SeedSelection = z.infer<typeof seedSelectionSchema>;

/** Inputs of {@link buildRunResults}: every training seed's results, in seed order. */
export interface RunResultsInput {
  readonly splitSeed: number | 'per-seed' | null;
  readonly selectionData: boolean;
  /** The dataset stage's load report counts. */
  readonly load?: LoadSummary | undefined;
  readonly runs: ReadonlyArray<{
    readonly seed: number | null;
    readonly splitHash: string | null;
    readonly results: Results;
    readonly selected?:
      | {
          readonly epoch: number;
          readonly alpha: number;
          /** `adapted-zero-floor`'s own selection. */
          readonly zeroFloor?: { readonly epoch: number; readonly alpha: number };
        }
      | undefined;
  }>;
}

/** The run folder's `results.json` from every training seed's results (validated). */
export function buildRunResults(input: RunResultsInput): RunResults {
  const first = input.runs[0];
  if (first === undefined) throw new Error('buildRunResults: a run has at least one seed');
  const means = seedMeans(input.runs);
  const selections = input.runs.flatMap((r) =>
    r.selected === undefined || r.seed === null
      ? []
      : [
          {
            seed: r.seed,
            selectedEpoch: r.selected.epoch,
            selectedAlpha: r.selected.alpha,
            identity: r.selected.epoch === 0,
            ...(r.selected.zeroFloor === undefined
              ? {}
              : {
                  zeroFloor: {
                    selectedEpoch: r.selected.zeroFloor.epoch,
                    selectedAlpha: r.selected.zeroFloor.alpha,
                  },
                }),
          },
        ],
  );
  return runResultsSchema.parse({
    schemaVersion: 1,
    kind: 'run-results',
    dataset: first.results.dataset,
    split: first.results.split,
    splitSeed: input.splitSeed,
    selectionData: input.selectionData,
    ...(input.load === undefined ? {} : { load: input.load }),
    ...means,
    ...(selections.length === 0 ? {} : { adapter: { seeds: selections } }),
    runs: input.runs.map((r) => ({ seed: r.seed, splitHash: r.splitHash, results: r.results })),
  });
}

/**
 * Reads a run folder's `results.json`.
 * @throws {DataError} naming the file and each bad field.
 */
export function parseRunResults(raw: unknown, file: string): RunResults {
  const parsed = runResultsSchema.safeParse(raw);
  if (!parsed.success) {
    throw new DataError(`${file} is not a run results file:\n${z.prettifyError(parsed.error)}`, {
      file,
    });
  }
  return parsed.data;
}
