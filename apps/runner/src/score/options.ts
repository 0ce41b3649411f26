import { z } from 'zod';
import { ConfigError } from '@bfe/core';

/** A comma-separated list of positive integers, e.g. `1,5,10`, ascending and without repeats. */
export const intListSchema = z
  .string()
  .regex(/^\s*\d+(\s*,\s*\d+)*\s*$/, 'expected comma-separated integers, e.g. 1,5,10')
  .transform((s) => [...new Set(s.split(',').map((x) => Number(x.trim())))].sort((a, b) => a - b))
  .pipe(z.array(z.int().positive()).min(1));

/**
 * `--transitions from,to`, repeatable, or several pairs as `a,b;c,d`: the system pairs whose
 * query-level transitions are printed, in the order given, without repeats.
 */
export const transitionPairsOptionSchema = z
  .array(z.string())
  .transform((values) => [
    ...new Set(
      values
        .flatMap((v) => v.split(';'))
        .map((p) => p.trim())
        .filter((p) => p !== ''),
    ),
  ])
  .pipe(
    z.array(
      z
        .string()
        .regex(/^[^,]+,[^,]+$/, 'expected two systems, from,to, e.g. pooled,sparse-fusion')
        .transform((p) => p.split(',').map((x) => x.trim()) as [string, string])
        .refine(([a, b]) => a !== '' && b !== '' && a !== b, 'expected two different systems'),
    ),
  );

const ksSchema = intListSchema.refine((ks) => ks.includes(10), {
  message: 'must include the headline k = 10',
});

const scoreOptionsSchema = z.strictObject({
  bank: z.string().min(1),
  dataset: z.string().min(1),
  split: z.string().min(1).optional(),
  splitPart: z.enum(['train', 'validation', 'test']),
  k: z.coerce.number().int().positive(),
  alpha: z.coerce.number().min(0).max(1),
  ks: ksSchema,
  /** `none` turns the sweep off. */
  kSweep: z.union([z.literal('none').transform((): number[] => []), intListSchema]),
  out: z.string().min(1).optional(),
  threads: z.coerce.number().int().positive().optional(),
  executionProvider: z.enum(['cpu', 'webgpu']),
  resamples: z.coerce.number().int().positive(),
  seed: z.coerce.number().int().min(0).max(0xffff_ffff),
  /** `pooled,sparse,bm25`: the hybrid system's weights, scaled to sum 1. */
  hybrid: z
    .string()
    .regex(/^\s*[0-9.]+\s*,\s*[0-9.]+\s*,\s*[0-9.]+\s*$/, 'expected three weights, e.g. 1,1,1')
    .transform((s) => s.split(',').map(Number))
    .refine((w) => w.every((x) => Number.isFinite(x) && x >= 0) && w.some((x) => x > 0), {
      message: 'weights must be ≥ 0 and not all 0',
    })
    .transform(([pooled, sparse, bm25]) => {
      const sum = pooled! + sparse! + bm25!;
      return { pooled: pooled! / sum, sparse: sparse! / sum, bm25: bm25! / sum };
    })
    .optional(),
  /** Left out: the dataset's declared language decides (`resolveBm25Options`). */
  bm25Language: z.enum(['english', 'none']).optional(),
  bm25Idf: z.enum(['candidates', 'corpus']).default('candidates'),
  transitions: transitionPairsOptionSchema.default([]),
});

/** `bfe score`'s options, validated. */
export type ScoreCliOptions = z.output<typeof scoreOptionsSchema>;

/**
 * Validates `bfe score`'s options at the CLI boundary.
 *
 * @throws ConfigError naming each bad option.
 * @example
 * parseScoreCliOptions({ bank: 'b', dataset: 'locomo', splitPart: 'test', k: '64', alpha: '0.5',
 *   ks: '1,4,5,8,10,16,25,50', kSweep: '16,32,64,128', resamples: '10000', seed: '42' });
 * // { …, k: 64, ks: [1, 4, 5, 8, 10, 16, 25, 50], kSweep: [16, 32, 64, 128] }
 */
export function parseScoreCliOptions(raw: Record<string, unknown>): ScoreCliOptions {
  const parsed = scoreOptionsSchema.safeParse(raw);
  if (!parsed.success) {
    throw new ConfigError(`Invalid score options:\n${z.prettifyError(parsed.error)}`);
  }
  return parsed.data;
}

const evalOptionsSchema = z.strictObject({
  perQuery: z.string().min(1),
  results: z.string().min(1).optional(),
  ks: ksSchema.optional(),
  subtasks: z
    .string()
    .transform((s) => s.split(',').map((x) => x.trim()))
    .pipe(z.array(z.string().min(1)).min(1))
    .optional(),
  base: z.string().min(1),
  resamples: z.coerce.number().int().positive().optional(),
  seed: z.coerce.number().int().min(0).max(0xffff_ffff).optional(),
  transitions: transitionPairsOptionSchema.default([]),
});

/** `bfe eval`'s options, validated. */
export type EvalCliOptions = z.output<typeof evalOptionsSchema>;

/**
 * Validates `bfe eval`'s options at the CLI boundary.
 *
 * @throws ConfigError naming each bad option.
 */
export function parseEvalCliOptions(raw: Record<string, unknown>): EvalCliOptions {
  const parsed = evalOptionsSchema.safeParse(raw);
  if (!parsed.success) {
    throw new ConfigError(`Invalid eval options:\n${z.prettifyError(parsed.error)}`);
  }
  return parsed.data;
}
