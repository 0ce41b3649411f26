import { ConfigError, DataError } from '@bfe/core';
import { describe, expect, it } from 'vitest';
import { evaluate } from './evaluate.js';
import type { EvaluateInput } from './evaluate.js';
import { buildResults, parseResults, resultsSchema } from './results.js';
import type { Results } from './results.js';
import { syntheticBenchmark } from './testing/synthetic.js';

const SUBTASKS = ['single-hop', 'multi-hop', 'temporal', 'open-domain'];
const SYSTEMS = ['pooled', 'maxsim', 'bm25', 'sparse-fusion', 'zero-floor', 'no-fusion'];
const { inputs } = syntheticBenchmark(42, 120, SUBTASKS, SYSTEMS);
const evaluations = SYSTEMS.map((name) => ({
  name,
  evaluation: evaluate(inputs.get(name) as EvaluateInput),
}));

function built(): Results {
  return buildResults({
    dataset: 'synthetic',
    split: 'test',
    systems: evaluations,
    compareTo: ['pooled'],
    resamples: 500,
    seed: 42,
    meta: { model: 'all-MiniLM-L6-v2', alpha: 0.5 },
  });
}

describe('buildResults and resultsSchema', () => {
  it('builds a valid results file with headline, subtask figures and comparisons to pooled', () => {
    const results = built();
    expect(resultsSchema.safeParse(JSON.parse(JSON.stringify(results))).success).toBe(true);
    expect(results.systems.map((s) => s.name)).toEqual(SYSTEMS);
    const pooled = results.systems[0];
    const fusion = results.systems[3];
    expect(pooled?.comparisons).toBeUndefined();
    // The default cut-offs, memory budgets 4, 8, 10 and 16 included.
    const ks = [1, 4, 5, 8, 10, 16, 25, 50];
    expect(Object.keys(pooled?.metrics ?? {})).toEqual([
      ...ks.map((k) => `recall@${k}`),
      ...ks.map((k) => `ndcg@${k}`),
    ]);
    expect(fusion?.metrics['ndcg@10']).toBe(evaluations[3]?.evaluation.metrics['ndcg@10']);
    const d = fusion?.comparisons?.pooled?.['ndcg@10'];
    expect(d?.meanDiff).toBeCloseTo(
      (fusion?.metrics['ndcg@10'] as number) - (pooled?.metrics['ndcg@10'] as number),
      12,
    );
    expect(Object.keys(fusion?.comparisons?.pooled ?? {})).toEqual(['recall@10', 'ndcg@10']);
    expect(results.significance).toEqual({
      resamples: 500,
      seed: 42,
      ci: 'stratified-paired-bootstrap-percentile',
      pValue: 'stratified-paired-sign-flip',
    });
    const subtaskQueries = Object.values(pooled?.subtasks ?? {}).reduce(
      (a, s) => a + s.nQueries,
      0,
    );
    expect(subtaskQueries).toBe(pooled?.nQueries);
    expect(pooled?.dropped.noRelevant).toBeGreaterThan(0);
  });

  it('rejects files that break the invariants', () => {
    const good = built();
    const mutate = (f: (r: Results) => void) => {
      const copy = structuredClone(good);
      f(copy);
      return resultsSchema.safeParse(copy).success;
    };
    expect(mutate(() => undefined)).toBe(true);
    expect(mutate((r) => delete r.systems[0]?.metrics['recall@10'])).toBe(false);
    expect(
      mutate(
        (r) => ((r.systems[0] as { metrics: Record<string, number> }).metrics['mrr@10'] = 0.5),
      ),
    ).toBe(false);
    expect(
      mutate(
        (r) => ((r.systems[0] as { metrics: Record<string, number> }).metrics['ndcg@10'] = 1.2),
      ),
    ).toBe(false);
    expect(mutate((r) => ((r.systems[1] as { name: string }).name = 'pooled'))).toBe(false);
    expect(
      mutate(
        (r) =>
          ((r.systems[0] as { metrics: Record<string, number> }).metrics['ndcg@10'] = Number.NaN),
      ),
    ).toBe(false);
    expect(mutate((r) => (r.ks = [1, 5, 25, 50]))).toBe(false);
    expect(mutate((r) => (r.ks = [1, 5, 10, 10, 25, 50]))).toBe(false);
    expect(mutate((r) => (r.subtasks = ['single-hop']))).toBe(false);
    expect(
      mutate((r) => {
        const c = r.systems[3]?.comparisons;
        if (c !== undefined) c['nobody'] = c['pooled'] ?? {};
      }),
    ).toBe(false);
    expect(mutate((r) => delete r.significance)).toBe(false);
    expect(mutate((r) => ((r as { schemaVersion: number }).schemaVersion = 2))).toBe(false);
    expect(mutate((r) => ((r as Record<string, unknown>)['extra'] = 1))).toBe(false);
  });

  it('reports an invalid file as a DataError with a readable zod report', () => {
    const bad = { ...built(), dataset: '' };
    expect(() => parseResults(bad, 'runs/x/results.json')).toThrow(DataError);
    expect(() => parseResults(bad, 'runs/x/results.json')).toThrow(
      /runs\/x\/results.json is not a valid results file:\n.*dataset/s,
    );
    expect(parseResults(JSON.parse(JSON.stringify(built())))).toEqual(built());
  });

  it('refuses cut-offs without the headline k = 10 and unknown baselines', () => {
    const noTen = SYSTEMS.slice(0, 1).map((name) => ({
      name,
      evaluation: evaluate({ ...(inputs.get(name) as EvaluateInput), ks: [1, 5] }),
    }));
    expect(() => buildResults({ dataset: 'd', split: 'test', systems: noTen })).toThrow(
      ConfigError,
    );
    expect(() =>
      buildResults({ dataset: 'd', split: 'test', systems: evaluations, compareTo: ['adapted'] }),
    ).toThrow("buildResults: cannot compare with 'adapted': no such system");
  });

  it('refuses systems evaluated with different gains (they must share the labels)', () => {
    expect(evaluations.every((e) => e.evaluation.gains === 'binary')).toBe(true);
    const first = evaluations[0] as (typeof evaluations)[number];
    const graded = { ...first.evaluation, gains: 'graded' as const };
    expect(() =>
      buildResults({
        dataset: 'd',
        split: 'test',
        systems: [first, { name: 'maxsim', evaluation: graded }],
      }),
    ).toThrow("system 'maxsim' used graded gains but 'pooled' binary");
  });
});
