import { z } from 'zod';
import { ConfigError } from '@bfe/core';
import type { ModelManifest } from '@bfe/models';
import { hybridConfigSchema } from './hybrid.js';

/**
 * `systems.chunkedPooled` (the paper's Appendix D control): one `chunked-pooled@N` system per
 * size, each memory cut into consecutive, non-overlapping, independent windows of `N` tokens
 * (specials and any passage prefix included, the unit of `maxLength` and `model.window.size`),
 * each window pooled natively by the frozen encoder, the memory scored by its best window
 * against the ordinary pooled query. Sizes are predeclared in the experiment file.
 */
export const chunkedPooledConfigSchema = z.strictObject({
  sizes: z
    .array(z.int().min(3))
    .min(1)
    .refine((s) => new Set(s).size === s.length, 'sizes must not repeat'),
});

/** `systems.chunkedPooled` as parsed. */
export type ChunkedPooledConfig = z.infer<typeof chunkedPooledConfigSchema>;

/**
 * An experiment's `systems` section: systems beyond METHOD.md §6 (the lexical branch, bfe's
 * extension, METHOD.md §8; the paper's chunked-pooled control). Left out: none, and every key
 * and file of the run stays as it was.
 */
export const systemsConfigSchema = z.strictObject({
  hybrid: hybridConfigSchema.optional(),
  chunkedPooled: chunkedPooledConfigSchema.optional(),
});

/**
 * Refuses `systems.chunkedPooled` where its rows could not be what they claim: in a
 * cross-fitted run (whose merged rows are the predeclared systems only).
 * @throws {ConfigError} naming the key.
 */
export function checkChunkedPooled(
  e: {
    readonly split: { readonly folds?: number | undefined };
    readonly systems?: z.output<typeof systemsConfigSchema> | undefined;
  },
  source: string,
): void {
  if (e.systems?.chunkedPooled !== undefined && e.split.folds !== undefined) {
    throw new ConfigError(
      `${source}: systems.chunkedPooled is not scored in a cross-fitted run (split.folds)`,
      { suggestion: 'Run the chunked-pooled systems with split.policy none or a single split.' },
    );
  }
}

/**
 * Refuses sizes the model or the bank cannot give a chunked-pooled row for: beyond the model's
 * positions, or above the bank's own window (`model.window.size`, else `maxLength`) — a memory
 * that fits one window keeps the bank's pooled vector, which must be its untruncated one.
 * @throws {ConfigError} naming the size.
 */
export function checkChunkSizes(
  config: ChunkedPooledConfig,
  manifest: Pick<ModelManifest, 'name' | 'maxPositions'>,
  bank: { readonly maxLength: number; readonly windowSize?: number | undefined },
): void {
  const cap = bank.windowSize ?? bank.maxLength;
  for (const size of config.sizes) {
    if (size > manifest.maxPositions) {
      throw new ConfigError(
        `systems.chunkedPooled.sizes: ${size} is beyond ${manifest.name}'s ${manifest.maxPositions} positions`,
      );
    }
    if (size > cap) {
      throw new ConfigError(
        `systems.chunkedPooled.sizes: ${size} is above the bank's ${bank.windowSize === undefined ? 'maxLength' : 'window size'} ${cap}: a memory of ${cap + 1}..${size} tokens would be one window without its untruncated pooled vector in the bank`,
        { suggestion: `Raise model.maxLength (or model.window.size) to at least ${size}.` },
      );
    }
  }
}
