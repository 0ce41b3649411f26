import {
  BfeError,
  ConfigError,
  DataError,
  SplitError,
  benchmarkHash,
  splitSchema,
} from '@bfe/core';
import type { Benchmark, Memory, Query, Split, SplitName } from '@bfe/core';
import { describe, expect, it } from 'vitest';
import { SplitInvalidError } from './errors.js';
import { componentStructure } from './graph.js';
import { makeSplit, splitContentHash } from './make-split.js';
import type { SplitBody } from './make-split.js';
import { assertNoLeak, verifySplit } from './verify.js';

const NAMES: readonly SplitName[] = ['train', 'validation', 'test'];

function benchmark(name: string, memories: Memory[], queries: Query[]): Benchmark {
  return { name, options: {}, memories, queries, subtasks: ['single-hop'], sources: [] };
}

function query(id: string, candidates: Pick<Query, 'candidateBankIds' | 'candidateIds'>): Query {
  return { id, text: `question ${id}`, category: 'single-hop', meta: {}, ...candidates };
}

/**
 * LoCoMo-like: 10 conversations, each its own bank of turns, each query ranks its own
 * conversation (candidateBankIds), so every conversation is one connected component.
 */
function locomoLike(): Benchmark {
  const memories: Memory[] = [];
  const queries: Query[] = [];
  for (let c = 0; c < 10; c++) {
    const bankId = `conv-${c}`;
    for (let t = 0; t < 5 + c; t++) {
      memories.push({ id: `${bankId}:D1:${t}`, bankId, text: `turn ${t}`, meta: { speaker: 'A' } });
    }
    for (let q = 0; q < 3 + (c % 4); q++) {
      queries.push(query(`${bankId}:q${q}`, { candidateBankIds: [bankId] }));
    }
  }
  return benchmark('locomo-like', memories, queries);
}

/**
 * LongMemEval-like: sessions are banks, and every query's haystack (candidateIds) draws
 * turns from a window of sessions that overlaps the next query's window, so the haystacks
 * share sessions and the whole benchmark is one connected component.
 */
function longMemEvalLike(): Benchmark {
  const memories: Memory[] = [];
  for (let s = 0; s < 30; s++) {
    for (let t = 0; t < 3; t++) {
      memories.push({ id: `s${s}:t${t}`, bankId: `s${s}`, text: `turn ${t}`, meta: {} });
    }
  }
  const queries: Query[] = [];
  for (let q = 0; q < 25; q++) {
    const ids: string[] = [];
    for (let s = q; s < q + 6; s++) ids.push(`s${s % 30}:t${(q + s) % 3}`);
    queries.push(query(`lme-${String(q).padStart(3, '0')}`, { candidateIds: ids }));
  }
  return benchmark('longmemeval-like', memories, queries);
}

/** Recomputes the hash after a deliberate edit, so verifySplit must find the edit itself. */
function rehash(body: SplitBody): Split {
  return { ...body, hash: splitContentHash(body) };
}

function withoutHash(split: Split): SplitBody {
  const body: Partial<Split> = { ...split };
  delete body.hash;
  return body as SplitBody;
}

