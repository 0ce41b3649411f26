import { z } from 'zod';
import { TIE_DEPTH, TIE_SEED, type TieCounts } from '@bfe/scorer';
import { terminalTableLines } from '@bfe/core';

/** One system's tie counts as `results.json` records them. */
const systemTiesSchema = z.strictObject({
  /** Rankings counted: every ranked query (also those the evaluator drops). */
  queries: z.int().nonnegative(),
  /** Rankings with at least one tied position within the top `depth`. */
  queriesWithTies: z.int().nonnegative(),
  /** Positions within the top `depth` whose score equals a neighbour's, summed over queries. */
  tiedPositions: z.int().nonnegative(),
  /** `tiedPositions / queries` (0 without queries). */
  meanPerQuery: z.number().nonnegative(),
});

/**
 * `results.json`'s `meta.ties`: how exact score ties were broken (METHOD.md §8) and, per
 * system, how many ranked positions within the top `depth` the tie order decided.
 */
export const tiesMetaSchema = z
  .strictObject({
    order: z.literal('sha256(`${seed}:${memoryId}`) ascending'),
    seed: z.int().nonnegative(),
    depth: z.int().positive(),
    systems: z.record(z.string().min(1), systemTiesSchema),
  })
  .refine(
    (t) =>
      Object.values(t.systems).every(
        (s) => s.queriesWithTies <= s.queries && s.tiedPositions <= s.queries * t.depth,
      ),
    { message: 'tie counts exceed the queries or the depth' },
  );
export type TiesMeta = z.infer<typeof tiesMetaSchema>;

/**
 * Builds and validates `meta.ties` from each system's counts, in the systems' order.
 *
 * @throws Error when the counts do not fit {@link tiesMetaSchema} (a programmer error).
 * @example
 * tiesMeta([['bm25', { queries: 4, queriesWithTies: 1, tiedPositions: 3 }]]);
 * // { order: 'sha256(…) ascending', seed: 42, depth: 10, systems: { bm25: { …, meanPerQuery: 0.75 } } }
 */
export function tiesMeta(counts: Iterable<readonly [string, TieCounts]>): TiesMeta {
  const systems: Record<string, z.input<typeof systemTiesSchema>> = {};
  for (const [name, c] of counts) {
    systems[name] = { ...c, meanPerQuery: c.queries === 0 ? 0 : c.tiedPositions / c.queries };
  }
  const parsed = tiesMetaSchema.safeParse({
    order: 'sha256(`${seed}:${memoryId}`) ascending',
    seed: TIE_SEED,
    depth: TIE_DEPTH,
    systems,
  });
  if (!parsed.success) throw new Error(`tiesMeta: ${z.prettifyError(parsed.error)}`);
  return parsed.data;
}

/** `bfe score`'s tie table: per system, tied positions within the top 10 and queries affected. */
export function renderTies(ties: TiesMeta): string {
  const rows = Object.entries(ties.systems).map(([name, s]) => [
    name,
    String(s.tiedPositions),
    s.meanPerQuery.toFixed(3),
    `${s.queriesWithTies} of ${s.queries}`,
  ]);
  return [
    `ties within the top ${ties.depth} (broken by SHA-256 of "${ties.seed}:<memory id>", never by file order)`,
    ...terminalTableLines({
      head: ['system', 'tied positions', 'per query', 'queries with a tie'],
      align: ['left', 'right', 'right', 'right'],
      rows,
    }),
  ].join('\n');
}
