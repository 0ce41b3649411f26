import { ConfigError, DataError } from '@bfe/core';

/**
 * Per-query retrieval metrics of METHOD.md §6: capped Recall@k and NDCG@k. NDCG uses the
 * grades as gains (gain = grade, log2 discount, as trec_eval's `ndcg_cut`), which is binary
 * NDCG when every grade is 1; recall counts every memory with grade > 0 as relevant.
 * Every function here takes a ranking that has already been restricted to the query's own
 * candidates (see {@link filterToCandidates}) and uses it in the order given: the evaluator
 * never re-sorts and never looks at scores, so ties must be resolved by the caller
 * ({@link rankByScore} is one documented way).
 */

/**
 * The memory budgets of the paper's budget analysis: Recall@K and NDCG@K when a system may
 * hand at most K memories to the reader.
 */
export const BUDGET_KS: readonly number[] = Object.freeze([4, 8, 10, 16]);

/**
 * The cut-offs reported by default: 1, 5, 25 and 50 plus the memory budgets
 * {@link BUDGET_KS}; `k = 10` is the headline (METHOD.md §6).
 */
export const DEFAULT_KS: readonly number[] = Object.freeze([1, 4, 5, 8, 10, 16, 25, 50]);

/**
 * The gains NDCG used: `binary` when every relevant memory of every evaluated query has
 * grade 1, `graded` when some grade is above 1 (then gain = grade).
 */
export type Gains = 'binary' | 'graded';

/**
 * A query's relevant memories: a set (every grade 1) or memory id → grade (an integer > 0,
 * as `RelevanceLabels.relevant` returns). Recall counts every member; NDCG uses the grades.
 */
export type Relevance = ReadonlySet<string> | ReadonlyMap<string, number>;

/** The metric families the evaluator reports. */
export type MetricKind = 'recall' | 'ndcg';

/**
 * A metric name exactly as it appears in results files: `recall@10`, `ndcg@10`, …
 * `recall@k` is always the capped recall of METHOD.md §6.
 */
export type MetricName = `${MetricKind}@${number}`;

/** Metric values by name, e.g. `{ 'recall@10': 0.8, 'ndcg@10': 0.61 }`. */
export type MetricValues = Record<MetricName, number>;

/**
 * The name of a metric at a cut-off.
 *
 * @example
 * metricName('ndcg', 10); // 'ndcg@10'
 */
export function metricName(kind: MetricKind, k: number): MetricName {
  return `${kind}@${k}`;
}

/**
 * Metric names for a list of cut-offs, recall first then NDCG, each in the order of `ks`.
 *
 * @example
 * metricNames([1, 10]); // ['recall@1', 'recall@10', 'ndcg@1', 'ndcg@10']
 */
export function metricNames(ks: readonly number[]): MetricName[] {
  return [...ks.map((k) => metricName('recall', k)), ...ks.map((k) => metricName('ndcg', k))];
}

/**
 * Checks a list of cut-offs and returns it sorted ascending. Cut-offs come from the user
 * (config, `--k`), so a bad list is a {@link ConfigError}.
 *
 * @throws ConfigError when the list is empty, holds a value that is not a positive integer
 *   (NaN included) or repeats a value.
 * @example
 * checkKs([10, 1, 5]); // [1, 5, 10]
 * checkKs([10, NaN]);  // throws ConfigError
 */
export function checkKs(ks: readonly number[]): number[] {
  if (ks.length === 0) throw new ConfigError('The list of cut-offs k is empty.');
  for (const k of ks) {
    if (!Number.isSafeInteger(k) || k < 1) {
      throw new ConfigError(`Every cut-off k must be a positive integer, got ${k}.`);
    }
  }
  const sorted = [...ks].sort((a, b) => a - b);
  for (let i = 1; i < sorted.length; i++) {
    if (sorted[i] === sorted[i - 1]) {
      throw new ConfigError(`The cut-off k = ${sorted[i]} is listed twice.`);
    }
  }
  return sorted;
}

/** `DISCOUNT[i]` = 1 / log2(i + 2): the NDCG discount of the item at 0-based rank i. */
let DISCOUNT = new Float64Array(0);
/** `IDEAL[m]` = Σ_{i<m} DISCOUNT[i]: the ideal DCG of m relevant items. */
let IDEAL = new Float64Array(1);

/** Grows the module-level discount tables to cover ranks `[0, n)`; amortised doubling. */
function ensureDiscounts(n: number): void {
  if (DISCOUNT.length >= n) return;
  const size = Math.max(n, DISCOUNT.length * 2, 64);
  const discount = new Float64Array(size);
  const ideal = new Float64Array(size + 1);
  for (let i = 0; i < size; i++) {
    discount[i] = 1 / Math.log2(i + 2);
    ideal[i + 1] = (ideal[i] as number) + (discount[i] as number);
  }
  DISCOUNT = discount;
  IDEAL = ideal;
}

