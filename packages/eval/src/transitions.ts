import { ConfigError, DataError } from '@bfe/core';
import { z } from 'zod';
import type { Evaluation } from './evaluate.js';

/**
 * The fields of a `per-query.jsonl` line (`PerQueryLine`) the count reads; declared here so
 * that results.ts, which builds transitions, does not import the per-query module.
 */
export interface TransitionLine {
  readonly system: string;
  readonly queryId: string;
  readonly subtask: string;
  readonly ranked: readonly string[];
  readonly relevant: readonly string[];
}

/**
 * What a "hit query" is (the paper's Appendix D): a query with at least one relevant memory in
 * the system's top k. Queries without any relevant memory are dropped (METHOD.md §6) and never
 * counted.
 */
export const HIT_DEFINITION = 'at least one relevant memory in the top k';

/** The cut-off of a hit when none is given: the headline k = 10. */
export const DEFAULT_TRANSITION_K = 10;

/**
 * The predeclared pairs a results file carries when both systems are there: the training-free
 * fusion against the pooled embedding, and the adapter against both.
 */
export const DEFAULT_TRANSITION_PAIRS: ReadonlyArray<readonly [string, string]> = Object.freeze([
  ['pooled', 'sparse-fusion'],
  ['pooled', 'adapted'],
  ['sparse-fusion', 'adapted'],
] as const);

/**
 * The {@link DEFAULT_TRANSITION_PAIRS} whose two systems are both among `systems`.
 *
 * @example
 * transitionPairsFor(['pooled', 'bm25', 'sparse-fusion']); // [['pooled', 'sparse-fusion']]
 */
export function transitionPairsFor(systems: Iterable<string>): [string, string][] {
  const names = new Set(systems);
  return DEFAULT_TRANSITION_PAIRS.filter(([a, b]) => names.has(a) && names.has(b)).map(([a, b]) => [
    a,
    b,
  ]);
}

const count = z.int().nonnegative();
const countsShape = {
  nQueries: count,
  recoveries: count,
  reverse: count,
  bothHit: count,
  bothMiss: count,
  net: z.int(),
};
const partition = (c: z.infer<z.ZodObject<typeof countsShape>>): boolean =>
  c.recoveries + c.reverse + c.bothHit + c.bothMiss === c.nQueries &&
  c.net === c.recoveries - c.reverse;
const partitionMessage = {
  message:
    'recoveries + reverse + bothHit + bothMiss must equal nQueries, net recoveries − reverse',
};

/**
 * Gross query-level counts of one pair A → B over a set of queries: `recoveries` (a hit for B,
 * not for A), `reverse` (a hit for A, not for B), `bothHit`, `bothMiss`, and `net` =
 * recoveries − reverse. The four kinds partition the queries.
 */
export const transitionCountsSchema = z
  .strictObject(countsShape)
  .refine(partition, partitionMessage);

/** {@link transitionCountsSchema} of one subtask's queries. */
export const subtaskTransitionCountsSchema = z
  .strictObject({ subtask: z.string().min(1), ...countsShape })
  .refine(partition, partitionMessage);

/**
 * Query-level transitions from system `from` to system `to` at cut-off `k`: overall and per
 * subtask (declared order, subtasks without evaluated queries left out).
 *
 * @example
 * transitionsSchema.parse({
 *   from: 'pooled', to: 'sparse-fusion', k: 10, hit: HIT_DEFINITION,
 *   overall: { nQueries: 3, recoveries: 1, reverse: 0, bothHit: 1, bothMiss: 1, net: 1 },
 *   subtasks: [{ subtask: '1', nQueries: 3, recoveries: 1, reverse: 0, bothHit: 1, bothMiss: 1, net: 1 }],
 * });
 */
export const transitionsSchema = z
  .strictObject({
    from: z.string().min(1),
    to: z.string().min(1),
    k: z.int().positive(),
    hit: z.literal(HIT_DEFINITION),
    overall: transitionCountsSchema,
    subtasks: z.array(subtaskTransitionCountsSchema),
  })
  .refine(
    (t) =>
      (['nQueries', 'recoveries', 'reverse', 'bothHit', 'bothMiss'] as const).every(
        (key) => t.subtasks.reduce((sum, s) => sum + s[key], 0) === t.overall[key],
      ),
    { message: 'the subtasks’ counts must sum to the overall ones' },
  );

/** Counts of one pair over some queries (see {@link transitionCountsSchema}). */
export type TransitionCounts = z.infer<typeof transitionCountsSchema>;
/** One pair's transitions, overall and per subtask (see {@link transitionsSchema}). */
export type Transitions = z.infer<typeof transitionsSchema>;

/**
 * Whether the first `k` ids of `ranked` hold a relevant one. `ranked` must be the
 * candidate-filtered ranking, as evaluations and per-query lines keep it.
 *
 * @example
 * isHit(['m3', 'm1', 'm2'], new Set(['m1']), 1); // false
 * isHit(['m3', 'm1', 'm2'], new Set(['m1']), 2); // true
 */
