import { z } from 'zod';
import { ConfigError } from '@bfe/core';
import { DEFAULT_CHUNK_SIZE, DEFAULT_MAX_SCORE_FLOATS } from '@bfe/index';

/**
 * The scorer's settings (METHOD.md §2–3), the source of truth for their types and defaults.
 * `k = 64` and `α = 0.5` are the paper's training-free defaults.
 */
export const scoreOptionsSchema = z.strictObject({
  /** Bank tokens returned per query token. */
  k: z.number().int().min(1).default(64),
  /** Weight of the standardised pooled branch in the fusion. */
  alpha: z.number().min(0).max(1).default(0.5),
  /** `k` larger than the candidate bank: search the whole bank (true) or fail (false). */
  clampK: z.boolean().default(false),
  /** Also compute the exhaustive token MaxSim baseline (from the same products). */
  maxsim: z.boolean().default(true),
  /**
   * Keep each query's token proposals (`QueryScores.hits`) for token evidence
   * (`explainCandidates`); off by default, since they cost `n_q × k` entries per query.
   */
  keepHits: z.boolean().default(false),
  /** Bank tokens per kernel call. */
  chunkSize: z.number().int().min(1).default(DEFAULT_CHUNK_SIZE),
  /** Cap on one call's `rows × chunk` score matrix, in floats. */
  maxScoreFloats: z.number().int().min(1).default(DEFAULT_MAX_SCORE_FLOATS),
});

/** Settings as a caller writes them (every field optional). */
export type ScoreOptions = z.input<typeof scoreOptionsSchema>;
/** Settings with defaults filled in. */
export type ResolvedScoreOptions = z.output<typeof scoreOptionsSchema>;

/**
 * Parses scorer settings.
 * @throws {ConfigError} naming each bad field.
 * @example
 * parseScoreOptions({ k: 32 }); // { k: 32, alpha: 0.5, clampK: false, maxsim: true, … }
 */
export function parseScoreOptions(options: unknown = {}): ResolvedScoreOptions {
  const parsed = scoreOptionsSchema.safeParse(options);
  if (!parsed.success) {
    throw new ConfigError(`scorer options: ${z.prettifyError(parsed.error)}`);
  }
  return parsed.data;
}