/**
 * Restricts a ranking to a query's candidates, keeping the given order (METHOD.md §6: rank
 * each query's own candidate set only). Ids outside the candidate set are dropped, not errors:
 * a scorer may rank a whole bank.
 *
 * @throws DataError when an id occurs twice in the ranking (before filtering): a ranking
 *   lists each memory once, and a repeat would count one relevant memory twice.
 * @example
 * filterToCandidates(['m3', 'x9', 'm1'], new Set(['m1', 'm3']), 'q1'); // ['m3', 'm1']
 */
export function filterToCandidates(
  ranked: readonly string[],
  candidates: ReadonlySet<string>,
  queryId = '?',
): string[] {
  assertNoDuplicates(ranked, queryId);
  const out: string[] = [];
  for (let i = 0; i < ranked.length; i++) {
    const id = ranked[i] as string;
    if (candidates.has(id)) out.push(id);
  }
  return out;
}

/**
 * Throws when a ranking repeats an id.
 *
 * @throws DataError naming the query, the id and both 1-based ranks.
 * @example
 * assertNoDuplicates(['a', 'b', 'a'], 'q1'); // DataError: Query 'q1': memory 'a' is ranked twice (ranks 1 and 3) …
 */
export function assertNoDuplicates(ranked: readonly string[], queryId = '?'): void {
  const seen = new Map<string, number>();
  for (let i = 0; i < ranked.length; i++) {
    const id = ranked[i] as string;
    const first = seen.get(id);
    if (first !== undefined) {
      throw new DataError(
        `Query '${queryId}': memory '${id}' is ranked twice (ranks ${first + 1} and ${i + 1}).`,
        { suggestion: 'A ranking must list each memory at most once; check the scorer output.' },
      );
    }
    seen.set(id, i);
  }
}

/**
 * Orders ids by descending score, ties broken by ascending id (JavaScript string order, i.e.
 * UTF-16 code units). This is the tie rule the reference fixture states; the evaluator itself
 * takes whatever order it is given.
 *
 * @throws DataError when a score is NaN (±Infinity is ordered normally).
 * @throws Error when `ids` and `scores` differ in length.
 * @example
 * rankByScore(['b', 'a', 'c'], Float64Array.of(0.5, 0.5, 0.9)); // ['c', 'a', 'b']
 */
export function rankByScore(
  ids: readonly string[],
  scores: ArrayLike<number>,
  queryId = '?',
): string[] {
  if (ids.length !== scores.length) {
    throw new Error(`rankByScore: ${ids.length} ids but ${scores.length} scores`);
  }
  const order: number[] = [];
  for (let i = 0; i < ids.length; i++) {
    if (Number.isNaN(scores[i])) {
      throw new DataError(`Query '${queryId}': the score of memory '${ids[i]}' is NaN.`);
    }
    order.push(i);
  }
  order.sort((a, b) => {
    const sa = scores[a] as number;
    const sb = scores[b] as number;
    if (sa !== sb) return sb > sa ? 1 : -1;
    const ia = ids[a] as string;
    const ib = ids[b] as string;
    return ia < ib ? -1 : ia > ib ? 1 : 0;
  });
  return order.map((i) => ids[i] as string);
}

/**
 * The grades of a relevance map when one of them is above 1, else `undefined` (binary gains:
 * a set, or a map whose grades are all 1).
 *
 * @throws Error when a grade is not a positive finite number (labels hold grades > 0 only).
 * @example
 * gradesOf(new Map([['a', 1], ['b', 3]])); // Map { 'a' => 1, 'b' => 3 }
 * gradesOf(new Map([['a', 1]]));           // undefined
 */
export function gradesOf(relevant: Relevance): ReadonlyMap<string, number> | undefined {
  if (!(relevant instanceof Map)) return undefined;
  let graded = false;
  for (const [id, grade] of relevant as ReadonlyMap<string, number>) {
    if (!Number.isFinite(grade) || grade <= 0) {
      throw new Error(`the grade of relevant memory '${id}' must be > 0, got ${grade}`);
    }
    if (grade !== 1) graded = true;
  }
  return graded ? (relevant as ReadonlyMap<string, number>) : undefined;
}

/**
 * `out[m]` = the ideal DCG of the best `m` grades (sorted descending), for `m ≤ n`: trec_eval's
 * ideal ranking puts every judged relevant memory first, highest grade first.
 */
function idealGradedDcg(grades: ReadonlyMap<string, number>, n: number): Float64Array {
  ensureDiscounts(n);
  const sorted = [...grades.values()].sort((a, b) => b - a);
  const m = Math.min(n, sorted.length);
  const out = new Float64Array(m + 1);
  for (let i = 0; i < m; i++) {
    out[i + 1] = (out[i] as number) + (sorted[i] as number) * (DISCOUNT[i] as number);
  }
  return out;
}

function checkK(k: number): void {
  if (!Number.isSafeInteger(k) || k < 1) {
    throw new Error(`cut-off k must be a positive integer, got ${k}`);
  }
}

function hitsInTop(ranked: readonly string[], relevant: Relevance, k: number): number {
  const n = Math.min(k, ranked.length);
  let hits = 0;
  for (let i = 0; i < n; i++) if (relevant.has(ranked[i] as string)) hits += 1;
  return hits;
}

