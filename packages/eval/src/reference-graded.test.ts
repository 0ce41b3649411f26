import { readFileSync } from 'node:fs';
import { RelevanceLabels } from '@bfe/core';
import { describe, expect, it } from 'vitest';
import { evaluate } from './evaluate.js';
import type { Evaluation } from './evaluate.js';
import { DEFAULT_KS, filterToCandidates, queryMetrics, recallAt } from './metrics.js';
import type { MetricName } from './metrics.js';
import { perQueryLineSchema, perQueryLines, recomputeFromPerQuery } from './per-query.js';

/**
 * The graded cross-check: fixtures/reference-graded.json is written by
 * `tools/reference/eval_reference.py --graded` (pytrec_eval's ndcg_cut on graded qrels, checked
 * there against ranx's linear-gain `ndcg` and the definition; capped recall from its
 * definition with relevant = grade > 0), at the default cut-offs with the memory budgets.
 */
interface FixtureQuery {
  id: string;
  subtask: string;
  candidates: string[];
  ranked: string[];
  relevant: string[];
  grades: number[];
  expected: Record<string, number> | null;
}
interface Fixture {
  graded: boolean;
  gains: string;
  ks: number[];
  subtasks: string[];
  maxAbsDiff: Record<string, number>;
  queries: FixtureQuery[];
  aggregate: {
    metrics: Record<string, number>;
    subtasks: Record<string, { nQueries: number; metrics: Record<string, number> | null }>;
    nQueries: number;
    droppedNoRelevant: number;
  };
}

const fixture = JSON.parse(
  readFileSync(new URL('../fixtures/reference-graded.json', import.meta.url), 'utf8'),
) as Fixture;
const TOL = 1e-9;
const isGraded = (q: FixtureQuery): boolean => q.grades.some((g) => g > 1);

function evaluateFixture(): Evaluation {
  const labels = new RelevanceLabels();
  const runs = new Map<string, string[]>();
  const candidates = new Map<string, Set<string>>();
  const subtaskOf = new Map<string, string>();
  for (const q of fixture.queries) {
    q.relevant.forEach((m, i) => labels.add(q.id, m, q.grades[i]));
    runs.set(q.id, q.ranked);
    candidates.set(q.id, new Set(q.candidates));
    subtaskOf.set(q.id, q.subtask);
  }
  return evaluate({
    runs,
    labels,
    candidates,
    subtaskOf,
    subtasks: fixture.subtasks,
    ks: fixture.ks,
  });
}

