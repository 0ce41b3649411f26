import { DataError } from '@bfe/core';
import { z } from 'zod';
import { aggregate, checkSubtasks } from './evaluate.js';
import type { DroppedQuery, Evaluation, QueryRecord } from './evaluate.js';
import { DEFAULT_KS, assertNoDuplicates, checkKs, gradesOf, queryMetrics } from './metrics.js';
import { systemNameSchema } from './results.js';

const uniqueIds = z
  .array(z.string().min(1))
  .refine((ids) => new Set(ids).size === ids.length, { message: 'ids must not repeat' });

/**
 * One line of `per-query.jsonl`: one system on one query. `ranked` is the candidate-filtered
 * ranking (its top 50, or top max-k when larger); `relevant` the query's relevant memories as
 * the labels give them, empty for a query dropped for having none; `grades`, parallel to
 * `relevant`, only when one of them is above 1 (absent: every grade is 1); `cluster`, when
 * known, the query's cluster (its connected bank component, `queryClusters` of `@bfe/split`),
 * so cluster intervals can be recomputed too ({@link clustersFromPerQuery}). Every metric can
 * be recomputed from these lines alone ({@link recomputeFromPerQuery}).
 *
 * @example
 * perQueryLineSchema.parse({
 *   system: 'pooled', queryId: 'conv-26:q0', subtask: '2',
 *   ranked: ['conv-26:D1:3', 'conv-26:D2:8'], relevant: ['conv-26:D1:3'],
 * });
 */
export const perQueryLineSchema = z
  .strictObject({
    system: systemNameSchema,
    queryId: z.string().min(1),
    subtask: z.string().min(1),
    ranked: uniqueIds,
    relevant: uniqueIds,
    grades: z.array(z.int().positive()).optional(),
    cluster: z.string().min(1).optional(),
  })
  .refine((l) => l.grades === undefined || l.grades.length === l.relevant.length, {
    message: 'grades must give one grade per relevant memory',
    path: ['grades'],
  });

/** One validated per-query line. */
export type PerQueryLine = z.infer<typeof perQueryLineSchema>;

/**
 * The per-query lines of one system's evaluation: evaluated queries first (in evaluation
 * order), then the dropped ones with `relevant: []`, so the file lists every query. With
 * `clusters`, each line whose query has a cluster id carries it as `cluster`.
 *
 * @example
 * [...perQueryLines('pooled', evaluation, new Map([['q1', 'conv-26']]))][0];
 * // { system: 'pooled', queryId: 'q1', subtask: '1', ranked: ['m3', 'm1', …], relevant: ['m1'],
 * //   cluster: 'conv-26' }
 */
export function* perQueryLines(
  system: string,
  evaluation: Evaluation,
  clusters?: ReadonlyMap<string, string>,
): Generator<PerQueryLine> {
  const clusterOf = (queryId: string): { cluster?: string } => {
    const id = clusters?.get(queryId);
    return id === undefined ? {} : { cluster: id };
  };
  for (const q of evaluation.queries) {
    yield {
      system,
      queryId: q.queryId,
      subtask: q.subtask,
      ranked: [...q.ranked],
      relevant: [...q.relevant],
      ...(q.grades === undefined ? {} : { grades: [...q.grades] }),
      ...clusterOf(q.queryId),
    };
  }
  for (const q of evaluation.droppedQueries) {
    yield {
      system,
      queryId: q.queryId,
      subtask: q.subtask,
      ranked: [...q.ranked],
      relevant: [],
      ...clusterOf(q.queryId),
    };
  }
}

/**
 * The query → cluster map the lines carry, or undefined when no line has a `cluster` (a file
 * written before cluster ids were recorded).
 *
 * @throws DataError when some lines carry a cluster and others do not, or one query is given
 *   two different clusters.
 * @example
 * clustersFromPerQuery(await readPerQueryJsonl('runs/x/per-query.jsonl'));
 * // Map { 'conv-26:q0' => 'conv-26', … }
 */
