import { ConfigError, DataError } from '@bfe/core';
import type { RelevanceLabels } from '@bfe/core';
import {
  DEFAULT_KS,
  checkKs,
  filterToCandidates,
  gradesOf,
  metricNames,
  queryMetrics,
} from './metrics.js';
import type { Gains, MetricName, MetricValues } from './metrics.js';

/**
 * Inputs of {@link evaluate}. The query universe is the key set of `subtaskOf` (one split's
 * queries, say); `runs` and `candidates` must cover exactly those queries. `labels` may hold
 * more queries (all splits): only the evaluated ones are read.
 *
 * @example
 * const input: EvaluateInput = {
 *   runs: new Map([['q1', ['m3', 'm1', 'm2']]]),
 *   labels, // RelevanceLabels with ('q1', 'm1', 1)
 *   candidates: new Map([['q1', new Set(['m1', 'm2', 'm3'])]]),
 *   subtaskOf: new Map([['q1', 'single-hop']]),
 *   subtasks: ['single-hop', 'multi-hop'],
 * };
 */
export interface EvaluateInput {
  /** Each query's ranking, best first, in the order the caller resolved ties. */
  readonly runs: ReadonlyMap<string, readonly string[]>;
  readonly labels: RelevanceLabels;
  /** Each query's own candidate memory ids; ranked ids outside this set are ignored. */
  readonly candidates: ReadonlyMap<string, ReadonlySet<string>>;
  /** The subtask (LoCoMo category, LongMemEval question type…) of every evaluated query. */
  readonly subtaskOf: ReadonlyMap<string, string>;
  /** The benchmark's subtasks in declared order; headline = their unweighted mean. */
  readonly subtasks: readonly string[];
  /** Cut-offs; default {@link DEFAULT_KS} `[1, 4, 5, 8, 10, 16, 25, 50]`. */
  readonly ks?: readonly number[];
  /** How many ranks of each filtered ranking to keep in the records; default `max(50, max k)`. */
  readonly keepTop?: number;
}

/**
 * One evaluated query: enough to recompute its metrics (see `recomputeFromPerQuery`).
 *
 * @example
 * // { queryId: 'q1', subtask: 'single-hop', metrics: { 'recall@10': 1, 'ndcg@10': 0.63, … },
 * //   ranked: ['m3', 'm1', 'm2'], relevant: ['m1'] }
 * // with graded labels: relevant: ['m1', 'm4'], grades: [1, 3]
 */
export interface QueryRecord {
  readonly queryId: string;
  readonly subtask: string;
  readonly metrics: MetricValues;
  /** The candidate-filtered ranking, its first `keepTop` ids. */
  readonly ranked: readonly string[];
  /** Relevant memory ids as the labels give them (candidates or not), in label order. */
  readonly relevant: readonly string[];
  /**
   * The grade of each relevant memory, parallel to `relevant`; present only when one of them
   * is above 1 (NDCG then uses gain = grade). Absent: every grade is 1 (binary gains).
   */
  readonly grades?: readonly number[];
}

/**
 * A query left out because it has no relevant memory (METHOD.md §6), kept so that
 * per-query files list every query.
 *
 * @example
 * // { queryId: 'q7', subtask: 'temporal', ranked: ['m2', 'm9'] }
 */
export interface DroppedQuery {
  readonly queryId: string;
  readonly subtask: string;
  readonly ranked: readonly string[];
}

/**
 * The figures of one subtask; `metrics` is `null` when every query of it was dropped (or it
 * has none), and such a subtask does not enter the headline.
 *
 * @example
 * // { subtask: 'multi-hop', nQueries: 282, nDropped: 0, metrics: { 'recall@10': 0.41, … } }
 */
export interface SubtaskSummary {
  readonly subtask: string;
  readonly nQueries: number;
  readonly nDropped: number;
  readonly metrics: MetricValues | null;
}

/**
 * Counts that flag suspicious inputs without changing any figure.
 *
 * @example
 * // { rankedOutsideCandidates: 0, relevantOutsideCandidates: 3, queriesWithRelevantOutsideCandidates: 2 }
 */
export interface EvaluationDiagnostics {
  /** Ranked ids removed because they are not the query's candidates. */
  readonly rankedOutsideCandidates: number;
  /** Relevant (query, memory) pairs whose memory is not a candidate: they cap the metrics below 1. */
  readonly relevantOutsideCandidates: number;
  readonly queriesWithRelevantOutsideCandidates: number;
}

