import { z } from 'zod';

const hybridWeightSchema = z.number().min(0).max(1e6);

/**
 * `systems.hybrid` (METHOD.md §8, "Lexical branch": bfe's extension, not the paper's method):
 * the `hybrid` system fuses z(pooled), z(sparse) and z(BM25 over the memories' whole texts)
 * with `weights`, predeclared in the experiment file (scaled to sum 1: `{1, 1, 1}` is thirds);
 * `grid` (a step whose inverse is an integer, e.g. 0.1) adds `hybrid-selected`, its weights
 * chosen on the simplex lattice of that step by validation NDCG@10 only.
 */
export const hybridConfigSchema = z.strictObject({
  weights: z
    .strictObject({
      pooled: hybridWeightSchema,
      sparse: hybridWeightSchema,
      bm25: hybridWeightSchema,
    })
    .refine((w) => w.pooled + w.sparse + w.bm25 > 0, 'the weights must not all be 0'),
  grid: z
    .number()
    .gt(0)
    .max(1)
    .refine((step) => Math.abs(Math.round(1 / step) * step - 1) <= 1e-9, {
      message: '1/grid must be an integer (e.g. 0.5, 0.25, 0.2, 0.1)',
    })
    .optional(),
});
