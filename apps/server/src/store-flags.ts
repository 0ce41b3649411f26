import type { Command } from 'commander';
import { z } from 'zod';
import type { StoreOptions } from '@bfe/store';

/**
 * The store's settings on a command line, shared by `bfe serve` and `bfe mcp`: a new store's
 * windowed encoding and token codec (an existing store keeps its own), and the memory the store
 * holds of what it reads.
 */
export const storeFlagsSchema = {
  /** A new store's windowed encoding of long memories (`StoreOptions.window`): `SIZE,STRIDE`. */
  window: z
    .string()
    .regex(/^\d+,\d+$/, '--window takes SIZE,STRIDE in tokens, e.g. 256,192')
    .transform((text) => {
      const [size, stride] = text.split(',').map(Number) as [number, number];
      return { size, stride };
    })
    .optional(),
  /** A new store's token codec (`StoreOptions.codec`); an existing store keeps its own. */
  codec: z.enum(['fp32', 'fp16', 'sq8', 'sq4']).optional(),
  /** MiB of decoded segment rows and bank views held in memory (`StoreOptions.cacheBytes`). */
  cacheMb: z.coerce.number().int().min(0).optional(),
};

/** Usage text of {@link storeFlags}. */
export const STORE_FLAGS_USAGE =
  '[--window SIZE,STRIDE] [--codec fp32|fp16|sq8|sq4] [--cache-mb 1024]';

/** Adds the flags of {@link storeFlagsSchema} to `command`. */
export function storeFlags(command: Command): Command {
  return command
    .option(
      '--window <size,stride>',
      'a new store encodes memories longer than SIZE tokens in windows STRIDE apart, not cut',
    )
    .option('--codec <codec>', "a new store's token codec: fp32, fp16, sq8 or sq4 (default sq8)")
    .option('--cache-mb <n>', 'MiB of segment rows and bank views held in memory (default 1024)');
}

/** The parsed flags as store options. */
export function storeFlagOptions(args: {
  readonly window?: { size: number; stride: number } | undefined;
  readonly codec?: StoreOptions['codec'] | undefined;
  readonly cacheMb?: number | undefined;
}): StoreOptions {
  return {
    ...(args.window === undefined ? {} : { window: args.window }),
    ...(args.codec === undefined ? {} : { codec: args.codec }),
    ...(args.cacheMb === undefined ? {} : { cacheBytes: args.cacheMb * 1024 * 1024 }),
  };
}
