import { DataError } from '@bfe/core';
import type { Benchmark } from '@bfe/core';

/**
 * The query–bank graph of METHOD.md §5: nodes are queries and memory banks, and a query is
 * linked to every bank its candidates come from. Everything here reads only ids and bank ids,
 * never texts and never labels, so a split cannot depend on gold.
 */

/**
 * One connected component of the query–bank graph that holds at least one query.
 *
 * @example
 * const c: BankComponent = { queryIds: ['q1', 'q2'], bankIds: ['conv-26'], memoryCount: 419 };
 */
export interface BankComponent {
  /** Query ids of the component, sorted (UTF-16 code-unit order, locale-independent). */
  readonly queryIds: readonly string[];
  /** Bank ids of the component, sorted. */
  readonly bankIds: readonly string[];
  /** Number of memories in the component's banks. */
  readonly memoryCount: number;
}

/**
 * Sizes of the components under one measure (queries, banks or memories).
 *
 * @example
 * // queries per component of 3 components holding 1, 1 and 3 queries
 * const s: SizeSummary = { count: 3, total: 5, min: 1, median: 1, max: 3, largestShare: 0.6 };
 */
export interface SizeSummary {
  /** Number of components summarised. */
  readonly count: number;
  /** Sum over the components. */
  readonly total: number;
  readonly min: number;
  /** Middle value; the mean of the two middle values for an even count. */
  readonly median: number;
  readonly max: number;
  /** `max / total`: the share held by the largest component under this measure (0 when empty). */
  readonly largestShare: number;
}

/**
 * How a benchmark falls apart into connected components; what a strict split can use.
 *
 * @example
 * const s: ComponentStructure = componentStructure(benchmark);
 * if (s.components < 3) {
 *   // a connected-bank split is impossible; only 'query-disjoint-shared-bank' (diagnostic) is left
 * }
 */
export interface ComponentStructure {
  /** Connected components holding at least one query: the units of a `connected-bank` split. */
  readonly components: number;
  readonly queriesPerComponent: SizeSummary;
  readonly banksPerComponent: SizeSummary;
  readonly memoriesPerComponent: SizeSummary;
  /** Banks that no query links to: in no component and in no split. */
  readonly unlinkedBanks: number;
}

/** The resolved graph; internal to the package (makeSplit and verifySplit share it). */
export interface QueryBankGraph {
  /** Every bank id (from memories), sorted. */
  readonly bankIds: readonly string[];
  /** Memories per bank, aligned with `bankIds`. */
  readonly bankMemoryCounts: readonly number[];
  /** Query id → indices into `bankIds` of the banks it links to (deduplicated, ascending). */
  readonly queryBanks: ReadonlyMap<string, readonly number[]>;
  /** Components with at least one query, ordered by their smallest query id. */
  readonly components: readonly BankComponent[];
  readonly unlinkedBanks: number;
}

// At most this many offending references are quoted in an error message; the count is exact.
const QUOTED_EXAMPLES = 5;

/**
 * Resolves every query's candidates to banks and finds the connected components with a
 * union-find. Throws `DataError` when ids repeat or a candidate does not resolve, because a
 * split built on a dangling reference would silently drop the edge that might join two units.
 */