/**
 * Capped recall (METHOD.md §6): `|relevant ∩ top-k| / min(|relevant|, k)`. 0 when there is
 * nothing relevant (such queries are dropped by {@link evaluate} before this is called).
 *
 * @example
 * cappedRecallAt(['a', 'x', 'b'], new Set(['a', 'b', 'c']), 2); // 1 / min(3, 2) = 0.5
 */
export function cappedRecallAt(ranked: readonly string[], relevant: Relevance, k: number): number {
  checkK(k);
  if (relevant.size === 0) return 0;
  return hitsInTop(ranked, relevant, k) / Math.min(relevant.size, k);
}

/**
 * Standard (uncapped) recall, `|relevant ∩ top-k| / |relevant|`, as trec_eval's `recall_k`.
 * Not reported; kept for cross-checks (capped recall ≥ standard recall).
 *
 * @example
 * recallAt(['a', 'x', 'b'], new Set(['a', 'b', 'c']), 2); // 1 / 3
 */
export function recallAt(ranked: readonly string[], relevant: Relevance, k: number): number {
  checkK(k);
  if (relevant.size === 0) return 0;
  return hitsInTop(ranked, relevant, k) / relevant.size;
}

/**
 * NDCG@k with the log2 discount, as trec_eval's `ndcg_cut`: `DCG = Σ_{i≤k} gain(item i) /
 * log2(i+1)` over 1-based ranks, divided by the ideal DCG of the best `min(|relevant|, k)`
 * gains at the top. gain = grade (1 for a set, or a map whose grades are all 1: binary NDCG),
 * 0 for a memory that is not relevant. Relevant memories outside the ranking still count in
 * the ideal, as in trec_eval.
 *
 * @example
 * ndcgAt(['x', 'a'], new Set(['a']), 10); // (1/log2 3) / 1 ≈ 0.6309
 * ndcgAt(['a', 'b'], new Map([['a', 1], ['b', 3]]), 1); // 1 / 3
 */
export function ndcgAt(ranked: readonly string[], relevant: Relevance, k: number): number {
  checkK(k);
  if (relevant.size === 0) return 0;
  ensureDiscounts(k);
  const n = Math.min(k, ranked.length);
  const grades = gradesOf(relevant);
  let dcg = 0;
  if (grades === undefined) {
    for (let i = 0; i < n; i++) if (relevant.has(ranked[i] as string)) dcg += DISCOUNT[i] as number;
    return dcg / (IDEAL[Math.min(relevant.size, k)] as number);
  }
  for (let i = 0; i < n; i++) {
    const g = grades.get(ranked[i] as string);
    if (g !== undefined) dcg += g * (DISCOUNT[i] as number);
  }
  const ideal = idealGradedDcg(grades, k);
  return dcg / (ideal[ideal.length - 1] as number);
}

/**
 * Every metric of one query in one pass over its top `max(ks)` ranks. `ks` must be sorted
 * ascending and checked ({@link checkKs}); `ranked` must be candidate-filtered. NDCG is
 * graded when `relevant` is a map with a grade above 1 (see {@link ndcgAt}), else binary.
 *
 * @example
 * queryMetrics(['a', 'x', 'b'], new Set(['a', 'b']), [1, 10]);
 * // { 'recall@1': 1, 'recall@10': 1, 'ndcg@1': 1, 'ndcg@10': 0.9197… }
 */
export function queryMetrics(
  ranked: readonly string[],
  relevant: Relevance,
  ks: readonly number[],
): MetricValues {
  const nk = ks.length;
  const maxK = ks[nk - 1] as number;
  ensureDiscounts(maxK);
  const nRel = relevant.size;
  const grades = gradesOf(relevant);
  // Binary gains read the shared table; graded gains their own ideal (the same sums when every
  // grade is 1, but binary datasets keep exactly the code path they always had).
  const ideal = grades === undefined ? IDEAL : idealGradedDcg(grades, maxK);
  const recall = new Float64Array(nk);
  const ndcg = new Float64Array(nk);
  const n = Math.min(maxK, ranked.length);
  let hits = 0;
  let dcg = 0;
  let next = 0;
  // Walk the ranks once; a cut-off k is read off the running hit count and DCG after k ranks
  // (or after the last rank when the ranking is shorter than k).
  for (let i = 0; i <= n && next < nk; i++) {
    while (next < nk && (ks[next] === i || i === n)) {
      const k = ks[next] as number;
      if (nRel > 0) {
        recall[next] = hits / Math.min(nRel, k);
        ndcg[next] = dcg / (ideal[Math.min(nRel, k)] as number);
      }
      next += 1;
    }
    const id = ranked[i] as string;
    if (i < n && relevant.has(id)) {
      hits += 1;
      if (grades === undefined) dcg += DISCOUNT[i] as number;
      else dcg += (grades.get(id) as number) * (DISCOUNT[i] as number);
    }
  }
  // Recall first, then NDCG, each in the order of ks: the key order JSON output shows.
  const out = {} as MetricValues;
  for (let j = 0; j < nk; j++) out[`recall@${ks[j] as number}`] = recall[j] as number;
  for (let j = 0; j < nk; j++) out[`ndcg@${ks[j] as number}`] = ndcg[j] as number;
  return out;
}
