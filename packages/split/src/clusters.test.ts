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
  it('names each query by the smallest bank id of its connected component', () => {
    const b = bench('longmemeval-s', { s9: 1, s2: 1, s5: 2, s7: 1, s1: 1 }, [
      ['q1', { ids: ['s9:m0', 's5:m1'] }],
      ['q2', { ids: ['s5:m0', 's2:m0'] }], // joins q1's component through s5
      ['q3', { ids: ['s7:m0'] }],
      ['q4', { banks: ['s7'] }],
    ]);
    const clusters = queryClusters(b);
    expect(clusters.unit).toBe('haystack');
    expect([...clusters.of].sort()).toEqual([
      ['q1', 's2'],
      ['q2', 's2'],
      ['q3', 's7'],
      ['q4', 's7'],
    ]);
  });

  it('does not depend on the order of queries or memories', () => {
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
          const b = queryClusters(bench('x', banks, [...queries].reverse()));
          expect([...b.of].sort()).toEqual([...a.of].sort());
          // Reference: label propagation over banks until every query's banks share the least label.
          const label = Array.from({ length: 8 }, (_, i) => i);
          for (let changed = true; changed;) {
            changed = false;
            for (const l of links) {
              const least = Math.min(...l.map((x) => label[x] as number));
              for (const x of l) {
                if (label[x] !== least) {
                  label[x] = least;
                  changed = true;
                }
              }
            }
          }
          const want = links.map((l, i) => [`q${i}`, `b${label[l[0] as number]}`]);
          expect([...a.of].sort()).toEqual(want.sort());
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
