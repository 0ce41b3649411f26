import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { ConfigError } from '@bfe/core';

/**
 * A calibrated relevance estimate: logistic regression on a memory's absolute scores (the
 * pooled cosine `p_q·p_m` and the tail-floor sparse score `s_sparse`, METHOD.md §1–2), so
 * `P(relevant) = σ(intercept + w_pooled·pooled + w_sparse·sparse)`. Unlike the fused score, a
 * per-query z-score (METHOD.md §3), it means the same across queries and banks, so a caller
 * can threshold it (`minScore`). Fitted by `bfe calibrate` on a training split only; the
 * threshold it suggests is chosen on the validation split. Valid for the encoder it was
 * fitted with (its model SHA-256, a store's `Embedder.model`).
 */
export const relevanceCalibrationSchema = z.strictObject({
  schemaVersion: z.literal(1),
  /** The calibration's name and version, e.g. `all-minilm-l6-v2/longmemeval-s/v1`. */
  name: z.string().min(1),
  model: z.strictObject({ name: z.string(), sha256: z.string().min(1) }),
  /** The truncation the features were computed at. */
  maxLength: z.number().int().positive(),
  features: z.tuple([z.literal('pooled'), z.literal('sparse')]),
  intercept: z.number(),
  weights: z.tuple([z.number(), z.number()]),
  /** A `minScore` chosen on validation (best F1 at telling "nothing relevant here"). */
  threshold: z.number().min(0).max(1),
  /** Where the fit came from: data, split, counts, regularisation (for the reader). */
  fitted: z.record(z.string(), z.unknown()),
});

/** A parsed {@link relevanceCalibrationSchema}. */
export type RelevanceCalibration = z.infer<typeof relevanceCalibrationSchema>;

/**
 * The calibrated relevance of one memory from its absolute scores.
 * @example
 * relevance(calibration, 0.61, 0.58); // 0.83: a probability in (0, 1)
 */
export function relevance(c: RelevanceCalibration, pooled: number, sparse: number): number {
  const z = c.intercept + c.weights[0] * pooled + c.weights[1] * sparse;
  return 1 / (1 + Math.exp(-z));
}

/** The calibration files shipped with the store, under `calibration/` beside `src/`. */
export const SHIPPED_CALIBRATIONS = ['relevance-all-minilm-l6-v2.v1.json'] as const;

let shipped: readonly RelevanceCalibration[] | undefined;

/**
 * Parses a calibration file's JSON.
 * @throws {ConfigError} naming each bad field.
 */
export function parseRelevanceCalibration(
  json: unknown,
  source = 'calibration',
): RelevanceCalibration {
  const parsed = relevanceCalibrationSchema.safeParse(json);
  if (!parsed.success) throw new ConfigError(`${source}: ${z.prettifyError(parsed.error)}`);
  return parsed.data;
}

/**
 * The shipped calibrations, read once (`src/search/` and `dist/search/` both sit two levels
 * down). A file not there is skipped (a store built without it has no `relevance`, and
 * `minScore` is refused); the store's tests check that every listed file is shipped.
 */
export function shippedCalibrations(): readonly RelevanceCalibration[] {
  shipped ??= SHIPPED_CALIBRATIONS.flatMap((file) => {
    const url = new URL(`../../calibration/${file}`, import.meta.url);
    let text: string;
    try {
      text = readFileSync(url, 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw error;
    }
    return [parseRelevanceCalibration(JSON.parse(text), file)];
  });
  return shipped;
}

/**
 * The calibration a search uses: the caller's, else the shipped one fitted with the bank's
 * encoder (by model SHA-256), else none (then results carry no `relevance`).
 * @example
 * calibrationFor(view.model)?.name; // 'all-minilm-l6-v2/longmemeval-s/v1' for a MiniLM store
 */
export function calibrationFor(
  model: string,
  given?: RelevanceCalibration,
): RelevanceCalibration | undefined {
  if (given !== undefined) {
    if (given.model.sha256 !== model) {
      throw new ConfigError(
        `calibration '${given.name}' was fitted with model ${given.model.sha256.slice(0, 12)}…, ` +
          `the bank holds ${model.slice(0, 12)}…'s vectors`,
      );
    }
    return given;
  }
  return shippedCalibrations().find((c) => c.model.sha256 === model);
}