/**
 * The result of {@link evaluate}: headline figures, per-subtask figures and per-query records.
 *
 * @example
 * evaluation.metrics['ndcg@10']; // mean over subtasks of the subtask means
 * evaluation.subtasks[0];        // { subtask: 'single-hop', nQueries: 841, nDropped: 0, metrics: {…} }
 * evaluation.dropped;            // { noRelevant: 2 }
 */
export interface Evaluation {
  /** The cut-offs, ascending. */
  readonly ks: readonly number[];
  readonly metricNames: readonly MetricName[];
  /** Headline: the unweighted mean over non-empty subtasks of each subtask's query mean. */
  readonly metrics: MetricValues;
  /** Every declared subtask, in declared order. */
  readonly subtasks: readonly SubtaskSummary[];
  /** Queries evaluated (dropped ones excluded). */
  readonly nQueries: number;
  /**
   * The NDCG gains: `graded` when some evaluated query has a relevant memory of grade > 1
   * (gain = grade, as trec_eval), `binary` when every grade is 1.
   */
  readonly gains: Gains;
  readonly dropped: { readonly noRelevant: number };
  /** Evaluated queries in the order of `subtaskOf`. */
  readonly queries: readonly QueryRecord[];
  readonly droppedQueries: readonly DroppedQuery[];
  /** `null` when recomputed from per-query lines, which no longer hold the candidate sets. */
  readonly diagnostics: EvaluationDiagnostics | null;
}

/**
 * Evaluates one system's rankings under the LMEB protocol (METHOD.md §6).
 *
 * - Each ranking is restricted to the query's candidates, keeping its order; the evaluator
 *   never re-sorts, so the caller's order decides ties.
 * - Relevant = every memory the labels give the query (grades are > 0), as given. Recall
 *   counts each one; NDCG uses gain = grade (binary NDCG when every grade is 1; see
 *   `Evaluation.gains`). A relevant memory that is not a candidate still counts in the denominator of
 *   capped recall and in the ideal DCG (LMEB keeps qrels as they are). Such pairs are counted
 *   in `diagnostics`.
 * - A query with no relevant memory is dropped and counted in `dropped.noRelevant`.
 * - Metrics are capped Recall@k and NDCG@k; each subtask's figure is the mean over its queries;
 *   the headline is the mean over subtasks with at least one query, each weighted equally.
 *
 * @throws ConfigError when `ks` or `keepTop` is malformed.
 * @throws DataError when a query's subtask is not declared, a subtask is declared twice, a
 *   ranking repeats an id, or no query has a relevant memory.
 * @throws Error when `runs` or `candidates` do not cover exactly the queries of `subtaskOf`.
 * @example
 * const e = evaluate({ runs, labels, candidates, subtaskOf, subtasks: ['1', '2', '3', '4'] });
 * e.metrics['recall@10']; // 0.57…
 * e.nQueries;             // 1982
 */
export function evaluate(input: EvaluateInput): Evaluation {
  const ks = checkKs(input.ks ?? DEFAULT_KS);
  const keepTop = checkKeepTop(input.keepTop, ks);
  const { runs, labels, candidates, subtaskOf } = input;
  checkSubtasks(input.subtasks, subtaskOf);
  for (const queryId of runs.keys()) {
    if (!subtaskOf.has(queryId)) {
      throw new Error(`evaluate: a ranking is given for query '${queryId}', which has no subtask`);
    }
  }

  const records: QueryRecord[] = [];
  const dropped: DroppedQuery[] = [];
  let rankedOutside = 0;
  let relevantOutside = 0;
  let queriesRelevantOutside = 0;
  for (const [queryId, subtask] of subtaskOf) {
    const run = runs.get(queryId);
    if (run === undefined) throw new Error(`evaluate: no ranking for query '${queryId}'`);
    const own = candidates.get(queryId);
    if (own === undefined) throw new Error(`evaluate: no candidate set for query '${queryId}'`);
    const filtered = filterToCandidates(run, own, queryId);
    rankedOutside += run.length - filtered.length;
    const graded = labels.relevant(queryId);
    const relevant = [...graded.keys()];
    if (relevant.length === 0) {
      dropped.push({ queryId, subtask, ranked: filtered.slice(0, keepTop) });
      continue;
    }
    let outside = 0;
    for (const id of relevant) if (!own.has(id)) outside += 1;
    relevantOutside += outside;
    if (outside > 0) queriesRelevantOutside += 1;
    const grades = gradesOf(graded);
    records.push({
      queryId,
      subtask,
      metrics: queryMetrics(filtered, grades ?? new Set(relevant), ks),
      ranked: filtered.slice(0, keepTop),
      relevant,
      ...(grades === undefined ? {} : { grades: [...grades.values()] }),
    });
  }
  return aggregate(records, dropped, input.subtasks, ks, {
    rankedOutsideCandidates: rankedOutside,
    relevantOutsideCandidates: relevantOutside,
    queriesWithRelevantOutsideCandidates: queriesRelevantOutside,
  });
}

