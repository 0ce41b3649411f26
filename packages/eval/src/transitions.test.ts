import { ConfigError, DataError } from '@bfe/core';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { evaluate } from './evaluate.js';
import type { EvaluateInput } from './evaluate.js';
import { recomputeFromPerQuery } from './per-query.js';
import type { PerQueryLine } from './per-query.js';
import { buildResults, resultsSchema } from './results.js';
import { syntheticBenchmark } from './testing/synthetic.js';
import {
  queryTransitions,
  transitionPairsFor,
  transitionsFromPerQuery,
  transitionsSchema,
} from './transitions.js';

const SUBTASKS = ['1', '2', '3', '4'];

/** Slow reference: one query at a time, hit = any of the first k ids is listed as relevant. */
function reference(lines: readonly PerQueryLine[], from: string, to: string, k: number) {
  const hit = (l: PerQueryLine): boolean =>
    l.ranked.slice(0, k).some((id) => l.relevant.includes(id));
  const zero = { nQueries: 0, recoveries: 0, reverse: 0, bothHit: 0, bothMiss: 0 };
  const tally = { ...zero };
  const bySubtask: Record<string, typeof tally> = {};
  for (const a of lines) {
    if (a.system !== from || a.relevant.length === 0) continue;
    const b = lines.find((l) => l.system === to && l.queryId === a.queryId)!;
    const kind =
      hit(a) && hit(b) ? 'bothHit' : hit(a) ? 'reverse' : hit(b) ? 'recoveries' : 'bothMiss';
    const sub = (bySubtask[a.subtask] ??= { ...zero });
    sub.nQueries += 1;
    sub[kind] += 1;
    tally.nQueries += 1;
    tally[kind] += 1;
  }
  return { tally, bySubtask };
}

/** Random per-query lines of two systems over the same queries, some without relevant memory. */
const linesArb = fc
  .array(
    fc.record({
      subtask: fc.constantFrom(...SUBTASKS),
      nCandidates: fc.integer({ min: 1, max: 30 }),
      relevant: fc.uniqueArray(fc.nat({ max: 29 }), { maxLength: 4 }),
      orderA: fc.array(fc.double({ min: 0, max: 1, noNaN: true }), {
        minLength: 30,
        maxLength: 30,
      }),
      orderB: fc.array(fc.double({ min: 0, max: 1, noNaN: true }), {
        minLength: 30,
        maxLength: 30,
      }),
    }),
    { minLength: 1, maxLength: 40 },
  )
  .map((queries) =>
    queries.flatMap((q, i): PerQueryLine[] => {
      const ids = Array.from({ length: q.nCandidates }, (_, j) => `m${j}`);
      const rank = (order: number[]) =>
        [...ids].sort((x, y) => order[Number(x.slice(1))]! - order[Number(y.slice(1))]!);
      // A relevant id beyond the candidates never enters a ranking, as with real labels.
      const relevant = q.relevant.map((j) => `m${j}`);
      const base = { queryId: `q${i}`, subtask: q.subtask, relevant };
      return [
        { system: 'a', ranked: rank(q.orderA), ...base },
        { system: 'b', ranked: rank(q.orderB), ...base },
      ];
    }),
  );

