import { loadSummarySchema, splitSchema } from '@bfe/core';
import { metricValuesSchema, resultsSchema, systemNameSchema } from '@bfe/eval';
import { z } from 'zod';
import { seedMeansSchema } from '../score/seed-means.js';

/** The two headline metrics every table and chart shows (METHOD.md §6). */
export const HEADLINE_METRICS = ['recall@10', 'ndcg@10'] as const;

/** The baseline every Δ column and error bar is measured against, unless `baseline` says otherwise. */
export const DEFAULT_BASELINE = 'pooled';

/**
 * The split a run was evaluated on, with the flags METHOD.md §5 requires. `policy` is absent
 * when no split file applies (`name: 'all'`, a whole benchmark scored without training).
 */
export const reportSplitSchema = z.strictObject({
  /** `test`, `validation`, `train` or `all`; must equal the results file's `split`. */
  name: z.string().min(1),
  policy: splitSchema.shape.policy.optional(),
  /** The split file's content hash, when there is one. */
  hash: z
    .string()
    .regex(/^[0-9a-f]{64}$/)
    .optional(),
  diagnosticOnly: z.boolean(),
  promotionEligible: z.boolean(),
  /** Result markers such as `shared-unlabelled-memory`. */
  marks: splitSchema.shape.marks,
  /**
   * The evaluated part is one the adapter is trained or selected on (`train`, `validation`):
   * the headline says these numbers are on selection data.
   */
  selectionData: z.boolean().optional(),
});

/**
 * The training seeds of a run: the split's seed (one split shared by every training seed,
 * `per-seed`, or null without a split) and the mean over seeds of every system and metric.
 */
export const reportSeedsSchema = z.strictObject({
  splitSeed: z.union([z.int().nonnegative(), z.literal('per-seed')]).nullable(),
  means: seedMeansSchema,
});

/** One point of a k sweep: a k-dependent system's headline figures at scorer k. */
export const kSweepPointSchema = z.strictObject({
  k: z.int().positive(),
  system: systemNameSchema,
  metrics: metricValuesSchema,
});

/** An adapter system's selected epoch and α; `zeroFloor`, `adapted-zero-floor`'s own. */
const adapterSelectionSchema = z.strictObject({
  epoch: z.int().nonnegative(),
  alpha: z.number().min(0).max(1),
  zeroFloor: z
    .strictObject({ epoch: z.int().nonnegative(), alpha: z.number().min(0).max(1) })
    .optional(),
});

/** Training record of the query adapter (METHOD.md §4), one entry per seed. */
export const adapterTrainingSchema = z.strictObject({
  seeds: z
    .array(
      z.strictObject({
        seed: z.int().nonnegative(),
        /** This seed's own selection, when seeds selected differently. */
        selected: adapterSelectionSchema.optional(),
        /** Training loss after each optimiser step, in step order. */
        steps: z.array(z.strictObject({ step: z.int().nonnegative(), loss: z.number() })).min(1),
        /**
         * Mean training loss per epoch; epoch 0 is the identity adapter (before any step).
         * `validationNdcg10` is the selection criterion, when recorded.
         */
        epochs: z
          .array(
            z.strictObject({
              epoch: z.int().nonnegative(),
              loss: z.number(),
              validationNdcg10: z.number().min(0).max(1).optional(),
            }),
          )
          .min(1),
      }),
    )
    .min(1),
  /**
   * The configuration chosen on validation NDCG@10 only (the first seed's, the reported one);
   * `zeroFloor`: `adapted-zero-floor`'s, chosen on its own validation NDCG@10.
   */
  selected: adapterSelectionSchema,
  /** `adapter.from`: the adapter was trained and selected on this other dataset. */
  transferredFrom: z.string().min(1).optional(),
});

/** What the run's receipt says about provenance and cost. */
export const receiptSummarySchema = z.strictObject({
  model: z.string().min(1),
  datasetSha256: z.string().regex(/^[0-9a-f]{64}$/, 'expected a lowercase hex SHA-256'),
  /** The source commit; null outside a git checkout. */
  commit: z
    .string()
    .regex(/^[0-9a-f]{7,40}$/, 'expected a git commit hash')
    .nullable(),
  /** Whether the working tree had uncommitted changes; null when unknown. */
  dirty: z.boolean().nullable(),
  /** Wall time per stage, in run order; `cached` when the stage's artifact was reused. */
  stages: z.array(
    z.strictObject({
      name: z.string().min(1),
      seconds: z.number().nonnegative(),
      cached: z.boolean(),
    }),
  ),
  peakRssBytes: z.int().nonnegative(),
});

/**
 * Everything the run report shows. Checked beyond the shapes: the results' dataset and split
 * match the header, the split flags agree with the policy (METHOD.md §5: a shared bank can never
 * pass as a strict result), the baseline is a listed system, k-sweep points are unique per
 * (k, system) and carry the headline metrics, and the selected adapter epoch was trained.
 *
 * @example
 * reportInputSchema.parse({
 *   experiment: 'locomo-minilm', runId: '2025-01-07T10-00-00Z-3f2a', dataset: 'locomo',
 *   split: { name: 'test', policy: 'connected-bank', diagnosticOnly: false,
 *     promotionEligible: true, marks: [] },
 *   results, // a resultsSchema value with dataset 'locomo', split 'test'
 * });
 */