export function buildQueryBankGraph(benchmark: Benchmark): QueryBankGraph {
  const memoryBank = new Map<string, string>();
  const bankMemories = new Map<string, number>();
  const duplicates: string[] = [];
  for (const memory of benchmark.memories) {
    if (memoryBank.has(memory.id)) duplicates.push(`memory ${memory.id}`);
    memoryBank.set(memory.id, memory.bankId);
    bankMemories.set(memory.bankId, (bankMemories.get(memory.bankId) ?? 0) + 1);
  }
  const bankIds = [...bankMemories.keys()].sort();
  const bankIndex = new Map<string, number>();
  for (let b = 0; b < bankIds.length; b++) bankIndex.set(bankIds[b] as string, b);
  const bankMemoryCounts = bankIds.map((id) => bankMemories.get(id) ?? 0);

  const queryBanks = new Map<string, number[]>();
  const unresolved: string[] = [];
  let unresolvedQueries = 0;
  for (const query of benchmark.queries) {
    if (queryBanks.has(query.id)) duplicates.push(`query ${query.id}`);
    const linked = new Set<number>();
    const before = unresolved.length;
    if (query.candidateBankIds !== undefined) {
      for (const bankId of query.candidateBankIds) {
        const b = bankIndex.get(bankId);
        if (b === undefined) unresolved.push(`${query.id} → bank ${bankId}`);
        else linked.add(b);
      }
    }
    if (query.candidateIds !== undefined) {
      for (const memoryId of query.candidateIds) {
        const bankId = memoryBank.get(memoryId);
        const b = bankId === undefined ? undefined : bankIndex.get(bankId);
        if (b === undefined) unresolved.push(`${query.id} → memory ${memoryId}`);
        else linked.add(b);
      }
    }
    if (unresolved.length > before) unresolvedQueries += 1;
    queryBanks.set(
      query.id,
      [...linked].sort((a, b) => a - b),
    );
  }

  if (duplicates.length > 0) {
    throw new DataError(
      `Benchmark '${benchmark.name}' has ${duplicates.length} repeated id(s): ` +
        `${quote(duplicates)}. A split assigns each query once and resolves each memory to one bank.`,
      { suggestion: 'Make memory ids and query ids unique in the dataset loader.' },
    );
  }
  if (unresolved.length > 0) {
    throw new DataError(
      `Benchmark '${benchmark.name}': ${unresolved.length} candidate reference(s) of ` +
        `${unresolvedQueries} quer${unresolvedQueries === 1 ? 'y' : 'ies'} name no memory or ` +
        `bank of the benchmark: ${quote(unresolved)}.`,
      {
        suggestion:
          'Every candidateId must be the id of a memory and every candidateBankId the bankId ' +
          'of at least one memory; fix or drop these queries in the dataset loader.',
      },
    );
  }

  const components = findComponents(bankIds, bankMemoryCounts, queryBanks);
  let linkedBanks = 0;
  for (const c of components) linkedBanks += c.bankIds.length;
  return {
    bankIds,
    bankMemoryCounts,
    queryBanks,
    components,
    unlinkedBanks: bankIds.length - linkedBanks,
  };
}

function findComponents(
  bankIds: readonly string[],
  bankMemoryCounts: readonly number[],
  queryBanks: ReadonlyMap<string, readonly number[]>,
): BankComponent[] {
  // Only banks are union-find nodes: a query joins all its banks, and then belongs to the
  // component of any one of them (every query links to at least one bank once resolved).
  const parent = new Int32Array(bankIds.length);
  const size = new Int32Array(bankIds.length);
  for (let b = 0; b < parent.length; b++) {
    parent[b] = b;
    size[b] = 1;
  }
  const find = (x: number): number => {
    let node = x;
    while (parent[node] !== node) {
      const grand = parent[parent[node] as number] as number;
      parent[node] = grand; // path halving
      node = grand;
    }
    return node;
  };
  const union = (a: number, b: number): void => {
    let ra = find(a);
    let rb = find(b);
    if (ra === rb) return;
    if ((size[ra] as number) < (size[rb] as number)) [ra, rb] = [rb, ra];
    parent[rb] = ra;
    size[ra] = (size[ra] as number) + (size[rb] as number);
  };
  for (const banks of queryBanks.values()) {
    const first = banks[0];
    if (first === undefined) continue;
    for (let i = 1; i < banks.length; i++) union(first, banks[i] as number);
  }

  const byRoot = new Map<number, { queryIds: string[]; banks: Set<number> }>();
  for (const [queryId, banks] of queryBanks) {
    const first = banks[0];
    if (first === undefined) continue;
    const root = find(first);
    let group = byRoot.get(root);
    if (group === undefined) {
      group = { queryIds: [], banks: new Set() };
      byRoot.set(root, group);
    }
    group.queryIds.push(queryId);
    for (const b of banks) group.banks.add(b);
  }

  const components: BankComponent[] = [];
  for (const group of byRoot.values()) {
    // Banks reached only through union (bank–query–bank chains) are already in `banks`:
    // every bank of a component is linked to at least one of its queries by construction.
    const banks = [...group.banks].sort((a, b) => a - b);
    let memoryCount = 0;
    for (const b of banks) memoryCount += bankMemoryCounts[b] as number;
    components.push({
      queryIds: group.queryIds.sort(),
      bankIds: banks.map((b) => bankIds[b] as string),
      memoryCount,
    });
  }
  // Canonical unit order: by smallest query id, so the result does not depend on file order.
  return components.sort((a, b) => compareIds(a.queryIds[0] as string, b.queryIds[0] as string));
}

