import { DataError } from '@bfe/core';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { evaluate } from './evaluate.js';
import type { EvaluateInput, Evaluation } from './evaluate.js';
import { perQueryLineSchema, perQueryLines, recomputeFromPerQuery } from './per-query.js';
import type { PerQueryLine } from './per-query.js';
import { syntheticBenchmark } from './testing/synthetic.js';

const SUBTASKS = ['1', '2', '3', '4'];
const SYSTEMS = ['pooled', 'maxsim', 'sparse-fusion'];

/** Everything but the diagnostics, which need the candidate sets and are `null` when recomputed. */
function comparable(e: Evaluation): Omit<Evaluation, 'diagnostics'> {
  const rest: Record<string, unknown> = { ...e };
  delete rest['diagnostics'];
  return rest as Omit<Evaluation, 'diagnostics'>;
}

describe('recomputeFromPerQuery', () => {
  it('recomputes every figure of the direct evaluation exactly, for every system', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 2 ** 32 - 1 }),
        fc.integer({ min: 1, max: 80 }),
        (seed, n) => {
          const { inputs } = syntheticBenchmark(seed, n, SUBTASKS, SYSTEMS);
          let direct: Map<string, Evaluation>;
          try {
            direct = new Map(SYSTEMS.map((s) => [s, evaluate(inputs.get(s) as EvaluateInput)]));
          } catch (error) {
            // A tiny benchmark may have no labelled query at all: then both sides must refuse it.
            expect(error).toBeInstanceOf(DataError);
            return;
          }
          const lines = SYSTEMS.flatMap((s) => [...perQueryLines(s, direct.get(s) as Evaluation)]);
          for (const line of lines) expect(perQueryLineSchema.safeParse(line).success).toBe(true);
          expect(lines).toHaveLength(SYSTEMS.length * n);
          // Through JSON, as a file would carry them.
          const reread = lines.map((l) => perQueryLineSchema.parse(JSON.parse(JSON.stringify(l))));
          const recomputed = recomputeFromPerQuery(reread, { subtasks: SUBTASKS });
          expect([...recomputed.keys()]).toEqual(SYSTEMS);
          for (const s of SYSTEMS) {
            const again = recomputed.get(s) as Evaluation;
            expect(again.diagnostics).toBeNull();
            expect(comparable(again)).toEqual(comparable(direct.get(s) as Evaluation));
          }
        },
      ),
      { numRuns: 40 },
    );
  });

  it('uses the order of first appearance when no subtasks are given', () => {
    const lines: PerQueryLine[] = [
      { system: 'bm25', queryId: 'a', subtask: 'x', ranked: ['m1'], relevant: ['m1'] },
      { system: 'bm25', queryId: 'b', subtask: 'y', ranked: ['m1'], relevant: ['m2'] },
      { system: 'bm25', queryId: 'c', subtask: 'y', ranked: ['m1'], relevant: [] },
    ];
    const e = recomputeFromPerQuery(lines, { ks: [10] }).get('bm25') as Evaluation;
    expect(e.subtasks.map((s) => s.subtask)).toEqual(['x', 'y']);
    expect(e.metrics['recall@10']).toBe(0.5);
    expect(e.dropped.noRelevant).toBe(1);
  });

  it('refuses repeated lines, repeated ranked ids and undeclared subtasks', () => {
    const line: PerQueryLine = {
      system: 'bm25',
      queryId: 'a',
      subtask: 'x',
      ranked: ['m1'],
      relevant: ['m1'],
    };
    expect(() => recomputeFromPerQuery([line, line])).toThrow(
      "System 'bm25' has two lines for query 'a'.",
    );
    expect(() => recomputeFromPerQuery([{ ...line, ranked: ['m1', 'm1'] }])).toThrow(
      /ranked twice/,
    );
    expect(() => recomputeFromPerQuery([line], { subtasks: ['y'] })).toThrow(
      "Query 'a' belongs to subtask 'x', which is not declared (declared: 'y').",
    );
    expect(() => recomputeFromPerQuery([{ ...line, relevant: [] }])).toThrow(
      /System 'bm25': No query has a relevant memory/,
    );
  });

  it('reads grades when a line has them: one positive integer per relevant memory', () => {
    const base = { system: 'bm25', queryId: 'a', subtask: 'x', ranked: ['m1', 'm2'] };
    const line = perQueryLineSchema.parse({ ...base, relevant: ['m1', 'm2'], grades: [1, 3] });
    const e = recomputeFromPerQuery([line], { ks: [1] }).get('bm25') as Evaluation;
    expect(e.gains).toBe('graded');
    expect(e.metrics['ndcg@1']).toBe(1 / 3);
    expect(e.metrics['recall@1']).toBe(1);
    // All grades 1 written out: the binary numbers, recorded as binary.
    const ones = perQueryLineSchema.parse({ ...base, relevant: ['m1', 'm2'], grades: [1, 1] });
    const b = recomputeFromPerQuery([ones], { ks: [1] }).get('bm25') as Evaluation;
    expect(b.gains).toBe('binary');
    expect(b.metrics['ndcg@1']).toBe(1);
    for (const grades of [[1], [1, 0], [1, 2.5]]) {
      expect(
        perQueryLineSchema.safeParse({ ...base, relevant: ['m1', 'm2'], grades }).success,
      ).toBe(false);
    }
  });
});
