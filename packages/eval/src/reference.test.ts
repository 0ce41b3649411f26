import { readFileSync } from 'node:fs';
import { RelevanceLabels } from '@bfe/core';
import { describe, expect, it } from 'vitest';
import { evaluate } from './evaluate.js';
import { filterToCandidates, queryMetrics, rankByScore, recallAt } from './metrics.js';
import type { MetricName } from './metrics.js';

/**
 * The cross-check of METHOD.md §6 against independent implementations: the fixture is written
 * by tools/reference/eval_reference.py (pytrec_eval for NDCG@k and standard recall, checked
 * there against ranx; capped recall from its definition).
 */
interface FixtureQuery {
  id: string;
  subtask: string;
  candidates: string[];
  ranked: string[];
  relevant: string[];
  tie?: { ids: string[]; scores: number[] };
  expected: Record<string, number> | null;
  trecEvalTieOrder?: Record<string, number>;
}
interface Fixture {
  ks: number[];
  subtasks: string[];
  maxAbsDiff: Record<string, number>;
  queries: FixtureQuery[];
  aggregate: {
    metrics: Record<string, number>;
    subtasks: Record<
      string,
      { nQueries: number; nDropped: number; metrics: Record<string, number> | null }
    >;
    nQueries: number;
    droppedNoRelevant: number;
  };
}

const fixture = JSON.parse(
  readFileSync(new URL('../fixtures/reference-metrics.json', import.meta.url), 'utf8'),
) as Fixture;
const TOL = 1e-9;

function inputs() {
  const labels = new RelevanceLabels();
  const runs = new Map<string, string[]>();
  const candidates = new Map<string, Set<string>>();
  const subtaskOf = new Map<string, string>();
  for (const q of fixture.queries) {
    for (const m of q.relevant) labels.add(q.id, m, 1);
    runs.set(q.id, q.ranked);
    candidates.set(q.id, new Set(q.candidates));
    subtaskOf.set(q.id, q.subtask);
  }
  return { labels, runs, candidates, subtaskOf };
}

describe('cross-check against pytrec_eval / ranx (fixtures/reference-metrics.json)', () => {
  it('is a fixture worth checking against', () => {
    expect(fixture.queries.length).toBeGreaterThanOrEqual(200);
    expect(fixture.ks).toEqual([1, 5, 10, 25, 50]);
    // The Python side agreed with itself (pytrec_eval vs ranx vs the definitions).
    for (const diff of Object.values(fixture.maxAbsDiff)) expect(diff).toBeLessThanOrEqual(1e-12);
    expect(fixture.aggregate.droppedNoRelevant).toBeGreaterThan(0);
    expect(fixture.queries.some((q) => q.candidates.length > 50)).toBe(true);
    expect(fixture.queries.some((q) => q.relevant.length > 25)).toBe(true);
  });

  it('reproduces every per-query metric to 1e-9', () => {
    const { labels, runs, candidates, subtaskOf } = inputs();
    const evaluation = evaluate({
      runs,
      labels,
      candidates,
      subtaskOf,
      subtasks: fixture.subtasks,
      ks: fixture.ks,
    });
    const byId = new Map(evaluation.queries.map((r) => [r.queryId, r]));
    let maxDiff = 0;
    let compared = 0;
    for (const q of fixture.queries) {
      const record = byId.get(q.id);
      if (q.expected === null) {
        expect(record).toBeUndefined();
        continue;
      }
      expect(record).toBeDefined();
      const filtered = filterToCandidates(q.ranked, new Set(q.candidates), q.id);
      const relevant = new Set(q.relevant);
      for (const k of fixture.ks) {
        for (const name of [`recall@${k}`, `ndcg@${k}`] as MetricName[]) {
          const diff = Math.abs((record?.metrics[name] as number) - (q.expected[name] as number));
          maxDiff = Math.max(maxDiff, diff);
          compared += 1;
        }
        const standard = Math.abs(
          recallAt(filtered, relevant, k) - (q.expected[`trecRecall@${k}`] as number),
        );
        maxDiff = Math.max(maxDiff, standard);
        compared += 1;
      }
    }
    expect(compared).toBeGreaterThan(2000);
    expect(maxDiff).toBeLessThanOrEqual(TOL);
  });

  it('reproduces subtask means, the headline and the drop counts', () => {
    const { labels, runs, candidates, subtaskOf } = inputs();
    const e = evaluate({
      runs,
      labels,
      candidates,
      subtaskOf,
      subtasks: fixture.subtasks,
      ks: fixture.ks,
    });
    expect(e.nQueries).toBe(fixture.aggregate.nQueries);
    expect(e.dropped.noRelevant).toBe(fixture.aggregate.droppedNoRelevant);
    for (const [name, value] of Object.entries(fixture.aggregate.metrics)) {
      expect(Math.abs((e.metrics[name as MetricName] as number) - value)).toBeLessThanOrEqual(TOL);
    }
    for (const summary of e.subtasks) {
      const expected = fixture.aggregate.subtasks[summary.subtask];
      expect(summary.nQueries).toBe(expected?.nQueries);
      expect(summary.nDropped).toBe(expected?.nDropped);
      if (expected?.metrics === null) {
        // 'adversarial' has only queries without relevant memories: no figures, not in the headline.
        expect(summary.metrics).toBeNull();
        continue;
      }
      for (const [name, value] of Object.entries(expected?.metrics ?? {})) {
        expect(
          Math.abs((summary.metrics?.[name as MetricName] as number) - value),
        ).toBeLessThanOrEqual(TOL);
      }
    }
  });

  it('resolves tied scores by the stated rule (score desc, id asc), not trec_eval’s', () => {
    const ties = fixture.queries.filter((q) => q.tie !== undefined);
    expect(ties.length).toBeGreaterThan(10);
    let differs = 0;
    for (const q of ties) {
      const tie = q.tie as { ids: string[]; scores: number[] };
      expect(rankByScore(tie.ids, tie.scores, q.id)).toEqual(q.ranked);
      if (q.trecEvalTieOrder === undefined) continue;
      // trec_eval breaks ties by id descending; with that order bfe gives trec_eval's numbers.
      const cand = new Set(q.candidates);
      const trecOrder = tie.ids
        .map((id, i) => ({ id, s: tie.scores[i] as number }))
        .filter((d) => cand.has(d.id))
        .sort((a, b) => b.s - a.s || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0))
        .map((d) => d.id);
      const metrics = queryMetrics(trecOrder, new Set(q.relevant), fixture.ks);
      for (const [name, value] of Object.entries(q.trecEvalTieOrder)) {
        expect(Math.abs((metrics[name as MetricName] as number) - value)).toBeLessThanOrEqual(TOL);
        if (Math.abs(value - (q.expected?.[name] as number)) > 1e-12) differs += 1;
      }
    }
    // The tie rule changes some numbers, so this fixture really tests it.
    expect(differs).toBeGreaterThan(0);
  });

  it('has the readable hand-written tie case', () => {
    const q = fixture.queries.find((x) => x.id === 'q-tie-explicit');
    expect(q?.ranked).toEqual(['x9', 'd1', 'd2', 'd3']);
    expect(q?.expected?.['ndcg@1']).toBe(1);
    expect(q?.trecEvalTieOrder?.['ndcg@1']).toBe(0);
  });
});