describe('makeSplit, connected-bank (LoCoMo-like)', () => {
  const b = locomoLike();

  it('splits 10 conversations 6/2/2 with conversations as units', () => {
    const split = makeSplit(b, { seed: 42, ratios: [6, 2, 2] });
    expect(split.policy).toBe('connected-bank');
    expect(split.unit).toBe('component');
    expect(split.unitCounts).toEqual({ train: 6, validation: 2, test: 2 });
    const convsOf = (name: SplitName): string[] => split.banks[name];
    expect(NAMES.map((n) => convsOf(n).length)).toEqual([6, 2, 2]);
    expect(new Set(NAMES.flatMap(convsOf)).size).toBe(10);
    for (const name of NAMES) {
      // Every query of the split belongs to a conversation of the split, and vice versa.
      const convs = new Set(split.queries[name].map((q) => q.split(':')[0]));
      expect([...convs].sort()).toEqual(split.banks[name]);
      expect(split.queries[name]).toEqual([...split.queries[name]].sort());
    }
    expect(NAMES.reduce((n, name) => n + split.queries[name].length, 0)).toBe(b.queries.length);
  });

  it('carries the strict flags, the benchmark hash and a valid content hash', () => {
    const split = makeSplit(b, { seed: 42, ratios: [0.6, 0.2, 0.2] });
    expect(split).toMatchObject({
      schemaVersion: 1,
      dataset: 'locomo-like',
      benchmarkHash: benchmarkHash(b),
      seed: 42,
      ratios: [0.6, 0.2, 0.2],
      diagnosticOnly: false,
      promotionEligible: true,
      marks: [],
    });
    expect(split.hash).toBe(splitContentHash(withoutHash(split)));
    expect(splitSchema.parse(split)).toEqual(split);
    expect(() => verifySplit(split, b)).not.toThrow();
    expect(() => assertNoLeak(split, b)).not.toThrow();
  });

  it('gives the same assignment for fractions, percentages and counts that mean 6/2/2', () => {
    const counts = makeSplit(b, { seed: 7, ratios: [6, 2, 2] });
    const fractions = makeSplit(b, { seed: 7, ratios: [0.6, 0.2, 0.2] });
    const percentages = makeSplit(b, { seed: 7, ratios: [60, 20, 20] });
    expect(fractions.queries).toEqual(counts.queries);
    expect(percentages.queries).toEqual(counts.queries);
    // The ratios are recorded as given, so the hashes differ.
    expect(new Set([counts.hash, fractions.hash, percentages.hash]).size).toBe(3);
  });

  it('is reproducible for a seed and moves with the seed', () => {
    const a = makeSplit(b, { seed: 42, ratios: [6, 2, 2] });
    expect(makeSplit(b, { seed: 42, ratios: [6, 2, 2] })).toStrictEqual(a);
    const others = [43, 44, 45].map((seed) => makeSplit(b, { seed, ratios: [6, 2, 2] }));
    expect(others.some((o) => JSON.stringify(o.queries) !== JSON.stringify(a.queries))).toBe(true);
  });

  it('fails with SplitError when the ratios leave a split empty', () => {
    const attempt = (): Split => makeSplit(b, { seed: 1, ratios: [0.98, 0.01, 0.01] });
    expect(attempt).toThrow(SplitError);
    expect(attempt).toThrow(
      /would leave validation and test empty: .* train 10, validation 0, test 0 of 10 components/,
    );
    expect(() => makeSplit(b, { seed: 1, ratios: [8, 2, 0] })).toThrow(/leave test empty/);
  });

  it('fails with SplitError when there are fewer than three components', () => {
    const two = benchmark(
      'two-banks',
      [
        { id: 'a:1', bankId: 'a', text: '', meta: {} },
        { id: 'b:1', bankId: 'b', text: '', meta: {} },
      ],
      [
        query('q1', { candidateBankIds: ['a'] }),
        query('q2', { candidateBankIds: ['b'] }),
        query('q3', { candidateIds: ['b:1'] }),
      ],
    );
    const attempt = (): Split => makeSplit(two, { seed: 42, ratios: [0.6, 0.2, 0.2] });
    expect(attempt).toThrow(
      /has 2 connected component\(s\) holding 3 queries.*need at least 3 components/,
    );
    expect(attempt).toThrow(/query-disjoint-shared-bank/);
  });

  it('rejects a malformed seed or ratios with ConfigError, and dangling candidates with DataError', () => {
    expect(() => makeSplit(b, { seed: -1, ratios: [6, 2, 2] })).toThrow(ConfigError);
    expect(() => makeSplit(b, { seed: 42, ratios: [5, 2, 2] })).toThrow(ConfigError);
    const dangling = benchmark('dangling', b.memories.slice(), [
      ...b.queries,
      query('zz', { candidateIds: ['conv-0:D1:0', 'not-a-memory'] }),
    ]);
    expect(() => makeSplit(dangling, { seed: 42, ratios: [6, 2, 2] })).toThrow(DataError);
    expect(() => makeSplit(dangling, { seed: 42, ratios: [6, 2, 2] })).toThrow(
      /zz → memory not-a-memory/,
    );
  });
});

