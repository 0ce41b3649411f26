import { z } from 'zod';
import { ConfigError } from '@bfe/core';

/**
 * What a store is created with and keeps for its life (recorded in `MANIFEST.json`): the codec
 * its segments keep token states in, and the windows long memories are encoded in. A store
 * opened with other settings refuses; `bfe store compact --codec` migrates the codec.
 */

/** Token-state codecs of the store's segments (the index package's codecs). */
export const storeCodecSchema = z.enum(['fp32', 'fp16', 'sq8', 'sq4']);
export type StoreCodec = z.infer<typeof storeCodecSchema>;

/**
 * The codec of a new store, predeclared from the store's own quality run (`pnpm bench:store
 * --parts codecs`, BENCHMARKS.md "The memory store"): sq8 ranks as fp32 does within the paired
 * intervals on LoCoMo and LongMemEval-S, at a quarter of the bytes; sq4 costs up to a quarter
 * point of R@10 there.
 */
export const DEFAULT_STORE_CODEC: StoreCodec = 'sq8';

/** Windowed encoding of long memories (METHOD.md §8): `size` tokens, a new window every `stride`. */
export const storeWindowSchema = z.strictObject({
  size: z.number().int().min(3),
  stride: z.number().int().positive(),
});
export type StoreWindow = z.infer<typeof storeWindowSchema>;

/** The settings a store keeps: absent fields are the defaults of stores made before them. */
export interface StoreSettings {
  readonly codec: StoreCodec;
  readonly window?: StoreWindow;
}

/** What the caller asked for: each field unset keeps the store's (or the default for a new one). */
export interface RequestedSettings {
  readonly codec?: StoreCodec;
  readonly window?: StoreWindow | null;
  /** Not a setting the store keeps: bytes of decoded rows and views held in memory. */
  readonly cacheBytes?: number;
}

/** The settings of a store whose manifest records `recorded` (fp32, no window when absent). */
export function recordedSettings(recorded: {
  readonly codec?: StoreCodec | undefined;
  readonly window?: StoreWindow | undefined;
}): StoreSettings {
  return {
    codec: recorded.codec ?? 'fp32',
    ...(recorded.window === undefined ? {} : { window: recorded.window }),
  };
}

/** The settings of a new store. */
export function newSettings(requested: RequestedSettings): StoreSettings {
  return {
    codec: requested.codec ?? DEFAULT_STORE_CODEC,
    ...(requested.window == null ? {} : { window: requested.window }),
  };
}

/**
 * Checks a request against a store's settings.
 * @throws ConfigError naming the setting that differs and how to proceed
 */
export function checkSettings(
  dir: string,
  kept: StoreSettings,
  requested: RequestedSettings,
): void {
  if (requested.codec !== undefined && requested.codec !== kept.codec)
    throw new ConfigError(
      `store ${dir} keeps token states as ${kept.codec}; the store was opened with codec ${requested.codec}`,
      {
        suggestion: `Open it without a codec (or with ${kept.codec}), or migrate it: bfe store compact ${dir} --codec ${requested.codec}.`,
      },
    );
  const a = kept.window;
  const b = requested.window;
  if (b !== undefined && (a?.size !== b?.size || a?.stride !== b?.stride))
    throw new ConfigError(
      `store ${dir} encodes memories ${describe(a)}; the store was opened with ${describe(b ?? undefined)}`,
      {
        suggestion:
          'Open it without a window setting (it keeps its own), or re-add the memories into a new store.',
      },
    );
}

function describe(w: StoreWindow | undefined): string {
  return w === undefined
    ? 'truncated, without windows'
    : `in windows of ${w.size} tokens, stride ${w.stride}`;
}
