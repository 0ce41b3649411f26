import { DataError, memorySchema, querySchema } from '@bfe/core';
import type { Benchmark, Query } from '@bfe/core';
import { describe, expect, it } from 'vitest';
import { componentStructure, connectedComponents } from './graph.js';

type Candidates = { banks: string[] } | { ids: string[] };

/** A benchmark with `size` memories `<bank>:m<i>` per bank and the given queries. */
function bench(banks: Record<string, number>, queries: Array<[string, Candidates]>): Benchmark {
  const memories = Object.entries(banks).flatMap(([bankId, size]) =>
    Array.from({ length: size }, (_, i) => ({ id: `${bankId}:m${i}`, bankId, text: '', meta: {} })),
  );
  return {
    name: 'graph-test',
    options: {},
    memories,
    queries: queries.map(([id, c]): Query => ({
      id,
      text: '',
      category: 'c',
      meta: {},
      ...('banks' in c ? { candidateBankIds: c.banks } : { candidateIds: c.ids }),
    })),
    subtasks: ['c'],
    sources: [],
  };
}

describe('connectedComponents', () => {
  it('links queries to candidate banks and to the banks of candidate memories', () => {
    const b = bench({ b1: 2, b2: 1, b3: 3, b4: 1, b5: 4 }, [
      ['q3', { ids: ['b3:m0', 'b4:m0'] }],
      ['q1', { banks: ['b1'] }],
      ['q2', { banks: ['b2', 'b1'] }],
      ['q4', { ids: ['b3:m2'] }],
    ]);
    // The fixture is a valid benchmark by core's own schemas.
    for (const m of b.memories) expect(memorySchema.safeParse(m).success).toBe(true);
    for (const q of b.queries) expect(querySchema.safeParse(q).success).toBe(true);

    expect(connectedComponents(b)).toEqual([
      { queryIds: ['q1', 'q2'], bankIds: ['b1', 'b2'], memoryCount: 3 },
      { queryIds: ['q3', 'q4'], bankIds: ['b3', 'b4'], memoryCount: 4 },
    ]);
    expect(componentStructure(b).unlinkedBanks).toBe(1); // b5: no query reaches it
  });

  it('joins components transitively through shared banks', () => {
    const b = bench({ a: 1, b: 1, c: 1, d: 1, e: 1 }, [
      ['q1', { banks: ['a', 'b'] }],
      ['q3', { banks: ['c', 'd'] }],
      ['q2', { ids: ['b:m0', 'c:m0'] }],
      ['q4', { banks: ['e'] }],
    ]);
    expect(connectedComponents(b).map((c) => c.bankIds)).toEqual([['a', 'b', 'c', 'd'], ['e']]);
  });

  it('orders components by their smallest query id, whatever the file order', () => {
    const queries: Array<[string, Candidates]> = [
      ['z', { banks: ['b1'] }],
      ['m', { banks: ['b2'] }],
      ['a', { banks: ['b1'] }],
      ['b', { banks: ['b3'] }],
    ];
    const forward = connectedComponents(bench({ b1: 1, b2: 1, b3: 1 }, queries));
    const backward = connectedComponents(bench({ b3: 1, b2: 1, b1: 1 }, [...queries].reverse()));
    expect(forward.map((c) => c.queryIds)).toEqual([['a', 'z'], ['b'], ['m']]);
    expect(backward).toEqual(forward);
  });
});

describe('componentStructure', () => {
  it('summarises queries, banks and memories per component', () => {
    const b = bench({ b1: 2, b2: 1, b3: 5, b4: 1 }, [
      ['q1', { banks: ['b1'] }],
      ['q2', { banks: ['b2', 'b3'] }],
      ['q3', { banks: ['b3'] }],
      ['q4', { banks: ['b2'] }],
      ['q5', { banks: ['b4'] }],
    ]);
    expect(componentStructure(b)).toEqual({
      components: 3,
      queriesPerComponent: { count: 3, total: 5, min: 1, median: 1, max: 3, largestShare: 3 / 5 },
      banksPerComponent: { count: 3, total: 4, min: 1, median: 1, max: 2, largestShare: 2 / 4 },
      memoriesPerComponent: { count: 3, total: 9, min: 1, median: 2, max: 6, largestShare: 6 / 9 },
      unlinkedBanks: 0,
    });
  });

  it('takes the mean of the two middle values as the median of an even count', () => {
    const b = bench({ b1: 1, b2: 1 }, [
      ['q1', { banks: ['b1'] }],
      ['q2', { banks: ['b2'] }],
      ['q3', { banks: ['b2'] }],
      ['q4', { banks: ['b2'] }],
    ]);
    expect(componentStructure(b).queriesPerComponent).toMatchObject({ median: 2, min: 1, max: 3 });
  });

  it('reports zeros for a benchmark without queries', () => {
    const s = componentStructure(bench({ b1: 3 }, []));
    expect(s.components).toBe(0);
    expect(s.queriesPerComponent).toEqual({
      count: 0,
      total: 0,
      min: 0,
      median: 0,
      max: 0,
      largestShare: 0,
    });
    expect(s.unlinkedBanks).toBe(1);
  });
});

describe('graph errors', () => {
  it('names the query and the candidate id that is not a memory', () => {
    const b = bench({ b1: 1 }, [
      ['q1', { ids: ['b1:m0', 'ghost'] }],
      ['q2', { banks: ['nowhere'] }],
    ]);
    expect(() => connectedComponents(b)).toThrow(DataError);
    expect(() => connectedComponents(b)).toThrow(
      /2 candidate reference\(s\) of 2 queries .*q1 → memory ghost, q2 → bank nowhere/,
    );
  });

  it('counts every dangling reference but quotes only the first five', () => {
    const ids = Array.from({ length: 8 }, (_, i) => `ghost${i}`);
    const b = bench({ b1: 1 }, [['q1', { ids }]]);
    expect(() => componentStructure(b)).toThrow(
      /8 candidate reference\(s\) of 1 query .*\(3 more\)/,
    );
  });

  it('rejects repeated query and memory ids', () => {
    const b = bench({ b1: 1 }, [
      ['q1', { banks: ['b1'] }],
      ['q1', { banks: ['b1'] }],
    ]);
    expect(() => connectedComponents(b)).toThrow(/repeated id\(s\): query q1/);
    const twice: Benchmark = {
      ...b,
      queries: b.queries.slice(0, 1),
      memories: [...b.memories, ...b.memories],
    };
    expect(() => connectedComponents(twice)).toThrow(/memory b1:m0/);
  });
});
