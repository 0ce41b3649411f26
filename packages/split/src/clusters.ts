import type { Benchmark } from '@bfe/core';
import { buildQueryBankGraph } from './graph.js';

/**
 * The clusters of METHOD.md §6 "Intervals": queries that share a bank are not independent, so
 * paired intervals resample whole clusters. A cluster is a connected component of the
 * query–bank graph (METHOD.md §5), the same unit a `connected-bank` split keeps together.
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
 * The cluster of every query: its connected component of the query–bank graph, named by the
 * component's smallest bank id (code-unit order), which depends only on ids, never on file
 * order or labels. Every query of the benchmark is in the map.
 *
 * @throws DataError when a query or memory id repeats, or a candidate names no memory / bank.
 * @example
 * const clusters = queryClusters(locomo);
 * clusters.unit; // 'conversation'
 * clusters.of.get('conv-26:q0'); // 'conv-26'
 */
export function queryClusters(benchmark: Benchmark): QueryClusters {
  const of = new Map<string, string>();
  for (const component of buildQueryBankGraph(benchmark).components) {
    const id = component.bankIds[0] as string;
    for (const q of component.queryIds) of.set(q, id);
  }
  return { unit: bankUnit(benchmark.name), of };
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
