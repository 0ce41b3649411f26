import type { Results } from '@bfe/eval';
import { z } from 'zod';
import { fixed4, type Table } from './format.js';

/** The part of `results.meta.crossFit` the report reads (written by the runner's crossfit stage). */
const crossFitMetaSchema = z.object({
  folds: z.int().min(3),
  seed: z.int(),
  units: z.enum(['component', 'query']),
  rule: z.string().nullable(),
  perFold: z.array(
    z.object({
      fold: z.int().nonnegative(),
      testUnits: z.array(z.string()),
      nTestQueries: z.int().nonnegative(),
      metrics: z.record(z.string(), z.record(z.string(), z.number())),
      adapter: z.object({ selectedEpoch: z.int(), selectedAlpha: z.number() }).loose().optional(),
    }),
  ),
});

/** The cross-fitting facts of a results file; undefined for an ordinary split. */
export function crossFitOf(results: Results): z.infer<typeof crossFitMetaSchema> | undefined {
  const raw = (results.meta as Record<string, unknown> | undefined)?.crossFit;
  if (raw === undefined) return undefined;
  return crossFitMetaSchema.parse(raw);
}

/**
 * One line for the report's header: how the folds were made and that every query was tested
 * once; undefined for an ordinary split.
 *
 * @example
 * crossFitFact(results); // '5 folds of conversations (seed 42), every query tested once; …'
 */
export function crossFitFact(results: Results): string | undefined {
  const c = crossFitOf(results);
  if (c === undefined) return undefined;
  const units = c.units === 'component' ? 'units (connected components)' : 'queries (haystacks)';
  return (
    `cross-fitted: ${c.folds} folds of ${units}, seed ${c.seed}; every query tested once, the ` +
    `figures pooled over all folds; ${c.rule ?? ''}`
  );
}

/**
 * Each fold's own figures: the units it tested, its test queries, Recall@10 / NDCG@10 of the
 * listed systems on its test part, and the adapter it selected on its own validation part.
 *
 * @example
 * crossFitTable(results, ['pooled', 'sparse-fusion', 'adapted']); // one row per fold
 */
export function crossFitTable(results: Results, systems: readonly string[]): Table | undefined {
  const c = crossFitOf(results);
  if (c === undefined) return undefined;
  const shown = systems.filter((s) => c.perFold[0]?.metrics[s] !== undefined);
  const hasAdapter = c.perFold.some((p) => p.adapter !== undefined);
  const units = (ids: readonly string[]): string =>
    ids.length <= 3 ? ids.join(', ') : `${ids.slice(0, 2).join(', ')}, … (${ids.length})`;
  return {
    title: 'Per fold (each on its own test part; R@10 / NDCG@10)',
    head: [
      'fold',
      'tested',
      'queries',
      ...shown,
      ...(hasAdapter ? ['adapter epoch / α (validation)'] : []),
    ],
    align: ['right', 'left', 'right', ...shown.map(() => 'right' as const), 'right'],
    rows: c.perFold.map((p) => [
      String(p.fold),
      units(p.testUnits),
      String(p.nTestQueries),
      ...shown.map((s) => {
        const m = p.metrics[s] ?? {};
        return `${fixed4(m['recall@10'] ?? 0)} / ${fixed4(m['ndcg@10'] ?? 0)}`;
      }),
      ...(hasAdapter
        ? [
            p.adapter === undefined
              ? '—'
              : `${p.adapter.selectedEpoch} / ${p.adapter.selectedAlpha}`,
          ]
        : []),
    ]),
  };
}