/** Code-unit order, the same as `Array.prototype.sort()` on strings; never locale-dependent. */
export function compareIds(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function quote(items: readonly string[]): string {
  const shown = items.slice(0, QUOTED_EXAMPLES).join(', ');
  return items.length > QUOTED_EXAMPLES
    ? `${shown}, … (${items.length - QUOTED_EXAMPLES} more)`
    : shown;
}

/**
 * The connected components of the query–bank graph (METHOD.md §5) that hold at least one
 * query, ordered by their smallest query id. These are the units of a `connected-bank` split.
 *
 * @throws DataError when a query or memory id repeats, or a candidate names no memory / bank.
 * @example
 * const components = connectedComponents(benchmark);
 * // [{ queryIds: ['q1', 'q2'], bankIds: ['conv-1'], memoryCount: 40 }, …]
 */
export function connectedComponents(benchmark: Benchmark): BankComponent[] {
  return [...buildQueryBankGraph(benchmark).components];
}

/**
 * Summarises how the benchmark's queries and banks fall apart into connected components:
 * how many there are and how large (queries, banks, memories per component), so a caller can
 * see before splitting whether a strict `connected-bank` split is possible.
 *
 * @throws DataError when a query or memory id repeats, or a candidate names no memory / bank.
 * @example
 * componentStructure(locomoLike);
 * // {
 * //   components: 10,
 * //   queriesPerComponent: { count: 10, total: 1986, min: 105, median: 197, max: 260, largestShare: 0.131 },
 * //   banksPerComponent: { count: 10, total: 10, min: 1, median: 1, max: 1, largestShare: 0.1 },
 * //   memoriesPerComponent: { … },
 * //   unlinkedBanks: 0,
 * // }
 */
export function componentStructure(benchmark: Benchmark): ComponentStructure {
  return summariseGraph(buildQueryBankGraph(benchmark));
}

/** {@link componentStructure} of an already built graph. */
export function summariseGraph(graph: QueryBankGraph): ComponentStructure {
  const { components } = graph;
  return {
    components: components.length,
    queriesPerComponent: summarise(components.map((c) => c.queryIds.length)),
    banksPerComponent: summarise(components.map((c) => c.bankIds.length)),
    memoriesPerComponent: summarise(components.map((c) => c.memoryCount)),
    unlinkedBanks: graph.unlinkedBanks,
  };
}

function summarise(values: readonly number[]): SizeSummary {
  const sorted = [...values].sort((a, b) => a - b);
  const count = sorted.length;
  if (count === 0) return { count: 0, total: 0, min: 0, median: 0, max: 0, largestShare: 0 };
  let total = 0;
  for (const v of sorted) total += v;
  const mid = count >> 1;
  const median =
    count % 2 === 1
      ? (sorted[mid] as number)
      : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
  const max = sorted[count - 1] as number;
  return {
    count,
    total,
    min: sorted[0] as number,
    median,
    max,
    largestShare: total === 0 ? 0 : max / total,
  };
}

/** One line for error messages: the structure a strict split had to work with. */
export function describeStructure(structure: ComponentStructure): string {
  const q = structure.queriesPerComponent;
  const b = structure.banksPerComponent;
  const m = structure.memoriesPerComponent;
  const pct = (share: number): string => `${(share * 100).toFixed(1)}%`;
  return (
    `${structure.components} connected component(s) holding ${q.total} queries, ` +
    `${b.total} banks and ${m.total} memories; queries per component min ${q.min} / ` +
    `median ${q.median} / max ${q.max}; the largest component holds ${pct(q.largestShare)} ` +
    `of the queries`
  );
}
