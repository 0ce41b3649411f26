import { SplitError, splitSchema } from '@bfe/core';
import type { Benchmark, Memory, Query, Split, SplitName, SplitPolicy } from '@bfe/core';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { componentStructure } from './graph.js';
import { makeSplit, splitContentHash } from './make-split.js';
import type { SplitBody } from './make-split.js';
import { allocateUnits } from './ratios.js';
import type { SplitRatios } from './ratios.js';
import { MAX_SEED } from './shuffle.js';
import { verifySplit } from './verify.js';

const NAMES: readonly SplitName[] = ['train', 'validation', 'test'];

/**
 * Random label-free benchmarks: 1–24 banks of 1–4 memories, 0–40 queries. Each query has a
 * home bank and links to it and at most one bank up to two further on, either as whole banks or as
 * single memories, so the graphs range from many small components to one large one.
 */
const benchmarkArb: fc.Arbitrary<Benchmark> = fc
  .record({
    bankSizes: fc.array(fc.integer({ min: 1, max: 4 }), {
      minLength: 1,
      maxLength: 24,
      size: 'medium',
    }),
    queries: fc.array(
      fc.record({
        byBank: fc.boolean(),
        home: fc.nat(),
        // Mostly one bank, sometimes a neighbour too: enough joins to merge some components.
        offsets: fc.array(fc.integer({ min: 0, max: 2 }), { minLength: 1, maxLength: 2 }),
        picks: fc.array(fc.nat(), { minLength: 2, maxLength: 2 }),
      }),
      { maxLength: 40, size: 'medium' },
    ),
  })
  .map(({ bankSizes, queries }) => {
    const banks = bankSizes.map((size, b) => ({
      id: `bank-${b}`,
      memoryIds: Array.from({ length: size }, (_, m) => `bank-${b}:m${m}`),
    }));
    const memories: Memory[] = banks.flatMap((bank) =>
      bank.memoryIds.map((id) => ({ id, bankId: bank.id, text: id, meta: {} })),
    );
    const built: Query[] = queries.map((q, i) => {
      const linked = q.offsets.map((o) => banks[(q.home + o) % banks.length] as (typeof banks)[0]);
      const base = { id: `q${i}`, text: `query ${i}`, category: 'c', meta: {} };
      if (q.byBank) return { ...base, candidateBankIds: [...new Set(linked.map((b) => b.id))] };
      const ids = linked.map(
        (bank, k) => bank.memoryIds[(q.picks[k] as number) % bank.memoryIds.length] as string,
      );
      return { ...base, candidateIds: [...new Set(ids)] };
    });
    return {
      name: 'random',
      options: {},
      memories,
      queries: built,
      subtasks: ['c'],
      sources: [],
    };
  });

type RatioSpec = {
  kind: 'fractions' | 'percentages' | 'counts';
  weights: [number, number, number];
};

// Zero weights are rare but present: they must make makeSplit fail, never return an empty split.
const weightArb = fc.oneof(
  { weight: 9, arbitrary: fc.integer({ min: 1, max: 10 }) },
  { weight: 1, arbitrary: fc.constant(0) },
);

const ratioSpecArb: fc.Arbitrary<RatioSpec> = fc.record({
  kind: fc.constantFrom('fractions', 'percentages', 'counts'),
  weights: fc.tuple(weightArb, weightArb, weightArb).filter(([a, b, c]) => a + b + c > 0),
});

/** Ratios of the requested kind for `units` units; counts are the fractions' rounding. */
function ratiosFor(spec: RatioSpec, units: number): SplitRatios {
  const sum = spec.weights[0] + spec.weights[1] + spec.weights[2];
  const scale = spec.kind === 'percentages' ? 100 : 1;
  const scaled = spec.weights.map((w) => (scale * w) / sum) as [number, number, number];
  if (spec.kind !== 'counts' || units === 0) return scaled;
  return allocateUnits(scaled, units).counts;
}

