import { z } from 'zod';
import { ConfigError, splitPolicySchema } from '@bfe/core';

const splitOptionsSchema = z.strictObject({
  policy: splitPolicySchema,
  seed: z.coerce.number().int(),
  folds: z.coerce.number().int().min(3).optional(),
  fold: z.coerce.number().int().nonnegative().optional(),
  ratios: z
    .string()
    .transform((s) => s.split(',').map((x) => Number(x.trim())))
    .pipe(z.tuple([z.number().nonnegative(), z.number().nonnegative(), z.number().nonnegative()])),
});

/** Validates the split command's options at the CLI boundary. */
export function parseSplitOptions(opts: {
  policy: string;
  seed: string;
  ratios?: string | undefined;
  folds?: string | undefined;
  fold?: string | undefined;
}): z.infer<typeof splitOptionsSchema> {
  if (opts.folds !== undefined && opts.ratios !== undefined) {
    throw new ConfigError(
      '--ratios cannot be given with --folds: each fold tests one fold of units, validates on the previous fold and trains on the rest.',
    );
  }
  if (opts.fold !== undefined && opts.folds === undefined) {
    throw new ConfigError('--fold needs --folds.');
  }
  const result = splitOptionsSchema.safeParse({
    policy: opts.policy,
    seed: opts.seed,
    ratios: opts.ratios ?? '60,20,20',
    ...(opts.folds === undefined ? {} : { folds: opts.folds }),
    ...(opts.fold === undefined ? {} : { fold: opts.fold }),
  });
  if (!result.success)
    throw new ConfigError(`Invalid split options:\n${z.prettifyError(result.error)}`);
  return result.data;
}
