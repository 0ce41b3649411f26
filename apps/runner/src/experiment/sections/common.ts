import { z } from 'zod';

/** A seed: an unsigned 32-bit integer (training seeds, the split's, the bootstrap's). */
export const seedSchema = z.int().min(0).max(0xffff_ffff);

/** A fusion weight α of the pooled branch (METHOD.md §3). */
export const alphaSchema = z.number().min(0).max(1);
