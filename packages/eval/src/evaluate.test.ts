import { ConfigError, DataError, RelevanceLabels } from '@bfe/core';
import { describe, expect, it } from 'vitest';
import { evaluate } from './evaluate.js';
import type { EvaluateInput } from './evaluate.js';
import { perQueryLines } from './per-query.js';

/**
 * Two subtasks of very different sizes, so that the headline (mean of subtask means) differs
 * from the mean over queries; one query without labels; one subtask with no query.
 */
function small(): EvaluateInput {
  const labels = new RelevanceLabels();
  labels.add('a1', 'm1');
  labels.add('a2', 'm2');
  labels.add('a3', 'm3');
  labels.add('b1', 'n1');
  labels.add('b1', 'gone'); // relevant but not a candidate
  labels.add('other-split', 'm1'); // ignored: not evaluated
  const bankA = new Set(['m1', 'm2', 'm3', 'm4']);
  return {
    runs: new Map([
      ['a1', ['m1', 'm2', 'm3', 'm4']], // hit at rank 1
      ['a2', ['m1', 'm2', 'm3', 'm4']], // hit at rank 2
      ['a3', ['x', 'm4', 'm1', 'm2']], // m3 never ranked; 'x' is not a candidate
      ['b1', ['n2', 'n1']], // hit at rank 2 of 2 relevant (one not a candidate)
      ['b2', ['n1', 'n2']], // no labels: dropped
    ]),
    labels,
    candidates: new Map([
      ['a1', bankA],
      ['a2', bankA],
      ['a3', bankA],
      ['b1', new Set(['n1', 'n2'])],
      ['b2', new Set(['n1', 'n2'])],
    ]),
    subtaskOf: new Map([
      ['a1', 'A'],
      ['a2', 'A'],
      ['a3', 'A'],
      ['b1', 'B'],
      ['b2', 'B'],
    ]),
    subtasks: ['A', 'B', 'C'],
    ks: [1, 10],
  };
}

const d2 = 1 / Math.log2(3); // discount of rank 2

