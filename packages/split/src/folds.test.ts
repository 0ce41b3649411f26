import { ConfigError, SplitError, splitSchema } from '@bfe/core';
import type { Benchmark, Memory, Query } from '@bfe/core';
import { describe, expect, it } from 'vitest';
import { foldSizes, makeFoldSplit, makeFoldSplits } from './folds.js';
import { makeSplit } from './make-split.js';
import { verifySplit } from './verify.js';

/** `n` conversations, each its own bank, each query ranking its own conversation. */
function conversations(n: number): Benchmark {
  const memories: Memory[] = [];
  const queries: Query[] = [];
  for (let c = 0; c < n; c++) {
    const bankId = `conv-${c}`;
    for (let t = 0; t < 4; t++)
      memories.push({ id: `${bankId}:${t}`, bankId, text: 't', meta: {} });
    for (let q = 0; q < 2 + (c % 3); q++) {
      queries.push({
        id: `${bankId}:q${q}`,
        text: 'q',
        category: 'single-hop',
        meta: {},
        candidateBankIds: [bankId],
      });
    }
  }
  return { name: 'convs', options: {}, memories, queries, subtasks: ['single-hop'], sources: [] };
}

/** The conversation of a query id `conv-<c>:q<q>`. */
const convOf = (id: string): string => id.split(':')[0] as string;

describe('foldSizes', () => {
  it('differ by at most one and sum to n', () => {
    expect(foldSizes(10, 5)).toEqual([2, 2, 2, 2, 2]);
    expect(foldSizes(11, 3)).toEqual([4, 4, 3]);
    expect(foldSizes(3, 3)).toEqual([1, 1, 1]);
  });
});

describe('makeFoldSplit', () => {
  it('tests every conversation exactly once, never validates on its own test units', () => {
    const b = conversations(11);
    const splits = makeFoldSplits(b, { folds: 4, seed: 7 });
    const tested = splits.flatMap((s) => s.queries.test);
    expect(tested.length).toBe(b.queries.length);
    expect(new Set(tested).size).toBe(b.queries.length);
    const testConvs = splits.map((s) => new Set(s.queries.test.map(convOf)));
    splits.forEach((s, f) => {
      expect(splitSchema.parse(s)).toEqual(s);
      verifySplit(s, b); // no bank reachable from two parts, hash and counts consistent
      const parts = [s.queries.train, s.queries.validation, s.queries.test].map(
        (q) => new Set(q.map(convOf)),
      );
      // The three parts share no conversation and cover all of them.
      expect(parts.reduce((n, p) => n + p.size, 0)).toBe(11);
      expect(new Set(parts.flatMap((p) => [...p])).size).toBe(11);
      // Validation is the previous fold's test part (the predeclared rule).
      const previous = testConvs[(f + 3) % 4] as Set<string>;
      expect([...(parts[1] as Set<string>)].sort()).toEqual([...previous].sort());
      expect(s.crossFit).toMatchObject({ folds: 4, fold: f, validationFold: (f + 3) % 4 });
    });
  });

  it('is seeded: the same seed gives the same folds, another seed other folds', () => {
    const b = conversations(10);
    const a = makeFoldSplits(b, { folds: 5, seed: 42 }).map((s) => s.hash);
    expect(makeFoldSplits(b, { folds: 5, seed: 42 }).map((s) => s.hash)).toEqual(a);
    expect(makeFoldSplits(b, { folds: 5, seed: 43 }).map((s) => s.hash)).not.toEqual(a);
  });

  it('does not depend on the order of the file', () => {
    const b = conversations(10);
    const reversed = {
      ...b,
      queries: [...b.queries].reverse(),
      memories: [...b.memories].reverse(),
    };
    const f = (x: Benchmark) => makeFoldSplit(x, { folds: 5, seed: 3 }, 2).queries;
    expect(f(reversed)).toEqual(f(b));
  });

  it('has the 60/20/20 strict split as its last fold of five over ten units', () => {
    const b = conversations(10);
    const strict = makeSplit(b, { seed: 42, ratios: [0.6, 0.2, 0.2] });
    const last = makeFoldSplit(b, { folds: 5, seed: 42 }, 4);
    expect(last.queries).toEqual(strict.queries);
    expect(last.banks).toEqual(strict.banks);
  });

  it('refuses fewer than three folds, a fold out of range and more folds than units', () => {
    const b = conversations(4);
    expect(() => makeFoldSplit(b, { folds: 2, seed: 1 }, 0)).toThrow(ConfigError);
    expect(() => makeFoldSplit(b, { folds: 3, seed: 1 }, 3)).toThrow(ConfigError);
    expect(() => makeFoldSplit(b, { folds: 5, seed: 1 }, 0)).toThrow(SplitError);
  });
});

describe('makeFoldSplit with the shared-bank policy', () => {
  it('makes every query a unit and marks the folds diagnostic', () => {
    const b = conversations(2); // two components: too few for connected-bank folds
    expect(() => makeFoldSplit(b, { folds: 3, seed: 1 }, 0)).toThrow(SplitError);
    const splits = makeFoldSplits(b, { folds: 3, seed: 1, policy: 'query-disjoint-shared-bank' });
    const tested = splits.flatMap((s) => s.queries.test);
    expect(tested.sort()).toEqual(b.queries.map((q) => q.id).sort());
    for (const s of splits) {
      expect(s).toMatchObject({ unit: 'query', diagnosticOnly: true, promotionEligible: false });
      expect(s.marks).toEqual(['shared-unlabelled-memory']);
      verifySplit(s, b);
    }
  });
});
