import { z } from 'zod';

/**
 * The experiment's `model` section (the encode stage, METHOD.md §1 and §8): the frozen encoder,
 * its truncation or windows, precision, provider and threads.
 */
export const modelSectionSchema = z
  .strictObject({
    name: z.string().min(1).default('all-minilm-l6-v2'),
    /** A model directory holding bfe-model.json (overrides `name`'s cache entry). */
    dir: z.string().min(1).optional(),
    /** Truncation in tokens (specials included), up to the model's position limit. */
    maxLength: z.int().min(2).optional(),
    /**
     * Windowed memories (METHOD.md §8): a memory longer than `size` tokens (specials included,
     * up to the model's position limit) is encoded as overlapping windows `stride` content
     * tokens apart, each content token kept once; queries stay truncated at `maxLength`.
     * Left out: memories are truncated at `maxLength`, and every key and file stays as it was.
     */
    window: z
      .strictObject({ size: z.int().min(3), stride: z.int().positive() })
      .refine((w) => w.stride < w.size, 'window.stride must be below window.size')
      .optional(),
    dtype: z.enum(['float32', 'float16']).default('float32'),
    executionProvider: z.enum(['cpu', 'webgpu']).default('cpu'),
    threads: z.int().positive().optional(),
    /**
     * Texts per encoder chunk (default 2048, the encoder's): the unit a sharded encode
     * (`bfe run --shard i/n`) slices the memories by. In the encode key only when set.
     */
    chunkSize: z.int().positive().optional(),
  })
  .prefault({});