describe('evaluate', () => {
  it('uses binary gains when every grade is 1, and records no grades', () => {
    const e = evaluate(small());
    expect(e.gains).toBe('binary');
    for (const q of e.queries) expect('grades' in q).toBe(false);
    // per-query.jsonl lines of a binary dataset carry no grades field.
    for (const line of perQueryLines('pooled', e))
      expect(Object.keys(line)).not.toContain('grades');
  });

  it('uses graded gains as soon as one evaluated query has a grade above 1', () => {
    const input = small();
    input.labels.add('b1', 'n1', 3); // n1 ranked 2nd of 2; 'gone' (grade 1) unrankable
    const e = evaluate(input);
    expect(e.gains).toBe('graded');
    const b1 = e.queries[3];
    expect(b1?.relevant).toEqual(['n1', 'gone']);
    expect(b1?.grades).toEqual([3, 1]);
    expect(e.queries[0]?.grades).toBeUndefined();
    // DCG 3/log2 3; ideal 3 + 1/log2 3. Recall is unchanged: 1 of min(2, 10).
    expect(b1?.metrics['ndcg@10']).toBeCloseTo((3 * d2) / (3 + d2), 15);
    expect(b1?.metrics['recall@10']).toBe(0.5);
    // A grade above 1 on a query outside the evaluated ones changes nothing.
    const other = small();
    other.labels.add('other-split', 'm1', 4);
    expect(evaluate(other).gains).toBe('binary');
  });

  it('computes per-query records, subtask means and an equally weighted headline', () => {
    const e = evaluate(small());
    expect(e.ks).toEqual([1, 10]);
    expect(e.metricNames).toEqual(['recall@1', 'recall@10', 'ndcg@1', 'ndcg@10']);
    expect(e.queries.map((q) => q.queryId)).toEqual(['a1', 'a2', 'a3', 'b1']);
    expect(e.queries[2]?.ranked).toEqual(['m4', 'm1', 'm2']);
    expect(e.queries[3]?.relevant).toEqual(['n1', 'gone']);

    const [a, b, c] = e.subtasks;
    expect(a?.nQueries).toBe(3);
    expect(a?.metrics?.['recall@10']).toBeCloseTo(2 / 3, 15);
    expect(a?.metrics?.['ndcg@10']).toBeCloseTo((1 + d2) / 3, 15);
    // b1: capped recall@10 = 1 / min(2, 10); NDCG = d2 / (1 + d2).
    expect(b?.metrics?.['recall@10']).toBeCloseTo(0.5, 15);
    expect(b?.metrics?.['ndcg@10']).toBeCloseTo(d2 / (1 + d2), 15);
    expect(b).toMatchObject({ nQueries: 1, nDropped: 1 });
    expect(c).toEqual({ subtask: 'C', nQueries: 0, nDropped: 0, metrics: null });

    // Headline = (A + B) / 2, not the mean over the 4 queries; C does not enter it.
    expect(e.metrics['recall@10']).toBeCloseTo((2 / 3 + 0.5) / 2, 15);
    expect(e.metrics['recall@1']).toBeCloseTo((1 / 3 + 0) / 2, 15);
    expect(e.nQueries).toBe(4);
    expect(e.dropped).toEqual({ noRelevant: 1 });
    expect(e.droppedQueries).toEqual([{ queryId: 'b2', subtask: 'B', ranked: ['n1', 'n2'] }]);
    expect(e.diagnostics).toEqual({
      rankedOutsideCandidates: 1,
      relevantOutsideCandidates: 1,
      queriesWithRelevantOutsideCandidates: 1,
    });
  });

  it('takes the ranking order as given: tied scores are the caller’s business', () => {
    const input = small();
    const swapped = new Map(input.runs);
    swapped.set('a2', ['m2', 'm1', 'm3', 'm4']);
    const e = evaluate({ ...input, runs: swapped });
    expect(e.queries[1]?.metrics['ndcg@1']).toBe(1);
    expect(evaluate(input).queries[1]?.metrics['ndcg@1']).toBe(0);
  });

  it('keeps the top keepTop filtered ids (default max(50, max k))', () => {
    const labels = new RelevanceLabels();
    labels.add('q', 'm0');
    const ids = Array.from({ length: 80 }, (_, i) => `m${i}`);
    const base = {
      runs: new Map([['q', ids]]),
      labels,
      candidates: new Map([['q', new Set(ids)]]),
      subtaskOf: new Map([['q', 's']]),
      subtasks: ['s'],
    };
    expect(evaluate(base).queries[0]?.ranked).toHaveLength(50);
    expect(evaluate({ ...base, ks: [60] }).queries[0]?.ranked).toHaveLength(60);
    expect(evaluate({ ...base, keepTop: 70 }).queries[0]?.ranked).toHaveLength(70);
    expect(() => evaluate({ ...base, keepTop: 10 })).toThrow(ConfigError);
  });

  it('names a query whose subtask is not declared', () => {
    const input = small();
    expect(() => evaluate({ ...input, subtasks: ['A', 'C'] })).toThrow(DataError);
    expect(() => evaluate({ ...input, subtasks: ['A', 'C'] })).toThrow(
      "Query 'b1' belongs to subtask 'B', which is not declared (declared: 'A', 'C').",
    );
    expect(() => evaluate({ ...input, subtasks: ['A', 'B', 'A'] })).toThrow(/declared twice/);
  });

  it('refuses a ranking with a repeated id', () => {
    const input = small();
    const runs = new Map(input.runs);
    runs.set('a1', ['m1', 'm2', 'm1']);
    expect(() => evaluate({ ...input, runs })).toThrow(
      "Query 'a1': memory 'm1' is ranked twice (ranks 1 and 3).",
    );
  });

  it('refuses malformed cut-offs as configuration errors', () => {
    expect(() => evaluate({ ...small(), ks: [10, Number.NaN] })).toThrow(ConfigError);
    expect(() => evaluate({ ...small(), ks: [] })).toThrow(ConfigError);
  });

  it('treats inputs that do not cover the same queries as a programmer error', () => {
    const input = small();
    const runs = new Map(input.runs);
    runs.delete('a3');
    expect(() => evaluate({ ...input, runs })).toThrow("evaluate: no ranking for query 'a3'");
    runs.set('a3', []);
    runs.set('zz', []);
    expect(() => evaluate({ ...input, runs })).toThrow(/query 'zz', which has no subtask/);
    const candidates = new Map(input.candidates);
    candidates.delete('b1');
    const error = (() => {
      try {
        evaluate({ ...input, candidates });
      } catch (e) {
        return e;
      }
      return undefined;
    })();
    expect(error).toBeInstanceOf(Error);
    expect(error).not.toBeInstanceOf(DataError);
  });

  it('fails clearly when no query has a relevant memory', () => {
    const input = small();
    expect(() => evaluate({ ...input, labels: new RelevanceLabels() })).toThrow(
      'No query has a relevant memory (5 dropped); there is nothing to evaluate.',
    );
  });
});