export const reportInputSchema = z
  .strictObject({
    experiment: z.string().min(1),
    runId: z.string().min(1),
    dataset: z.string().min(1),
    split: reportSplitSchema,
    results: resultsSchema,
    /** The system the Δ columns compare with; default {@link DEFAULT_BASELINE}. */
    baseline: systemNameSchema.optional(),
    kSweep: z.array(kSweepPointSchema).min(1).optional(),
    adapter: adapterTrainingSchema.optional(),
    /** The seed means; with more than one seed they are the headline, `results` the first seed. */
    seeds: reportSeedsSchema.optional(),
    receipt: receiptSummarySchema.optional(),
    /** What loading the dataset dropped, repaired and left unresolved. */
    load: loadSummarySchema.optional(),
  })
  .superRefine((input, ctx) => {
    if (input.results.dataset !== input.dataset) {
      ctx.addIssue({
        code: 'custom',
        path: ['results', 'dataset'],
        message: `results are for '${input.results.dataset}', the report for '${input.dataset}'`,
      });
    }
    if (input.results.split !== input.split.name) {
      ctx.addIssue({
        code: 'custom',
        path: ['results', 'split'],
        message: `results are for split '${input.results.split}', the report for '${input.split.name}'`,
      });
    }
    const { policy, diagnosticOnly, promotionEligible, marks } = input.split;
    if (policy === 'connected-bank' && (diagnosticOnly || !promotionEligible || marks.length > 0)) {
      ctx.addIssue({
        code: 'custom',
        path: ['split'],
        message:
          'a connected-bank split has diagnosticOnly: false, promotionEligible: true and no marks',
      });
    }
    if (
      policy === 'query-disjoint-shared-bank' &&
      (!diagnosticOnly || promotionEligible || !marks.includes('shared-unlabelled-memory'))
    ) {
      ctx.addIssue({
        code: 'custom',
        path: ['split'],
        message:
          'a query-disjoint-shared-bank split has diagnosticOnly: true, promotionEligible: false ' +
          'and the shared-unlabelled-memory mark',
      });
    }
    if (diagnosticOnly && promotionEligible) {
      ctx.addIssue({
        code: 'custom',
        path: ['split', 'promotionEligible'],
        message: 'a diagnostic-only run cannot be promotion-eligible',
      });
    }
    if (input.split.selectionData === true && !['train', 'validation'].includes(input.split.name)) {
      ctx.addIssue({
        code: 'custom',
        path: ['split', 'selectionData'],
        message: `selection data is the train or validation part, not '${input.split.name}'`,
      });
    }
    const names = new Set(input.results.systems.map((s) => s.name));
    const means = input.seeds?.means;
    if (means !== undefined) {
      const first = means.seeds[0];
      if (means.systems.map((s) => s.name).join('\u0000') !== [...names].join('\u0000')) {
        ctx.addIssue({
          code: 'custom',
          path: ['seeds', 'means', 'systems'],
          message: 'the seed means must list the systems of the results, in their order',
        });
      }
      if (first === null && means.seeds.length > 1) {
        ctx.addIssue({
          code: 'custom',
          path: ['seeds', 'means', 'seeds'],
          message: 'a run without a split has one seed',
        });
      }
    }
    if (input.baseline !== undefined && !names.has(input.baseline)) {
      ctx.addIssue({
        code: 'custom',
        path: ['baseline'],
        message: `baseline '${input.baseline}' is not a system of the results`,
      });
    }
    const seen = new Set<string>();
    input.kSweep?.forEach((point, i) => {
      const key = `${point.k}\u0000${point.system}`;
      if (seen.has(key)) {
        ctx.addIssue({
          code: 'custom',
          path: ['kSweep', i],
          message: `duplicate k-sweep point (k ${point.k}, '${point.system}')`,
        });
      }
      seen.add(key);
      for (const metric of HEADLINE_METRICS) {
        if (point.metrics[metric] === undefined) {
          ctx.addIssue({
            code: 'custom',
            path: ['kSweep', i, 'metrics'],
            message: `k-sweep metrics must include ${metric}`,
          });
        }
      }
    });
    if (input.adapter !== undefined) {
      const { epoch } = input.adapter.selected;
      input.adapter.seeds.forEach((seed, i) => {
        if (!seed.epochs.some((e) => e.epoch === epoch)) {
          ctx.addIssue({
            code: 'custom',
            path: ['adapter', 'seeds', i, 'epochs'],
            message: `seed ${seed.seed} has no record of the selected epoch ${epoch}`,
          });
        }
      });
    }
  });

/** A validated report input. */
export type ReportInput = z.infer<typeof reportInputSchema>;
/** The split block of a {@link ReportInput}. */
export type ReportSplit = z.infer<typeof reportSplitSchema>;
/** One k-sweep point of a {@link ReportInput}. */
export type KSweepPoint = z.infer<typeof kSweepPointSchema>;
/** The adapter training block of a {@link ReportInput}. */
export type AdapterTraining = z.infer<typeof adapterTrainingSchema>;
/** The seeds block of a {@link ReportInput}. */
export type ReportSeeds = z.infer<typeof reportSeedsSchema>;
/** The receipt block of a {@link ReportInput}. */
export type ReceiptSummary = z.infer<typeof receiptSummarySchema>;
