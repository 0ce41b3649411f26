import { z } from 'zod';
import { ConfigError } from '@bfe/core';
import { intListSchema } from '../score/options.js';
import { EXPLAIN_SYSTEMS } from './pipeline.js';

const explainOptionsSchema = z
  .strictObject({
    bank: z.string().min(1),
    dataset: z.string().min(1),
    split: z.string().min(1).optional(),
    splitPart: z.enum(['train', 'validation', 'test']),
    system: z.enum(EXPLAIN_SYSTEMS),
    k: z.coerce.number().int().positive(),
    alpha: z.coerce.number().min(0).max(1),
    /** An adapt artifact directory (its selected adapters), for the adapted systems. */
    adapter: z.string().min(1).optional(),
    threads: z.coerce.number().int().positive().optional(),
    /** One query's worked example. */
    query: z.string().min(1).optional(),
    memory: z.string().min(1).optional(),
    removeTop: z.coerce.number().int().min(1).max(6),
    removeToken: z.array(z.string().min(1)).default([]),
    /** The dataset-wide table. */
    aggregate: z.boolean().default(false),
    top: intListSchema,
    out: z.string().min(1).optional(),
  })
  .refine((o) => (o.query === undefined) !== !o.aggregate, {
    message: 'give either --query <id> or --aggregate',
    path: ['query'],
  })
  .refine((o) => !o.aggregate || (o.memory === undefined && o.removeToken.length === 0), {
    message: '--memory and --remove-token go with --query, not --aggregate',
    path: ['aggregate'],
  })
  .refine((o) => o.system.startsWith('adapted') === (o.adapter !== undefined), {
    message: 'the adapted systems need --adapter <adapt dir>, and only they take one',
    path: ['adapter'],
  });

/** `bfe explain`'s options, validated. */
export type ExplainCliOptions = z.output<typeof explainOptionsSchema>;

/**
 * Validates `bfe explain`'s options at the CLI boundary.
 *
 * @throws ConfigError naming each bad option.
 * @example
 * parseExplainCliOptions({ bank: 'b', dataset: 'locomo', splitPart: 'test', system: 'sparse-fusion',
 *   k: '64', alpha: '0.5', removeTop: '6', top: '1,2,4', aggregate: true });
 * // { …, k: 64, top: [1, 2, 4], aggregate: true, removeToken: [] }
 */
export function parseExplainCliOptions(raw: Record<string, unknown>): ExplainCliOptions {
  const parsed = explainOptionsSchema.safeParse(raw);
  if (!parsed.success) {
    throw new ConfigError(`Invalid explain options:\n${z.prettifyError(parsed.error)}`);
  }
  return parsed.data;
}