const seedArb = fc.integer({ min: 0, max: MAX_SEED });
const policyArb = fc.constantFrom<SplitPolicy>('connected-bank', 'query-disjoint-shared-bank');

function unitsOf(benchmark: Benchmark, policy: SplitPolicy): number {
  return policy === 'connected-bank'
    ? componentStructure(benchmark).components
    : benchmark.queries.length;
}

/** Makes the split, or checks that failing was right: fewer than 3 units or an empty split. */
function splitOrExpectedFailure(
  benchmark: Benchmark,
  policy: SplitPolicy,
  seed: number,
  spec: RatioSpec,
): Split | undefined {
  const units = unitsOf(benchmark, policy);
  const ratios = ratiosFor(spec, units);
  const impossible = units < 3 || allocateUnits(ratios, units).counts.some((c) => c === 0);
  if (impossible) {
    expect(() => makeSplit(benchmark, { policy, seed, ratios })).toThrow(SplitError);
    return undefined;
  }
  return makeSplit(benchmark, { policy, seed, ratios });
}

/** Every memory a query can rank: its candidate memories, or all memories of its banks. */
function reachableMemories(benchmark: Benchmark): Map<string, string[]> {
  const byBank = new Map<string, string[]>();
  for (const m of benchmark.memories) byBank.set(m.bankId, [...(byBank.get(m.bankId) ?? []), m.id]);
  const out = new Map<string, string[]>();
  for (const q of benchmark.queries) {
    out.set(q.id, q.candidateIds ?? (q.candidateBankIds ?? []).flatMap((b) => byBank.get(b) ?? []));
  }
  return out;
}

function withoutHash(split: Split): SplitBody {
  const body: Partial<Split> = { ...split };
  delete body.hash;
  return body as SplitBody;
}

function permuted<T>(items: readonly T[]): fc.Arbitrary<T[]> {
  return fc.shuffledSubarray([...items], { minLength: items.length, maxLength: items.length });
}

