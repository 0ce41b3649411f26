import { z } from 'zod';
import { TRAIN_KERNELS } from '@bfe/adapter';
import { adapterFromSchema } from './adapter-from.js';
import { alphaSchema } from './common.js';

/**
 * The experiment's `adapter` section (the adapt stage, METHOD.md §4): the query adapter's
 * training settings and selection grid, or `from`: another experiment's adapter
 * (adapter-from.ts).
 */
export const adapterSectionSchema = z
  .strictObject({
    enabled: z.boolean().default(false),
    rank: z.int().positive().default(32),
    /**
     * Training epochs, at least 1 (epoch 0, the identity adapter, is always one of the
     * selectable snapshots). A run without training is `enabled: false`.
     */
    epochs: z
      .int()
      .min(1, {
        message:
          'adapter.epochs must be at least 1: epoch 0 (the identity adapter) is always evaluated beside the trained epochs; for no training set adapter.enabled: false',
      })
      .default(2),
    batchSize: z.int().positive().default(16),
    lr: z.number().positive().default(1e-4),
    weightDecay: z.number().min(0).default(1e-4),
    clip: z.number().positive().default(1),
    temperature: z.number().positive().default(0.07),
    /** α values tried on validation, with every epoch 0..epochs (METHOD.md §4). */
    alphaGrid: z.array(alphaSchema).min(1).default([0.25, 0.5, 0.75]),
    /**
     * Worker threads of the training (each batch split across them). Part of the cache key:
     * float64 sums in another order differ in the last bits, so the count is pinned, not
     * taken from the machine.
     */
    workers: z.int().min(1).max(16).default(2),
    /**
     * What runs MaxSim's heavy algebra in training: `onnxruntime` (a float32 MatMul on
     * onnxruntime's CPU provider, the maxima recomputed exactly in WebAssembly SIMD with
     * MaxSim's backward fused into that pass: the losses bit for bit, the gradients within
     * float64 rounding of the reference's), `onnxruntime-js` (the same MatMul, the float64
     * parts in JavaScript, unfused: the `js` adapter bit for bit) or `js` (the reference
     * loops). Part of the cache key.
     */
    kernel: z.enum(TRAIN_KERNELS).default('onnxruntime'),
    from: adapterFromSchema.optional(), // another experiment's adapter (adapter-from.ts)
  })
  .prefault({});
