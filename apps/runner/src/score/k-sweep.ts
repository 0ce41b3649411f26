import { z } from 'zod';
import { comparePaired, systemResult, systemResultSchema } from '@bfe/eval';
import type { Evaluation } from '@bfe/eval';
import { terminalTableLines } from '@bfe/core';
import type { SweepPoint } from './pipeline.js';

/**
 * `k-sweep.json`: the k-dependent systems (sparse fusion and its ablations) at each k of the
 * sweep, α fixed, each with its headline figures and the paired difference to pooled.
 */
export const kSweepSchema = z.strictObject({
  schemaVersion: z.literal(1),
  dataset: z.string().min(1),
  split: z.string().min(1),
  alpha: z.number().min(0).max(1),
  /** The k of results.json. */
  mainK: z.int().positive(),
  points: z.array(
    z.strictObject({
      k: z.int().positive(),
      /** Candidate groups whose bank held fewer than k tokens, searched whole. */
      clampedGroups: z.int().nonnegative(),
      systems: z.array(systemResultSchema),
    }),
  ),
});
export type KSweep = z.infer<typeof kSweepSchema>;

/**
 * Builds and validates the sweep file.
 *
 * @throws Error when the result does not fit {@link kSweepSchema} (a programmer error).
 */
export function buildKSweep(input: {
  readonly dataset: string;
  readonly split: string;
  readonly alpha: number;
  readonly mainK: number;
  readonly pooled: Evaluation;
  readonly points: readonly SweepPoint[];
  readonly resamples: number;
  readonly seed: number;
}): KSweep {
  const options = { resamples: input.resamples, seed: input.seed };
  const candidate = {
    schemaVersion: 1 as const,
    dataset: input.dataset,
    split: input.split,
    alpha: input.alpha,
    mainK: input.mainK,
    points: input.points.map((p) => ({
      k: p.k,
      clampedGroups: p.clampedGroups,
      systems: p.systems.map((s) =>
        systemResult(s.name, s.evaluation, {
          pooled: comparePaired(s.evaluation, input.pooled, options),
        }),
      ),
    })),
  };
  const parsed = kSweepSchema.safeParse(candidate);
  if (!parsed.success) throw new Error(`buildKSweep: ${z.prettifyError(parsed.error)}`);
  return parsed.data;
}

/** One line per k: Recall@10 / NDCG@10 of each swept system, with Δ vs pooled. */
export function renderKSweep(sweep: KSweep): string {
  const names = sweep.points[0]?.systems.map((s) => s.name) ?? [];
  const head = ['k', ...names.map((n) => `${n} R@10 / nDCG@10 (Δ vs pooled)`)];
  const rows = sweep.points.map((p) => [
    `${p.k}${p.k === sweep.mainK ? '*' : ''}${p.clampedGroups > 0 ? ` (${p.clampedGroups} clamped)` : ''}`,
    ...p.systems.map((s) => {
      const c = s.comparisons?.pooled;
      const d = (x: number | undefined): string =>
        x === undefined ? '?' : `${x >= 0 ? '+' : '−'}${Math.abs(x).toFixed(4)}`;
      return (
        `${(s.metrics['recall@10'] as number).toFixed(4)} / ${(s.metrics['ndcg@10'] as number).toFixed(4)}` +
        ` (${d(c?.['recall@10']?.meanDiff)} / ${d(c?.['ndcg@10']?.meanDiff)})`
      );
    }),
  ]);
  return [
    `k sweep (α = ${sweep.alpha}; * = the k of the main table)`,
    ...terminalTableLines({ head, rows }),
  ].join('\n');
}
