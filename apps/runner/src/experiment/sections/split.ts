import { z } from 'zod';
import { seedSchema } from './common.js';

/**
 * The experiment's `split` section (the split stage, METHOD.md §5): the policy, the split's own
 * seed, the parts' ratios, the evaluated part and cross-fitting folds (checked beside the rest
 * of the experiment by `checkCrossFit`, crossfit.ts).
 */
export const splitSectionSchema = z
  .strictObject({
    /**
     * `connected-bank` (strict), `query-disjoint-shared-bank` (explicit opt-in, diagnostic
     * only) or `none` (every query evaluated; nothing trained or selected).
     */
    policy: z
      .enum(['connected-bank', 'query-disjoint-shared-bank', 'none'])
      .default('connected-bank'),
    /**
     * The split's own seed: one split shared by every training seed (the reproduction notes'
     * protocol, METHOD.md §8), or `per-seed`: a new split per training seed, drawn with that
     * seed (the explicit option).
     */
    seed: z.union([seedSchema, z.literal('per-seed')]).default(42),
    /**
     * Train, validation, test: fractions (sum 1), percentages (sum 100) or integer counts
     * (sum: the number of units, known only once the dataset is loaded).
     */
    ratios: z
      .tuple([z.number().min(0), z.number().min(0), z.number().min(0)])
      .default([0.6, 0.2, 0.2])
      .superRefine(checkRatios),
    /**
     * The part the result tables report. `train` or `validation` marks every output
     * `selectionData: true`: the adapter is trained and selected on those parts.
     */
    evaluate: z.enum(['train', 'validation', 'test']).default('test'),
    /** Cross-fitting (METHOD.md §8): K ≥ 3 folds of units, each tested once (crossfit.ts). */
    folds: z.int().min(3).optional(),
  })
  .prefault({});

// The same readings as @bfe/split's allocateUnits, checked before any stage runs; only integer
// counts must wait for the dataset (their sum must be its number of units).
function checkRatios(ratios: readonly number[], ctx: z.RefinementCtx): void {
  const sum = ratios.reduce((a, b) => a + b, 0);
  if (sum <= 0) {
    ctx.addIssue({ code: 'custom', message: 'the ratios sum to zero; nothing to allocate' });
    return;
  }
  const near = (target: number): boolean => Math.abs(sum - target) <= target * 1e-9;
  if (ratios.every((r) => Number.isInteger(r)) || near(1) || near(100)) return;
  ctx.addIssue({
    code: 'custom',
    message:
      `[${ratios.join(', ')}] sum to ${Number(sum.toPrecision(12))}: give fractions that sum to 1 (e.g. [0.6, 0.2, 0.2]), ` +
      'percentages that sum to 100, or integer counts',
  });
}
