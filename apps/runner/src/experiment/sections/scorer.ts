import { z } from 'zod';
import { bm25ConfigSchema } from './bm25.js';
import { alphaSchema } from './common.js';

/**
 * The experiment's `scorer` section (the score stage, METHOD.md §2–3): k, the training-free α,
 * the k sweep, the kernel, and BM25's text and IDF (bm25.ts).
 */
export const scorerSectionSchema = z
  .strictObject({
    k: z.int().positive().default(64),
    /** The training-free fusion weight (METHOD.md §3 default 0.5). */
    alpha: alphaSchema.default(0.5),
    /** ks of the sensitivity sweep (empty: none). */
    kSweep: z.array(z.int().positive()).default([16, 32, 64, 128]),
    /** The kernel: onnxruntime (default) or the plain JavaScript reference (CPU only). */
    backend: z.enum(['onnxruntime', 'js']).default('onnxruntime'),
    executionProvider: z.enum(['cpu', 'webgpu']).default('cpu'),
    threads: z.int().positive().optional(),
    bm25: bm25ConfigSchema.optional(),
  })
  .prefault({});
