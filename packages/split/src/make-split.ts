import { SplitError, benchmarkHash, contentHash, splitNameSchema, splitSchema } from '@bfe/core';
import type { Benchmark, Split, SplitName, SplitPolicy } from '@bfe/core';
import { z } from 'zod';
import { buildQueryBankGraph, describeStructure, summariseGraph } from './graph.js';
import type { QueryBankGraph } from './graph.js';
import { allocateUnits } from './ratios.js';
import type { SplitRatios, UnitAllocation } from './ratios.js';
import { checkSeed, seededShuffle } from './shuffle.js';

/**
 * Options of {@link makeSplit}.
 *
 * @example
 * const strict: MakeSplitOptions = { seed: 42, ratios: [0.6, 0.2, 0.2] };
 * const diagnostic: MakeSplitOptions = { policy: 'query-disjoint-shared-bank', seed: 42, ratios: [60, 20, 20] };
 */
export interface MakeSplitOptions {
  /**
   * `connected-bank` (default, strict): connected components are the units, so no bank or
   * memory is reachable from two splits. `query-disjoint-shared-bank` (explicit opt-in):
   * queries are the units and banks are shared; the split is marked diagnostic only.
   */
  readonly policy?: SplitPolicy;
  /** Integer in `[0, 2^32 − 1]`; METHOD.md §6 uses 42, 43 and 44. */
  readonly seed: number;
  /** Train, validation, test sizes: fractions, percentages or unit counts (see {@link allocateUnits}). */
  readonly ratios: SplitRatios;
}

/**
 * The split's content without its hash: what the hash is computed over.
 *
 * @example
 * const { hash, ...body }: Split = split; // body: SplitBody
 */
export type SplitBody = Omit<Split, 'hash'>;

/**
 * The policy whose results are diagnostic only, named in every strict failure message.
 *
 * @example
 * makeSplit(benchmark, { policy: SHARED_BANK_POLICY, seed: 42, ratios: [0.6, 0.2, 0.2] });
 */
export const SHARED_BANK_POLICY: SplitPolicy = 'query-disjoint-shared-bank';

const SPLIT_NAMES: readonly SplitName[] = splitNameSchema.options;

/** One assignable unit: a connected component (strict) or a single query (shared bank). */
export interface Unit {
  readonly queryIds: readonly string[];
  /** Indices into the graph's `bankIds`. */
  readonly banks: readonly number[];
}

/**
 * Splits a label-free benchmark into train, validation and test (METHOD.md §5), seeded and
 * reproducible. Labels are not an input, so no query or memory can be placed by looking at gold.
 *
 * - Units are the connected components of the query–bank graph (`connected-bank`, default) or
 *   single queries (`query-disjoint-shared-bank`).
 * - Units are put in a canonical order (components by their smallest query id, queries by id),
 *   shuffled with a seeded Fisher–Yates shuffle (pure-rand xoroshiro128plus), and the first
 *   `train` units go to train, the next `validation` to validation, the rest to test; unit
 *   counts come from {@link allocateUnits}. The split therefore depends only on the set of
 *   queries, memories and candidates, the seed and the ratios — not on the order of the file.
 * - Query lists and bank lists are sorted. Under the strict policy `banks` holds the banks of
 *   the split's components (disjoint across splits); under the shared-bank policy it holds the
 *   banks the split's queries link to, which may overlap — that overlap is the sharing.
 * - `benchmarkHash` is core's `benchmarkHash(benchmark)`; `hash` is the content hash of every
 *   other field. The result is validated with `splitSchema` before it is returned.
 *
 * @throws SplitError when a split would be empty, or when the strict policy has fewer than
 *   three components (the message then reports the component structure and names
 *   `query-disjoint-shared-bank` as the explicit alternative).
 * @throws ConfigError when the seed or the ratios are malformed.
 * @throws DataError when ids repeat or a candidate names no memory or bank.
 * @example
 * const split = makeSplit(benchmark, { seed: 42, ratios: [0.6, 0.2, 0.2] });
 * split.queries.test;       // ['conv-41:q3', 'conv-41:q7', …] (sorted)
 * split.unitCounts;         // { train: 6, validation: 2, test: 2 } (components)
 * split.promotionEligible;  // true
 * split.hash;               // 'c0ffee…' (64 hex digits)
 */
