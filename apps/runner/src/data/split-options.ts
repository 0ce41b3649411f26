import { z } from 'zod';
import { ConfigError, splitPolicySchema } from '@bfe/core';

const splitOptionsSchema = z.strictObject({
  policy: splitPolicySchema,
  seed: z.coerce.number().int(),
  ratios: z
    .string()
    .transform((s) => s.split(',').map((x) => Number(x.trim())))
    .pipe(z.tuple([z.number().nonnegative(), z.number().nonnegative(), z.number().nonnegative()])),
});

/** Validates the split command's options at the CLI boundary. */
export function parseSplitOptions(opts: {
  policy: string;
  seed: string;
  ratios: string;
}): z.infer<typeof splitOptionsSchema> {
  const result = splitOptionsSchema.safeParse({
    policy: opts.policy,
    seed: opts.seed,
    ratios: opts.ratios,
  });
  if (!result.success)
    throw new ConfigError(`Invalid split options:\n${z.prettifyError(result.error)}`);
  return result.data;
}