/**
 * Subtask means and the headline from per-query records (shared by `evaluate` and
 * `recomputeFromPerQuery`, so both sum in the same order and agree exactly).
 *
 * @throws DataError when there is no record at all (every query dropped).
 */
export function aggregate(
  records: readonly QueryRecord[],
  dropped: readonly DroppedQuery[],
  subtasks: readonly string[],
  ks: readonly number[],
  diagnostics: EvaluationDiagnostics | null,
): Evaluation {
  const names = metricNames(ks);
  if (records.length === 0) {
    throw new DataError(
      `No query has a relevant memory (${dropped.length} dropped); there is nothing to evaluate.`,
      { suggestion: 'Check that the labels belong to these queries (same dataset and split).' },
    );
  }
  const index = new Map(subtasks.map((s, i) => [s, i]));
  const nm = names.length;
  const sums = new Float64Array(subtasks.length * nm);
  const counts = new Int32Array(subtasks.length);
  const droppedCounts = new Int32Array(subtasks.length);
  for (const record of records) {
    const s = index.get(record.subtask) as number;
    counts[s] = (counts[s] as number) + 1;
    const base = s * nm;
    for (let j = 0; j < nm; j++) {
      sums[base + j] = (sums[base + j] as number) + (record.metrics[names[j] as MetricName] ?? NaN);
    }
  }
  for (const d of dropped) {
    const s = index.get(d.subtask) as number;
    droppedCounts[s] = (droppedCounts[s] as number) + 1;
  }

  const headline = new Float64Array(nm);
  let nonEmpty = 0;
  const summaries: SubtaskSummary[] = [];
  for (let s = 0; s < subtasks.length; s++) {
    const n = counts[s] as number;
    let metrics: MetricValues | null = null;
    if (n > 0) {
      nonEmpty += 1;
      metrics = {} as MetricValues;
      for (let j = 0; j < nm; j++) {
        const mean = (sums[s * nm + j] as number) / n;
        metrics[names[j] as MetricName] = mean;
        headline[j] = (headline[j] as number) + mean;
      }
    }
    summaries.push({
      subtask: subtasks[s] as string,
      nQueries: n,
      nDropped: droppedCounts[s] as number,
      metrics,
    });
  }
  const metrics = {} as MetricValues;
  for (let j = 0; j < nm; j++) metrics[names[j] as MetricName] = (headline[j] as number) / nonEmpty;

  return {
    ks: [...ks],
    metricNames: names,
    metrics,
    subtasks: summaries,
    nQueries: records.length,
    gains: records.some((r) => r.grades !== undefined) ? 'graded' : 'binary',
    dropped: { noRelevant: dropped.length },
    queries: records,
    droppedQueries: dropped,
    diagnostics,
  };
}

/** The number of ranks records keep: at least 50 (the per-query file's top-50), at least max k. */
export function checkKeepTop(keepTop: number | undefined, ks: readonly number[]): number {
  const maxK = ks[ks.length - 1] as number;
  if (keepTop === undefined) return Math.max(50, maxK);
  if (!Number.isSafeInteger(keepTop) || keepTop < maxK) {
    throw new ConfigError(
      `keepTop must be an integer ≥ the largest cut-off (${maxK}), got ${keepTop}.`,
      { suggestion: 'Records shorter than the largest k could not be re-evaluated.' },
    );
  }
  return keepTop;
}

/**
 * Checks that subtasks are declared once each and that every query's subtask is declared.
 *
 * @throws DataError naming the first offending subtask or query.
 */
export function checkSubtasks(
  subtasks: readonly string[],
  subtaskOf: ReadonlyMap<string, string> | Iterable<readonly [string, string]>,
): void {
  const declared = new Set<string>();
  for (const s of subtasks) {
    if (declared.has(s)) throw new DataError(`Subtask '${s}' is declared twice.`);
    declared.add(s);
  }
  for (const [queryId, subtask] of subtaskOf) {
    if (!declared.has(subtask)) {
      throw new DataError(
        `Query '${queryId}' belongs to subtask '${subtask}', which is not declared ` +
          `(declared: ${subtasks.map((s) => `'${s}'`).join(', ') || 'none'}).`,
        { suggestion: 'Pass the benchmark’s full subtask list, or fix the query’s category.' },
      );
    }
  }
}