export function makeSplit(benchmark: Benchmark, options: MakeSplitOptions): Split {
  const policy = options.policy ?? 'connected-bank';
  const { seed, ratios } = options;
  checkSeed(seed);
  const strict = policy === 'connected-bank';
  const graph = buildQueryBankGraph(benchmark);
  const units = strict ? componentUnits(graph) : queryUnits(graph);

  if (units.length < SPLIT_NAMES.length) throw tooFewUnits(benchmark, graph, strict);
  const allocation = allocateUnits(ratios, units.length);
  const empty = SPLIT_NAMES.filter((_, k) => allocation.counts[k] === 0);
  if (empty.length > 0) throw emptySplit(benchmark, graph, strict, ratios, allocation, empty);

  const shuffled = seededShuffle(units, seed);
  const queries = { train: [] as string[], validation: [] as string[], test: [] as string[] };
  const banks = { train: [] as string[], validation: [] as string[], test: [] as string[] };
  let start = 0;
  SPLIT_NAMES.forEach((name, k) => {
    const end = start + (allocation.counts[k] as number);
    const bankSet = new Set<number>();
    for (let u = start; u < end; u++) {
      const unit = shuffled[u] as Unit;
      for (const q of unit.queryIds) queries[name].push(q);
      for (const b of unit.banks) bankSet.add(b);
    }
    queries[name].sort();
    banks[name] = [...bankSet].map((b) => graph.bankIds[b] as string).sort();
    start = end;
  });

  const body: SplitBody = {
    schemaVersion: 1,
    dataset: benchmark.name,
    benchmarkHash: benchmarkHash(benchmark),
    policy,
    seed,
    ratios: [ratios[0], ratios[1], ratios[2]],
    unit: strict ? 'component' : 'query',
    unitCounts: {
      train: allocation.counts[0],
      validation: allocation.counts[1],
      test: allocation.counts[2],
    },
    queries,
    banks,
    diagnosticOnly: !strict,
    promotionEligible: strict,
    marks: strict ? [] : ['shared-unlabelled-memory'],
  };
  const parsed = splitSchema.safeParse({ ...body, hash: splitContentHash(body) });
  if (!parsed.success) {
    // Everything above is built by this function: a schema failure is a bug here, not bad input.
    throw new Error(`makeSplit built an invalid split:\n${z.prettifyError(parsed.error)}`);
  }
  return parsed.data;
}

/**
 * Content hash of a split: SHA-256 of the canonical JSON of every field except `hash`.
 *
 * @example
 * const { hash, ...body } = split;
 * splitContentHash(body) === hash; // true for an untouched split
 */
export function splitContentHash(body: SplitBody): string {
  return contentHash(body);
}

/** The connected components of the graph as units, in the graph's canonical order. */
export function componentUnits(graph: QueryBankGraph): Unit[] {
  const bankIndex = new Map<string, number>();
  graph.bankIds.forEach((id, b) => bankIndex.set(id, b));
  return graph.components.map((c) => ({
    queryIds: c.queryIds,
    banks: c.bankIds.map((id) => bankIndex.get(id) as number),
  }));
}

/** Every query as its own unit (its haystack under the shared-bank policy), sorted by id. */
export function queryUnits(graph: QueryBankGraph): Unit[] {
  const ids = [...graph.queryBanks.keys()].sort();
  return ids.map((id) => ({ queryIds: [id], banks: graph.queryBanks.get(id) ?? [] }));
}

function sharedBankSuggestion(): string {
  return (
    `Re-run with policy '${SHARED_BANK_POLICY}' (explicit opt-in) to split queries over a ` +
    `shared memory bank; its results are marked shared-unlabelled-memory, diagnosticOnly: true, ` +
    `promotionEligible: false, and are never mixed with strict results.`
  );
}

function tooFewUnits(benchmark: Benchmark, graph: QueryBankGraph, strict: boolean): SplitError {
  if (!strict) {
    return new SplitError(
      `Cannot make a ${SHARED_BANK_POLICY} split of '${benchmark.name}': it has ` +
        `${graph.queryBanks.size} quer${graph.queryBanks.size === 1 ? 'y' : 'ies'}, and three ` +
        `non-empty splits need at least 3.`,
    );
  }
  const structure = summariseGraph(graph);
  return new SplitError(
    `Cannot make a connected-bank split of '${benchmark.name}': the query–bank graph has ` +
      `${describeStructure(structure)}. Three non-empty splits with no shared memory need at ` +
      `least 3 components. The explicit alternative is policy '${SHARED_BANK_POLICY}' ` +
      `(diagnostic only).`,
    { suggestion: sharedBankSuggestion() },
  );
}

function emptySplit(
  benchmark: Benchmark,
  graph: QueryBankGraph,
  strict: boolean,
  ratios: SplitRatios,
  allocation: UnitAllocation,
  empty: readonly SplitName[],
): SplitError {
  const [train, validation, test] = allocation.counts;
  const unitName = strict ? 'components' : 'queries';
  const total = train + validation + test;
  const base =
    `${strict ? 'connected-bank' : SHARED_BANK_POLICY} split of '${benchmark.name}' would leave ` +
    `${empty.join(' and ')} empty: ratios [${ratios.join(', ')}] read as ${allocation.reading} ` +
    `give train ${train}, validation ${validation}, test ${test} of ${total} ${unitName}.`;
  const counts = `[${total - 2}, 1, 1]`;
  if (!strict) {
    return new SplitError(`The ${base}`, {
      suggestion: `Raise the ratios of ${empty.join(' and ')}, or give integer counts such as ${counts}.`,
    });
  }
  return new SplitError(
    `The ${base} The query–bank graph has ${describeStructure(summariseGraph(graph))}. ` +
      `The explicit alternative is policy '${SHARED_BANK_POLICY}' (diagnostic only).`,
    {
      suggestion:
        `Raise the ratios of ${empty.join(' and ')}, or give component counts such as ` +
        `${counts}. ${sharedBankSuggestion()}`,
    },
  );
}