export function isHit(
  ranked: readonly string[],
  relevant: ReadonlySet<string>,
  k: number,
): boolean {
  const n = Math.min(k, ranked.length);
  for (let i = 0; i < n; i++) if (relevant.has(ranked[i] as string)) return true;
  return false;
}

/** One evaluated query as the count needs it. */
interface HitQuery {
  readonly queryId: string;
  readonly subtask: string;
  readonly hit: boolean;
}

const emptyCounts = (): { -readonly [K in keyof TransitionCounts]: number } => ({
  nQueries: 0,
  recoveries: 0,
  reverse: 0,
  bothHit: 0,
  bothMiss: 0,
  net: 0,
});

/** Pairs the two systems' queries by id and counts each kind, overall and per subtask. */
function countTransitions(
  from: { readonly name: string; readonly queries: readonly HitQuery[] },
  to: { readonly name: string; readonly queries: readonly HitQuery[] },
  subtaskOrder: readonly string[],
  k: number,
): Transitions {
  if (from.name === to.name)
    throw new ConfigError(`A transition needs two systems, got '${from.name}' twice.`);
  const toById = new Map(to.queries.map((q) => [q.queryId, q]));
  if (toById.size !== from.queries.length || to.queries.length !== from.queries.length) {
    throw new DataError(
      `'${from.name}' and '${to.name}' were evaluated on different queries (${from.queries.length} vs ${to.queries.length}).`,
    );
  }
  const overall = emptyCounts();
  const bySubtask = new Map<string, ReturnType<typeof emptyCounts>>();
  for (const a of from.queries) {
    const b = toById.get(a.queryId);
    if (b === undefined) {
      throw new DataError(
        `Query '${a.queryId}' is evaluated for '${from.name}' but not for '${to.name}'.`,
      );
    }
    if (b.subtask !== a.subtask) {
      throw new DataError(
        `Query '${a.queryId}' is in subtask '${a.subtask}' for '${from.name}' but '${b.subtask}' for '${to.name}'.`,
      );
    }
    let sub = bySubtask.get(a.subtask);
    if (sub === undefined) {
      sub = emptyCounts();
      bySubtask.set(a.subtask, sub);
    }
    const key = a.hit ? (b.hit ? 'bothHit' : 'reverse') : b.hit ? 'recoveries' : 'bothMiss';
    for (const c of [overall, sub]) {
      c.nQueries++;
      c[key]++;
    }
  }
  const undeclared = [...bySubtask.keys()].filter((s) => !subtaskOrder.includes(s));
  if (undeclared.length > 0) {
    throw new DataError(
      `Subtask '${undeclared[0]}' is not among the declared ${subtaskOrder.join(', ')}.`,
    );
  }
  const withNet = (c: ReturnType<typeof emptyCounts>): TransitionCounts => ({
    ...c,
    net: c.recoveries - c.reverse,
  });
  return {
    from: from.name,
    to: to.name,
    k,
    hit: HIT_DEFINITION,
    overall: withNet(overall),
    subtasks: subtaskOrder.flatMap((subtask) => {
      const c = bySubtask.get(subtask);
      return c === undefined ? [] : [{ subtask, ...withNet(c) }];
    }),
  };
}

function checkK(k: number): number {
  if (!Number.isInteger(k) || k < 1)
    throw new ConfigError(`The hit cut-off k must be a positive integer, got ${k}.`);
  return k;
}

/**
 * Query-level transitions A → B (the paper's Appendix D "recoveries" and "reverse
 * transitions") from two evaluations of the same queries: per query, whether B's top k holds a
 * relevant memory that A's does not (recovery), the other way round (reverse), or neither
 * changes (both hit, both miss). Gross counts, not rates; dropped queries are not counted.
 *
 * @throws ConfigError when k is not a positive integer, exceeds the evaluations' largest
 *   cut-off (their records keep no deeper ranking), or both systems are one.
 * @throws DataError when the two evaluations cover different queries or subtasks.
 * @example
 * const t = queryTransitions({ name: 'pooled', evaluation: pooled }, { name: 'sparse-fusion', evaluation: fusion });
 * t.overall; // { nQueries: 1536, recoveries: 301, reverse: 52, bothHit: 610, bothMiss: 573, net: 249 }
 */
export function queryTransitions(
  from: { readonly name: string; readonly evaluation: Evaluation },
  to: { readonly name: string; readonly evaluation: Evaluation },
  options: { readonly k?: number } = {},
): Transitions {
  const k = checkK(options.k ?? DEFAULT_TRANSITION_K);
  // Evaluations keep at least the top max-k ids of each ranking, no more is guaranteed.
  const deepest = Math.min(Math.max(...from.evaluation.ks), Math.max(...to.evaluation.ks));
  if (k > deepest) {
    throw new ConfigError(
      `The hit cut-off k = ${k} exceeds the evaluations' largest cut-off ${deepest}.`,
    );
  }
  const hits = (evaluation: Evaluation): HitQuery[] =>
    evaluation.queries.map((q) => ({
      queryId: q.queryId,
      subtask: q.subtask,
      hit: isHit(q.ranked, new Set(q.relevant), k),
    }));
  const subtasks = from.evaluation.subtasks.map((s) => s.subtask);
  if (to.evaluation.subtasks.map((s) => s.subtask).join('\u0000') !== subtasks.join('\u0000')) {
    throw new DataError(`'${from.name}' and '${to.name}' declare different subtasks.`);
  }
  return countTransitions(
    { name: from.name, queries: hits(from.evaluation) },
    { name: to.name, queries: hits(to.evaluation) },
    subtasks,
    k,
  );
}