describe('split properties', () => {
  it('assigns every query exactly once and never to two splits', () => {
    fc.assert(
      fc.property(benchmarkArb, policyArb, seedArb, ratioSpecArb, (b, policy, seed, spec) => {
        const split = splitOrExpectedFailure(b, policy, seed, spec);
        if (split === undefined) return;
        const all = NAMES.flatMap((n) => split.queries[n]);
        expect(all).toHaveLength(b.queries.length);
        expect(new Set(all)).toEqual(new Set(b.queries.map((q) => q.id)));
        for (const name of NAMES) {
          expect(split.queries[name].length).toBeGreaterThan(0);
          expect(split.queries[name]).toEqual([...split.queries[name]].sort());
        }
        expect(splitSchema.safeParse(split).success).toBe(true);
        const { hash, ...body } = split;
        expect(hash).toBe(splitContentHash(body));
        verifySplit(split, b);
      }),
      { numRuns: 200 },
    );
  });

  it('under connected-bank, no memory and no bank is reachable from two splits', () => {
    fc.assert(
      fc.property(benchmarkArb, seedArb, ratioSpecArb, (b, seed, spec) => {
        const split = splitOrExpectedFailure(b, 'connected-bank', seed, spec);
        if (split === undefined) return;
        const reach = reachableMemories(b);
        const bankOf = new Map(b.memories.map((m) => [m.id, m.bankId]));
        const memoryOwner = new Map<string, SplitName>();
        const bankOwner = new Map<string, SplitName>();
        for (const name of NAMES) {
          for (const q of split.queries[name]) {
            for (const m of reach.get(q) ?? []) {
              expect(memoryOwner.get(m) ?? name).toBe(name);
              memoryOwner.set(m, name);
              const bank = bankOf.get(m) as string;
              expect(bankOwner.get(bank) ?? name).toBe(name);
              bankOwner.set(bank, name);
              expect(split.banks[name]).toContain(bank);
            }
          }
        }
        const listed = NAMES.flatMap((n) => split.banks[n]);
        expect(new Set(listed).size).toBe(listed.length);
        expect(split).toMatchObject({ diagnosticOnly: false, promotionEligible: true, marks: [] });
        expect(split.unit).toBe('component');
      }),
      { numRuns: 200 },
    );
  });

  it('under query-disjoint-shared-bank, the split is flagged diagnostic only', () => {
    fc.assert(
      fc.property(benchmarkArb, seedArb, ratioSpecArb, (b, seed, spec) => {
        const split = splitOrExpectedFailure(b, 'query-disjoint-shared-bank', seed, spec);
        if (split === undefined) return;
        expect(split).toMatchObject({
          unit: 'query',
          diagnosticOnly: true,
          promotionEligible: false,
          marks: ['shared-unlabelled-memory'],
        });
        for (const name of NAMES) expect(split.unitCounts[name]).toBe(split.queries[name].length);
      }),
      { numRuns: 200 },
    );
  });

  it('gives the same split (deep-equal, same hash) for the same seed', () => {
    fc.assert(
      fc.property(benchmarkArb, policyArb, seedArb, ratioSpecArb, (b, policy, seed, spec) => {
        const first = splitOrExpectedFailure(b, policy, seed, spec);
        if (first === undefined) return;
        const again = makeSplit(b, { policy, seed, ratios: first.ratios });
        expect(again).toStrictEqual(first);
        expect(again.hash).toBe(first.hash);
      }),
      { numRuns: 200 },
    );
  });

  it('does not depend on the order of queries, memories or candidates in the input', () => {
    const reordered = benchmarkArb.chain((b) =>
      fc.tuple(
        fc.constant(b),
        permuted(b.queries),
        permuted(b.memories),
        fc.array(fc.boolean(), { minLength: b.queries.length, maxLength: b.queries.length }),
      ),
    );
    fc.assert(
      fc.property(reordered, policyArb, seedArb, ratioSpecArb, (input, policy, seed, spec) => {
        const [b, queries, memories, reverse] = input;
        const split = splitOrExpectedFailure(b, policy, seed, spec);
        if (split === undefined) return;
        const flipped = queries.map((q, i): Query => {
          if (reverse[i] !== true) return q;
          if (q.candidateIds !== undefined)
            return { ...q, candidateIds: [...q.candidateIds].reverse() };
          return { ...q, candidateBankIds: [...(q.candidateBankIds ?? [])].reverse() };
        });
        const shuffled = makeSplit(
          { ...b, queries: flipped, memories },
          { policy, seed, ratios: split.ratios },
        );
        // core's benchmarkHash hashes records in file order, so it (and with it the split's own
        // hash) may change; every assignment field must not.
        const blank = { hash: '', benchmarkHash: '' };
        expect({ ...shuffled, ...blank }).toStrictEqual({ ...split, ...blank });
      }),
      { numRuns: 200 },
    );
  });

  it('verifySplit catches any single query moved to another split, even after rehashing', () => {
    fc.assert(
      fc.property(
        benchmarkArb,
        policyArb,
        seedArb,
        ratioSpecArb,
        fc.nat(),
        fc.nat(1),
        (b, policy, seed, spec, pick, shift) => {
          const split = splitOrExpectedFailure(b, policy, seed, spec);
          if (split === undefined) return;
          const from = NAMES[pick % 3] as SplitName;
          const to = NAMES[((pick % 3) + 1 + shift) % 3] as SplitName; // never `from`
          const source = split.queries[from];
          const moved = source[pick % source.length] as string;
          const body = withoutHash(split);
          const queries = {
            ...body.queries,
            [from]: source.filter((q) => q !== moved),
            [to]: [...split.queries[to], moved].sort(),
          };
          const tampered = { ...body, queries };
          expect(() => verifySplit({ ...tampered, hash: splitContentHash(tampered) }, b)).toThrow(
            SplitError,
          );
        },
      ),
      { numRuns: 200 },
    );
  });
});