describe('query-level transitions', () => {
  it('equal a slow reference on random rankings, per subtask and overall', () => {
    fc.assert(
      fc.property(linesArb, fc.integer({ min: 1, max: 25 }), (lines, k) => {
        fc.pre(lines.some((l) => l.relevant.length > 0));
        const want = reference(lines, 'a', 'b', k);
        const fromLines = transitionsFromPerQuery(lines, 'a', 'b', { k });
        const evals = recomputeFromPerQuery(lines, { ks: [1, 10, 25], subtasks: SUBTASKS });
        const fromEvals = queryTransitions(
          { name: 'a', evaluation: evals.get('a')! },
          { name: 'b', evaluation: evals.get('b')! },
          { k },
        );
        const net = want.tally.recoveries - want.tally.reverse;
        for (const t of [fromLines, fromEvals]) {
          expect(t.overall).toEqual({ ...want.tally, net });
          for (const s of t.subtasks) {
            const w = want.bySubtask[s.subtask]!;
            expect(s).toEqual({ subtask: s.subtask, ...w, net: w.recoveries - w.reverse });
          }
          expect(t.subtasks.map((s) => s.subtask).sort()).toEqual(
            Object.keys(want.bySubtask).sort(),
          );
          // Every evaluated query falls in exactly one of the four kinds; subtasks sum to overall.
          const o = t.overall;
          expect(o.recoveries + o.reverse + o.bothHit + o.bothMiss).toBe(o.nQueries);
          for (const key of ['nQueries', 'recoveries', 'reverse', 'bothHit', 'bothMiss'] as const) {
            expect(t.subtasks.reduce((sum, s) => sum + s[key], 0)).toBe(o[key]);
          }
          expect(transitionsSchema.safeParse(t).success).toBe(true);
        }
        // A → B recoveries are B → A reverse transitions.
        const back = transitionsFromPerQuery(lines, 'b', 'a', { k });
        expect([back.overall.recoveries, back.overall.reverse]).toEqual([
          fromLines.overall.reverse,
          fromLines.overall.recoveries,
        ]);
      }),
      { numRuns: 200, seed: 29 },
    );
  });

  it('counts a hand-made example: hit at rank 10 counts, at rank 11 does not', () => {
    const ten = Array.from({ length: 12 }, (_, i) => `m${i}`);
    const line = (
      system: string,
      queryId: string,
      subtask: string,
      top: string,
      rel: string[],
    ) => ({
      system,
      queryId,
      subtask,
      ranked: [top, ...ten.filter((id) => id !== top)],
      relevant: rel,
    });
    const lines: PerQueryLine[] = [
      line('a', 'q1', '1', 'm0', ['m10']), // a: m10 at rank 11 → miss
      line('b', 'q1', '1', 'm10', ['m10']), // b: m10 first → hit (recovery)
      line('a', 'q2', '1', 'm3', ['m3']), // hit
      line('b', 'q2', '1', 'm0', ['m11']), // m11 at rank 12 → miss (reverse)
      line('a', 'q3', '2', 'm0', ['m8']), // m8 at rank 9 → hit
      line('b', 'q3', '2', 'm1', ['m9']), // m9 at rank 10 → hit (both hit)
      line('a', 'q4', '2', 'm0', []), // no relevant memory: dropped
      line('b', 'q4', '2', 'm0', []),
    ];
    const t = transitionsFromPerQuery(lines, 'a', 'b');
    expect(t.k).toBe(10);
    expect(t.overall).toEqual({
      nQueries: 3,
      recoveries: 1,
      reverse: 1,
      bothHit: 1,
      bothMiss: 0,
      net: 0,
    });
    expect(t.subtasks).toEqual([
      { subtask: '1', nQueries: 2, recoveries: 1, reverse: 1, bothHit: 0, bothMiss: 0, net: 0 },
      { subtask: '2', nQueries: 1, recoveries: 0, reverse: 0, bothHit: 1, bothMiss: 0, net: 0 },
    ]);
    expect(transitionsFromPerQuery(lines, 'a', 'b', { k: 12 }).overall.recoveries).toBe(0);
  });

  it('refuses different queries, one system twice and a k beyond the kept ranking', () => {
    const base = { subtask: '1', ranked: ['m0'], relevant: ['m0'] };
    const lines: PerQueryLine[] = [
      { system: 'a', queryId: 'q1', ...base },
      { system: 'b', queryId: 'q2', ...base },
    ];
    expect(() => transitionsFromPerQuery(lines, 'a', 'b')).toThrow(DataError);
    expect(() => transitionsFromPerQuery(lines, 'a', 'a')).toThrow(ConfigError);
    expect(() => transitionsFromPerQuery(lines, 'a', 'c')).toThrow(/system 'c'/);
    const evals = recomputeFromPerQuery([lines[0]!, { ...lines[0]!, system: 'b' }], { ks: [10] });
    const a = { name: 'a', evaluation: evals.get('a')! };
    const b = { name: 'b', evaluation: evals.get('b')! };
    expect(queryTransitions(a, b).overall.bothHit).toBe(1);
    expect(() => queryTransitions(a, b, { k: 11 })).toThrow(ConfigError);
  });
});

describe('transitions in a results file', () => {
  const systems = ['pooled', 'bm25', 'sparse-fusion', 'adapted'];
  const { inputs } = syntheticBenchmark(7, 80, SUBTASKS, systems);
  const evaluations = systems.map((name) => ({
    name,
    evaluation: evaluate(inputs.get(name) as EvaluateInput),
  }));

  it('buildResults adds the predeclared pairs; old files without them still parse', () => {
    expect(transitionPairsFor(['pooled', 'bm25', 'sparse-fusion'])).toEqual([
      ['pooled', 'sparse-fusion'],
    ]);
    const pairs = transitionPairsFor(systems);
    expect(pairs).toEqual([
      ['pooled', 'sparse-fusion'],
      ['pooled', 'adapted'],
      ['sparse-fusion', 'adapted'],
    ]);
    const results = buildResults({
      dataset: 'd',
      split: 'test',
      systems: evaluations,
      transitions: pairs,
    });
    expect(results.transitions?.map((t) => [t.from, t.to])).toEqual(pairs);
    const pooled = results.systems[0]!;
    expect(results.transitions?.[0]?.overall.nQueries).toBe(pooled.nQueries);
    const json = JSON.parse(JSON.stringify(results)) as Record<string, unknown>;
    expect(resultsSchema.safeParse(json).success).toBe(true);
    delete json['transitions'];
    expect(resultsSchema.safeParse(json).success).toBe(true);
  });

  it('the schema rejects an unlisted system, altered counts and an undeclared subtask', () => {
    const results = buildResults({
      dataset: 'd',
      split: 'test',
      systems: evaluations,
      transitions: [['pooled', 'sparse-fusion']],
    });
    const t = results.transitions![0]!;
    const withT = (x: unknown) => resultsSchema.safeParse({ ...results, transitions: [x] }).success;
    expect(withT(t)).toBe(true);
    expect(withT({ ...t, to: 'hybrid' })).toBe(false);
    expect(withT({ ...t, to: 'pooled' })).toBe(false);
    const o = t.overall;
    expect(withT({ ...t, overall: { ...o, bothMiss: o.bothMiss + 1 } })).toBe(false);
    expect(withT({ ...t, overall: { ...o, net: o.net + 1 } })).toBe(false);
    const s0 = t.subtasks[0]!;
    expect(withT({ ...t, subtasks: [{ ...s0, subtask: '9' }, ...t.subtasks.slice(1)] })).toBe(
      false,
    );
    expect(() =>
      buildResults({
        dataset: 'd',
        split: 'test',
        systems: evaluations,
        transitions: [['pooled', 'x']],
      }),
    ).toThrow(/missing system/);
  });
});