describe('graded cross-check against pytrec_eval / ranx (fixtures/reference-graded.json)', () => {
  it('is a graded fixture at the default cut-offs, worth checking against', () => {
    expect(fixture.graded).toBe(true);
    expect(fixture.gains).toMatch(/^linear: gain = grade/);
    expect(fixture.ks).toEqual([...DEFAULT_KS]);
    for (const diff of Object.values(fixture.maxAbsDiff)) expect(diff).toBeLessThanOrEqual(1e-12);
    const judged = fixture.queries.filter((q) => q.expected !== null);
    expect(judged.filter(isGraded).length).toBeGreaterThanOrEqual(50);
    // Queries whose grades are all 1 sit beside graded ones: binary NDCG must come out of them.
    expect(judged.filter((q) => !isGraded(q)).length).toBeGreaterThanOrEqual(20);
    expect(fixture.aggregate.droppedNoRelevant).toBeGreaterThan(0);
  });

  it('reproduces every per-query metric to 1e-9, and says the gains were graded', () => {
    const e = evaluateFixture();
    expect(e.gains).toBe('graded');
    const byId = new Map(e.queries.map((r) => [r.queryId, r]));
    let maxDiff = 0;
    let compared = 0;
    for (const q of fixture.queries) {
      const record = byId.get(q.id);
      if (q.expected === null) {
        expect(record).toBeUndefined();
        continue;
      }
      // Grades are recorded only for a query with a grade above 1.
      expect(record?.grades).toEqual(isGraded(q) ? q.grades : undefined);
      const filtered = filterToCandidates(q.ranked, new Set(q.candidates), q.id);
      const relevant = new Map(q.relevant.map((m, i) => [m, q.grades[i] as number]));
      for (const k of fixture.ks) {
        for (const name of [`recall@${k}`, `ndcg@${k}`] as MetricName[]) {
          const diff = Math.abs((record?.metrics[name] as number) - (q.expected[name] as number));
          maxDiff = Math.max(maxDiff, diff);
          compared += 1;
        }
        const standard =
          recallAt(filtered, relevant, k) - (q.expected[`trecRecall@${k}`] as number);
        maxDiff = Math.max(maxDiff, Math.abs(standard));
        compared += 1;
      }
    }
    expect(compared).toBeGreaterThan(4000);
    expect(maxDiff).toBeLessThanOrEqual(TOL);
  });

  it('reproduces subtask means, the headline and the drop counts', () => {
    const e = evaluateFixture();
    expect(e.nQueries).toBe(fixture.aggregate.nQueries);
    expect(e.dropped.noRelevant).toBe(fixture.aggregate.droppedNoRelevant);
    for (const [name, value] of Object.entries(fixture.aggregate.metrics)) {
      expect(Math.abs((e.metrics[name as MetricName] as number) - value)).toBeLessThanOrEqual(TOL);
    }
    for (const summary of e.subtasks) {
      const expected = fixture.aggregate.subtasks[summary.subtask];
      expect(summary.nQueries).toBe(expected?.nQueries);
      if (expected?.metrics === null) {
        expect(summary.metrics).toBeNull();
        continue;
      }
      for (const [name, value] of Object.entries(expected?.metrics ?? {})) {
        const got = summary.metrics?.[name as MetricName] as number;
        expect(Math.abs(got - value)).toBeLessThanOrEqual(TOL);
      }
    }
  });

  it('changes NDCG, not recall, against binary gains; all-1 queries keep the binary numbers', () => {
    const e = evaluateFixture();
    const byId = new Map(e.queries.map((r) => [r.queryId, r]));
    let ndcgChanged = 0;
    for (const q of fixture.queries) {
      const record = byId.get(q.id);
      if (record === undefined) continue;
      const filtered = filterToCandidates(q.ranked, new Set(q.candidates), q.id);
      const binary = queryMetrics(filtered, new Set(q.relevant), fixture.ks);
      for (const k of fixture.ks) {
        expect(record.metrics[`recall@${k}`]).toBe(binary[`recall@${k}`]);
        if (!isGraded(q)) expect(record.metrics[`ndcg@${k}`]).toBe(binary[`ndcg@${k}`]);
        else if (record.metrics[`ndcg@${k}`] !== binary[`ndcg@${k}`]) ndcgChanged += 1;
      }
    }
    expect(ndcgChanged).toBeGreaterThan(100);
    // The readable case: the grade-3 memory second, so NDCG@1 = 1/3 (binary: 1).
    const explicit = byId.get('q-graded-explicit');
    expect(explicit?.metrics['ndcg@1']).toBe(1 / 3);
    expect(fixture.queries.find((q) => q.id === 'q-graded-explicit')?.expected?.['ndcg@1']).toBe(
      1 / 3,
    );
  });

  it('keeps the grades through per-query.jsonl, and recomputes the same figures', () => {
    const e = evaluateFixture();
    const lines = [...perQueryLines('pooled', e)].map((l) =>
      perQueryLineSchema.parse(JSON.parse(JSON.stringify(l))),
    );
    expect(lines.filter((l) => l.grades !== undefined).length).toBe(
      e.queries.filter((r) => r.grades !== undefined).length,
    );
    const again = recomputeFromPerQuery(lines, { ks: fixture.ks, subtasks: fixture.subtasks }).get(
      'pooled',
    ) as Evaluation;
    expect(again.gains).toBe('graded');
    expect(again.metrics).toEqual(e.metrics);
    expect(again.queries).toEqual(e.queries);
  });
});