/**
 * {@link queryTransitions} from `per-query.jsonl` lines alone (`ranked`, `relevant`); lines of
 * other systems are ignored, lines with no relevant memory are dropped. Exact as long as each
 * `ranked` holds at least the top k ids (the files keep the top 50).
 *
 * @throws ConfigError when k is not a positive integer or both systems are one.
 * @throws DataError when a system has no line, a query repeats, or the two systems cover
 *   different queries.
 * @example
 * transitionsFromPerQuery(await readPerQueryJsonl('runs/x/per-query.jsonl'), 'pooled', 'adapted');
 */
export function transitionsFromPerQuery(
  lines: Iterable<TransitionLine>,
  from: string,
  to: string,
  options: { readonly k?: number; readonly subtasks?: readonly string[] } = {},
): Transitions {
  const k = checkK(options.k ?? DEFAULT_TRANSITION_K);
  const bySystem = new Map<string, HitQuery[]>([
    [from, []],
    [to, []],
  ]);
  const seen = new Set<string>();
  const order: string[] = [];
  for (const line of lines) {
    const queries = bySystem.get(line.system);
    if (queries === undefined || line.relevant.length === 0) continue;
    const key = `${line.system}\u0000${line.queryId}`;
    if (seen.has(key))
      throw new DataError(`System '${line.system}' has two lines for query '${line.queryId}'.`);
    seen.add(key);
    if (!order.includes(line.subtask)) order.push(line.subtask);
    queries.push({
      queryId: line.queryId,
      subtask: line.subtask,
      hit: isHit(line.ranked, new Set(line.relevant), k),
    });
  }
  for (const [name, queries] of bySystem) {
    if (queries.length === 0)
      throw new DataError(`No per-query line of system '${name}' has a relevant memory.`);
  }
  return countTransitions(
    { name: from, queries: bySystem.get(from)! },
    { name: to, queries: bySystem.get(to)! },
    options.subtasks ?? order,
    k,
  );
}

/**
 * {@link queryTransitions} of each pair, the systems looked up by name (as `buildResults` does).
 *
 * @throws Error when a pair names a system `evaluations` lacks (a programmer error).
 * @example
 * transitionsBetween(new Map([['pooled', pooled], ['sparse-fusion', fusion]]), [['pooled', 'sparse-fusion']]);
 */
export function transitionsBetween(
  evaluations: ReadonlyMap<string, Evaluation>,
  pairs: ReadonlyArray<readonly [string, string]>,
  options: { readonly k?: number } = {},
): Transitions[] {
  return pairs.map(([from, to]) => {
    const a = evaluations.get(from);
    const b = evaluations.get(to);
    if (a === undefined || b === undefined) {
      throw new Error(`transitionsBetween: ${from} → ${to} names a missing system`);
    }
    return queryTransitions({ name: from, evaluation: a }, { name: to, evaluation: b }, options);
  });
}

/**
 * What a results file's `transitions` get wrong beyond their own shape: a pair that does not
 * name two listed systems, overall counts over other than the `from` system's evaluated
 * queries, an undeclared subtask. The results schema reports each as an issue.
 *
 * @example
 * transitionIssues({ subtasks: ['1'], systems: [{ name: 'pooled', nQueries: 3 }], transitions });
 * // [{ path: ['transitions', 0], message: "a transition must name two listed systems, …" }]
 */
export function transitionIssues(results: {
  readonly subtasks: readonly string[];
  readonly systems: ReadonlyArray<{ readonly name: string; readonly nQueries: number }>;
  readonly transitions?: readonly Transitions[] | undefined;
}): { path: (string | number)[]; message: string }[] {
  const out: { path: (string | number)[]; message: string }[] = [];
  const declared = new Set(results.subtasks);
  results.transitions?.forEach((t, i) => {
    const from = results.systems.find((s) => s.name === t.from);
    if (from === undefined || t.from === t.to || !results.systems.some((s) => s.name === t.to)) {
      const message = `a transition must name two listed systems, got '${t.from}' → '${t.to}'`;
      out.push({ path: ['transitions', i], message });
    } else if (from.nQueries !== t.overall.nQueries) {
      const message = `a transition counts the ${from.nQueries} evaluated queries, not ${t.overall.nQueries}`;
      out.push({ path: ['transitions', i, 'overall'], message });
    }
    t.subtasks.forEach((s, j) => {
      if (!declared.has(s.subtask)) {
        out.push({
          path: ['transitions', i, 'subtasks', j],
          message: `undeclared subtask '${s.subtask}'`,
        });
      }
    });
  });
  return out;
}
