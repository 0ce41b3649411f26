import { z } from 'zod';
import { contentHash } from '@bfe/core';

const countsSchema = z.strictObject({
  rows: z.number().int().nonnegative(),
  tokens: z.number().int().nonnegative(),
  truncated: z.number().int().nonnegative(),
  withoutTokens: z.number().int().nonnegative(),
});

/**
 * `bank.json`: the receipt of one encoder pass, written last, so a directory without it (or
 * whose files do not match it) is incomplete and never read.
 */
export const bankManifestSchema = z.strictObject({
  schemaVersion: z.literal(1),
  dataset: z.string(),
  benchmarkHash: z.string(),
  model: z.strictObject({
    name: z.string(),
    modelId: z.string(),
    sha256: z.string(),
    pooling: z.enum(['mean', 'cls', 'last']),
    dimension: z.number().int().positive(),
    prefixes: z.strictObject({ query: z.string(), passage: z.string() }),
  }),
  dtype: z.enum(['float32', 'float16']),
  /** Truncation of the queries, and of the memories when `window` is absent. */
  maxLength: z.number().int().positive(),
  /**
   * Present only when the memories were encoded in windows (METHOD.md §8): the window (tokens,
   * specials included) and stride (content tokens), the pooled vector's definition, how many
   * memories were longer than one window, and the windows run over all memories. The token
   * files' rows are `memories.tokens` and `queries.tokens`; queries are never windowed
   * (`queries.truncated` counts those cut at `maxLength`).
   */
  window: z
    .strictObject({
      size: z.number().int().positive(),
      stride: z.number().int().positive(),
      pooling: z.string(),
      windowedMemories: z.number().int().nonnegative(),
      memoryWindows: z.number().int().nonnegative(),
    })
    .optional(),
  executionProvider: z.string(),
  memories: countsSchema,
  queries: countsSchema,
  files: z.array(
    z.strictObject({
      path: z.string(),
      bytes: z.number().int().nonnegative(),
      sha256: z.string().regex(/^[0-9a-f]{64}$/),
    }),
  ),
  seconds: z.number().nonnegative(),
  createdAt: z.string(),
});
export type BankManifest = z.infer<typeof bankManifestSchema>;

export const BANK_MANIFEST_FILE = 'bank.json';

/**
 * The identity of a bank's contents: SHA-256 of the canonical JSON of its manifest without
 * `createdAt` and `seconds`. The manifest lists every Arrow file with its SHA-256, so two
 * encodings of the same texts with the same model and settings share this hash, whenever and
 * however fast they ran; results files record it instead of the manifest file's bytes.
 *
 * @example
 * bankContentHash(bank.manifest); // '5d41…' (64 hex digits)
 */
export function bankContentHash(manifest: BankManifest): string {
  const content: Partial<BankManifest> = { ...manifest };
  delete content.createdAt;
  delete content.seconds;
  return contentHash(content);
}
