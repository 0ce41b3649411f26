import { createHash } from 'node:crypto';
import type { Benchmark } from '@bfe/core';
import { buildQueryBankGraph } from './graph.js';

/**
 * The clusters of METHOD.md §6 "Intervals": queries that rank the same bank are not
 * independent, so paired intervals resample whole clusters. A cluster is the candidate set a
 * query ranks — its conversation (LoCoMo), its article (COVID-QA), its own haystack
 * (LongMemEval) — and the queries that rank the same set. Haystacks that share sessions stay
 * separate clusters (LongMemEval-S is one connected component, so component clusters would
 * leave one cluster); the cluster interval then cannot include the dependence carried by
 * shared sessions.
 */

/**
 * Every query's cluster, and the word for the dataset's bank unit.
 *
 * @example
 * const c: QueryClusters = { unit: 'conversation', of: new Map([['conv-26:q0', 'conv-26']]) };
 */
export interface QueryClusters {
  /** `conversation`, `haystack`, `article`, or `bank` when the dataset does not say. */
  readonly unit: string;
  /** Query id → cluster id (the smallest bank id of its component). */
  readonly of: Map<string, string>;
}

// Registry names (and their prefixes) → what one connected component of their banks is.
const UNITS: readonly (readonly [RegExp, string])[] = [
  [/^locomo(-|$)/, 'conversation'],
  [/^longmemeval(-|$)/, 'haystack'],
  [/^covidqa(-|$)/, 'article'],
];

/**
 * The human word for a benchmark's bank unit, from its registry name: LoCoMo's banks are
 * conversations, LongMemEval's components haystacks, COVID-QA's banks articles; anything
 * else (an LMEB folder, a test fixture) is a `bank`.
 *
 * @example
 * bankUnit('locomo-session'); // 'conversation'
 * bankUnit('lmeb:/data/LoCoMo'); // 'bank'
 */
export function bankUnit(benchmarkName: string): string {
  for (const [pattern, unit] of UNITS) if (pattern.test(benchmarkName)) return unit;
  return 'bank';
}

/**
 * The cluster of every query: the candidate set it ranks. A single bank (a conversation, an
 * article) names the cluster; a set of banks or memories (a haystack) is named
 * `banks:<hash>` / `memories:<hash>` of its sorted ids, so queries ranking the same set share
 * a cluster. It depends only on ids, never on file order or labels.
 *
 * @throws DataError when a query or memory id repeats, or a candidate names no memory / bank.
 * @example
 * const clusters = queryClusters(locomo);
 * clusters.unit; // 'conversation'
 * clusters.of.get('conv-26:q0'); // 'conv-26'
 */
export function queryClusters(benchmark: Benchmark): QueryClusters {
  // Checks ids and references (a DataError names a dangling candidate).
  buildQueryBankGraph(benchmark);
  const of = new Map<string, string>();
  for (const q of benchmark.queries) {
    const kind = q.candidateBankIds === undefined ? 'memories' : 'banks';
    const ids = [...new Set(q.candidateBankIds ?? q.candidateIds ?? [])].sort();
    if (ids.length === 0) continue;
    of.set(q.id, ids.length === 1 ? (ids[0] as string) : `${kind}:${setHash(ids)}`);
  }
  return { unit: bankUnit(benchmark.name), of };
}

/** 16 hex digits of the SHA-256 of sorted ids: a short, stable name for a candidate set. */
function setHash(sorted: readonly string[]): string {
  return createHash('sha256').update(sorted.join('\u0000')).digest('hex').slice(0, 16);
}

/**
 * The clusters restricted to some queries (the evaluated part of a split).
 *
 * @example
 * restrictClusters(queryClusters(locomo), split.queries.test).of.size; // the test queries
 */
export function restrictClusters(
  clusters: QueryClusters,
  queryIds: Iterable<string>,
): QueryClusters {
  const of = new Map<string, string>();
  for (const q of queryIds) {
    const id = clusters.of.get(q);
    if (id !== undefined) of.set(q, id);
  }
  return { unit: clusters.unit, of };
}