export function clustersFromPerQuery(
  lines: Iterable<PerQueryLine>,
): Map<string, string> | undefined {
  const out = new Map<string, string>();
  let missing: string | undefined;
  for (const line of lines) {
    if (line.cluster === undefined) {
      missing ??= line.queryId;
      continue;
    }
    const known = out.get(line.queryId);
    if (known !== undefined && known !== line.cluster) {
      throw new DataError(
        `Query '${line.queryId}' is in cluster '${known}' on one line and '${line.cluster}' on another.`,
      );
    }
    out.set(line.queryId, line.cluster);
  }
  if (out.size === 0) return undefined;
  if (missing !== undefined) {
    throw new DataError(
      `Some per-query lines carry a cluster and others do not (e.g. query '${missing}').`,
    );
  }
  return out;
}

/**
 * Options of {@link recomputeFromPerQuery}.
 *
 * @example
 * const options: RecomputeOptions = { ks: [1, 5, 10, 25, 50], subtasks: ['1', '2', '3', '4'] };
 */
export interface RecomputeOptions {
  /** Cut-offs; default `[1, 4, 5, 8, 10, 16, 25, 50]`. Exact only up to the length of each `ranked`. */
  readonly ks?: readonly number[];
  /**
   * Declared subtasks in order. Default: the order of first appearance in the lines, which
   * can differ from the declared order only in the last bits of the headline sum — and
   * silently omits a subtask none of whose queries appear.
   */
  readonly subtasks?: readonly string[];
}

/**
 * Recomputes every system's evaluation from per-query lines alone: no candidates, labels or
 * benchmark needed. The lines' `ranked` lists are already candidate-filtered, so the metrics
 * are the same numbers `evaluate` produced (same code path for the per-query metrics and the
 * same summation order), as long as `ranked` holds at least the top max-k ids.
 * `diagnostics` is `null`: candidate sets are not in the file.
 *
 * @throws DataError when a (system, query) pair repeats, a ranking repeats an id, a subtask is
 *   not declared, or a system has no query with a relevant memory.
 * @example
 * const bySystem = recomputeFromPerQuery(await readPerQueryJsonl('runs/x/per-query.jsonl'));
 * bySystem.get('pooled')?.metrics['ndcg@10']; // the results file's figure
 */
export function recomputeFromPerQuery(
  lines: Iterable<PerQueryLine>,
  options: RecomputeOptions = {},
): Map<string, Evaluation> {
  const ks = checkKs(options.ks ?? DEFAULT_KS);
  // Subtask → the first query seen in it, to name a query when the subtask is not declared.
  const firstQuery = new Map<string, string>();
  const bySystem = new Map<
    string,
    { records: QueryRecord[]; dropped: DroppedQuery[]; ids: Set<string> }
  >();
  for (const line of lines) {
    let group = bySystem.get(line.system);
    if (group === undefined) {
      group = { records: [], dropped: [], ids: new Set() };
      bySystem.set(line.system, group);
    }
    if (group.ids.has(line.queryId)) {
      throw new DataError(`System '${line.system}' has two lines for query '${line.queryId}'.`);
    }
    group.ids.add(line.queryId);
    if (!firstQuery.has(line.subtask)) firstQuery.set(line.subtask, line.queryId);
    assertNoDuplicates(line.ranked, line.queryId);
    if (line.relevant.length === 0) {
      group.dropped.push({ queryId: line.queryId, subtask: line.subtask, ranked: line.ranked });
      continue;
    }
    const grades =
      line.grades === undefined
        ? undefined
        : gradesOf(new Map(line.relevant.map((id, i) => [id, line.grades?.[i] as number])));
    group.records.push({
      queryId: line.queryId,
      subtask: line.subtask,
      metrics: queryMetrics(line.ranked, grades ?? new Set(line.relevant), ks),
      ranked: line.ranked,
      relevant: line.relevant,
      ...(grades === undefined ? {} : { grades: [...grades.values()] }),
    });
  }
  const subtasks = options.subtasks ?? [...firstQuery.keys()];
  checkSubtasks(
    subtasks,
    [...firstQuery].map(([subtask, queryId]) => [queryId, subtask] as const),
  );
  const out = new Map<string, Evaluation>();
  for (const [system, group] of bySystem) {
    try {
      out.set(system, aggregate(group.records, group.dropped, subtasks, ks, null));
    } catch (error) {
      if (error instanceof DataError) {
        throw new DataError(`System '${system}': ${error.message}`, { cause: error });
      }
      throw error;
    }
  }
  return out;
}
