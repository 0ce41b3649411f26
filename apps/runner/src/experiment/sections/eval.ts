import { z } from 'zod';
import { seedSchema } from './common.js';

const ksSchema = z
  .array(z.int().positive())
  .min(1)
  .refine((ks) => ks.includes(10), 'must include the headline k = 10')
  .transform((ks) => [...new Set(ks)].sort((a, b) => a - b));

/** The experiment's `eval` section (METHOD.md §6): cut-offs, bootstrap resamples and seed. */
export const evalSectionSchema = z
  .strictObject({
    /**
     * Cut-offs of Recall@k and NDCG@k: `@bfe/eval`'s DEFAULT_KS, the memory budgets
     * K ∈ {4, 8, 10, 16} of the paper's budget analysis included.
     */
    ks: ksSchema.default([1, 4, 5, 8, 10, 16, 25, 50]),
    resamples: z.int().positive().default(10_000),
    seed: seedSchema.default(42),
  })
  .prefault({});