describe('makeSplit, LongMemEval-like (one component)', () => {
  const b = longMemEvalLike();

  it('has one connected component because the haystacks share sessions', () => {
    const s = componentStructure(b);
    expect(s.components).toBe(1);
    expect(s.queriesPerComponent.largestShare).toBe(1);
    expect(s.banksPerComponent.total).toBe(30);
  });

  it('refuses a strict split, reporting the structure and naming the shared-bank policy', () => {
    let error: unknown;
    try {
      makeSplit(b, { seed: 42, ratios: [0.6, 0.2, 0.2] });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(SplitError);
    const e = error as SplitError;
    expect(e.code).toBe('SPLIT_IMPOSSIBLE');
    expect(e.message).toContain('1 connected component(s) holding 25 queries, 30 banks');
    expect(e.message).toContain('largest component holds 100.0% of the queries');
    expect(e.message).toContain("'query-disjoint-shared-bank'");
    expect(e.suggestion).toContain("'query-disjoint-shared-bank'");
    expect(e.suggestion).toContain('promotionEligible: false');
  });

  it('splits queries over the shared bank on explicit opt-in, marked diagnostic only', () => {
    const split = makeSplit(b, {
      policy: 'query-disjoint-shared-bank',
      seed: 42,
      ratios: [60, 20, 20],
    });
    expect(split).toMatchObject({
      policy: 'query-disjoint-shared-bank',
      unit: 'query',
      unitCounts: { train: 15, validation: 5, test: 5 },
      diagnosticOnly: true,
      promotionEligible: false,
      marks: ['shared-unlabelled-memory'],
    });
    for (const name of NAMES) expect(split.queries[name]).toHaveLength(split.unitCounts[name]);
    // Banks per split are the sessions its queries reach; they overlap across splits.
    const trainBanks = new Set(split.banks.train);
    expect(split.banks.test.some((bank) => trainBanks.has(bank))).toBe(true);
    expect(() => verifySplit(split, b)).not.toThrow();
  });

  it('lets assertNoLeak refuse the shared bank unless the caller opts in', () => {
    const split = makeSplit(b, {
      policy: 'query-disjoint-shared-bank',
      seed: 3,
      ratios: [0.6, 0.2, 0.2],
    });
    expect(() => assertNoLeak(split, b)).toThrow(SplitInvalidError);
    expect(() => assertNoLeak(split, b)).toThrow(/share one memory bank/);
    expect(() => assertNoLeak(split, b, { allowSharedBank: true })).not.toThrow();
  });

  it('fails a shared-bank split that would leave a split empty', () => {
    const attempt = (): Split =>
      makeSplit(b, { policy: 'query-disjoint-shared-bank', seed: 42, ratios: [0.8, 0.2, 0] });
    expect(attempt).toThrow(SplitError);
    expect(attempt).toThrow(/leave test empty/);
  });
});

describe('verifySplit', () => {
  const b = locomoLike();
  const split = makeSplit(b, { seed: 42, ratios: [6, 2, 2] });

  function violation(bad: Split, against: Benchmark = b): SplitInvalidError {
    try {
      verifySplit(bad, against);
    } catch (e) {
      expect(e).toBeInstanceOf(SplitInvalidError);
      expect(e).toBeInstanceOf(SplitError);
      expect(e).toBeInstanceOf(BfeError);
      expect((e as SplitInvalidError).code).toBe('SPLIT_INVALID');
      return e as SplitInvalidError;
    }
    throw new Error('verifySplit accepted a broken split');
  }

  it('detects an edit that did not update the hash', () => {
    expect(violation({ ...split, seed: 43 }).message).toMatch(/does not match the split's content/);
  });

  it('detects a split made from another benchmark', () => {
    const other = { ...b, queries: b.queries.slice(0, -1) };
    expect(violation(split, other).message).toMatch(
      /benchmarkHash .* is not the hash of this benchmark/,
    );
  });

  it('detects a query moved to another split: its conversation is then reachable from two', () => {
    const body = withoutHash(split);
    const moved = body.queries.train[0] as string;
    const queries = {
      ...body.queries,
      train: body.queries.train.slice(1),
      test: [...body.queries.test, moved].sort(),
    };
    const message = violation(rehash({ ...body, queries })).message;
    expect(message).toMatch(
      /bank 'conv-\d' \(\d+ memories\) is reachable from both train and test/,
    );
    expect(message).toMatch(/banks\.test/);
  });

  it('detects a query in two splits, a query in none and an unknown query', () => {
    const body = withoutHash(split);
    const dup = body.queries.train[0] as string;
    const dropped = body.queries.validation[0] as string;
    const queries = {
      train: body.queries.train,
      validation: body.queries.validation.slice(1),
      test: [...body.queries.test, dup, 'no-such-query'].sort(),
    };
    const message = violation(rehash({ ...body, queries })).message;
    expect(message).toContain(`query '${dup}' is in both train and test`);
    expect(message).toContain(`query '${dropped}' is in no split`);
    expect(message).toContain(`test holds query 'no-such-query', which is not in the benchmark`);
  });

  it('detects unsorted lists and a wrong unit count', () => {
    const body = withoutHash(split);
    const queries = { ...body.queries, train: [...body.queries.train].reverse() };
    const unitCounts = { ...body.unitCounts, validation: 3 };
    const message = violation(rehash({ ...body, queries, unitCounts })).message;
    expect(message).toMatch(/train query list is not sorted/);
    expect(message).toMatch(/unitCounts\.validation is 3, but its queries form 2 component/);
  });

  it('detects a shared-bank split disguised as promotion-eligible', () => {
    const shared = makeSplit(longMemEvalLike(), {
      policy: 'query-disjoint-shared-bank',
      seed: 1,
      ratios: [0.6, 0.2, 0.2],
    });
    const body = withoutHash(shared);
    const disguised = rehash({
      ...body,
      diagnosticOnly: false,
      promotionEligible: true,
      marks: [],
    });
    expect(violation(disguised, longMemEvalLike()).message).toMatch(
      /query-disjoint-shared-bank split must be diagnosticOnly: true/,
    );
    // Relabelling the policy instead exposes the shared sessions.
    const relabelled = rehash({
      ...body,
      policy: 'connected-bank',
      unit: 'component',
      diagnosticOnly: false,
      promotionEligible: true,
      marks: [],
    });
    expect(violation(relabelled, longMemEvalLike()).message).toMatch(/reachable from both/);
  });

  it('rejects a split that does not match the schema', () => {
    const broken = { ...split, hash: 'not-a-hash' };
    expect(violation(broken).message).toMatch(/does not match the split schema/);
  });
});
