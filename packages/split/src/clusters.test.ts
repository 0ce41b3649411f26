import type { Benchmark, Query } from '@bfe/core';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { bankUnit, queryClusters, restrictClusters } from './clusters.js';

type Candidates = { banks: string[] } | { ids: string[] };

function bench(
  name: string,
  banks: Record<string, number>,
  queries: Array<[string, Candidates]>,
): Benchmark {
  const memories = Object.entries(banks).flatMap(([bankId, size]) =>
    Array.from({ length: size }, (_, i) => ({ id: `${bankId}:m${i}`, bankId, text: '', meta: {} })),
  );
  return {
    name,
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

describe('queryClusters', () => {
  it('names each query by the candidate set it ranks', () => {
    const b = bench('longmemeval-s', { s9: 1, s2: 1, s5: 2, s7: 1, s1: 1 }, [
      ['q1', { ids: ['s9:m0', 's5:m1'] }],
      ['q2', { ids: ['s5:m0', 's2:m0'] }], // shares s5 with q1, but is its own haystack
      ['q3', { ids: ['s5:m1', 's9:m0'] }], // q1's haystack in another order
      ['q4', { banks: ['s7'] }],
      ['q5', { banks: ['s7'] }],
    ]);
    const clusters = queryClusters(b);
    expect(clusters.unit).toBe('haystack');
    const of = clusters.of;
    expect(of.get('q1')).toBe(of.get('q3'));
    expect(of.get('q1')).not.toBe(of.get('q2'));
    expect(of.get('q1')).toMatch(/^memories:[0-9a-f]{16}$/);
    expect(of.get('q4')).toBe('s7');
    expect(of.get('q5')).toBe('s7');
  });

  it('does not depend on the order of queries, memories or candidates', () => {
    fc.assert(
      fc.property(
        fc.array(fc.array(fc.integer({ min: 0, max: 7 }), { minLength: 1, maxLength: 3 }), {
          minLength: 1,
          maxLength: 12,
        }),
        (links) => {
          const banks = Object.fromEntries(Array.from({ length: 8 }, (_, i) => [`b${i}`, 1]));
          const queries = links.map((l, i): [string, Candidates] => [
            `q${i}`,
            { banks: l.map((x) => `b${x}`) },
          ]);
          const a = queryClusters(bench('x', banks, queries));
          const reversed = queries
            .map(([id, c]): [string, Candidates] => [
              id,
              { banks: [...(c as { banks: string[] }).banks].reverse() },
            ])
            .reverse();
          const b = queryClusters(bench('x', banks, reversed));
          expect([...b.of].sort()).toEqual([...a.of].sort());
          // Reference: two queries share a cluster exactly when their candidate sets are equal.
          const key = (l: number[]) => [...new Set(l)].sort().join();
          links.forEach((l, i) =>
            links.forEach((m, j) =>
              expect(a.of.get(`q${i}`) === a.of.get(`q${j}`)).toBe(key(l) === key(m)),
            ),
          );
        },
      ),
    );
  });

  it('restricts to the evaluated queries', () => {
    const b = bench('locomo', { c1: 1, c2: 1 }, [
      ['q1', { banks: ['c1'] }],
      ['q2', { banks: ['c2'] }],
    ]);
    const r = restrictClusters(queryClusters(b), ['q2', 'missing']);
    expect(r).toEqual({ unit: 'conversation', of: new Map([['q2', 'c2']]) });
  });
});

describe('bankUnit', () => {
  it('maps registry names to their bank unit', () => {
    expect(bankUnit('locomo')).toBe('conversation');
    expect(bankUnit('locomo-session')).toBe('conversation');
    expect(bankUnit('longmemeval-oracle')).toBe('haystack');
    expect(bankUnit('covidqa')).toBe('article');
    expect(bankUnit('lmeb:/data/LoCoMo')).toBe('bank');
    expect(bankUnit('locomotion')).toBe('bank');
  });
});
