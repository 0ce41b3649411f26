import { DataError } from '@bfe/core';
import { describe, expect, it } from 'vitest';
import { evaluate } from './evaluate.js';
import type { EvaluateInput } from './evaluate.js';
import { clustersFromPerQuery, perQueryLines, recomputeFromPerQuery } from './per-query.js';
import { buildResults, parseResults, resultsSchema } from './results.js';
import { comparePaired } from './significance.js';
import { syntheticBenchmark } from './testing/synthetic.js';

const SUBTASKS = ['single-hop', 'multi-hop', 'temporal'];
const SYSTEMS = ['pooled', 'sparse-fusion'];
const { inputs } = syntheticBenchmark(7, 90, SUBTASKS, SYSTEMS);
const systems = SYSTEMS.map((name) => ({
  name,
  evaluation: evaluate(inputs.get(name) as EvaluateInput),
}));
const queryIds = [...(inputs.get('pooled') as EvaluateInput).subtaskOf.keys()];
/** Query `q<i>` in bank `conv-<i mod n>`. */
const clustersOf = (n: number) =>
  new Map(queryIds.map((q) => [q, `conv-${Number(q.slice(1)) % n}`]));
const build = (n?: number) =>
  buildResults({
    dataset: 'synthetic',
    split: 'test',
    systems,
    compareTo: ['pooled'],
    resamples: 400,
    seed: 42,
    ...(n === undefined ? {} : { clusters: { unit: 'conversation', of: clustersOf(n) } }),
  });

describe('buildResults with clusters', () => {
  it('adds cluster figures to every comparison and counts the clusters of the evaluated queries', () => {
    const results = build(7);
    expect(results.significance?.clusters).toEqual({
      unit: 'conversation',
      n: 7,
      headline: 'cluster',
    });
    const d = results.systems[1]?.comparisons?.pooled?.['ndcg@10'];
    const direct = comparePaired(systems[1]!.evaluation, systems[0]!.evaluation, {
      resamples: 400,
      seed: 42,
      clusters: clustersOf(7),
    })['ndcg@10'];
    expect(d?.cluster).toEqual({ ci95: direct?.cluster?.ci95, pValue: direct?.cluster?.pValue });
    // The query-level figures do not change when clusters are given.
    const plain = build();
    expect(plain.significance?.clusters).toBeUndefined();
    const { cluster, ...queryLevel } = d ?? {};
    expect(cluster).toBeDefined();
    expect(queryLevel).toEqual(plain.systems[1]?.comparisons?.pooled?.['ndcg@10']);
    expect(parseResults(JSON.parse(JSON.stringify(results)))).toEqual(results);
  });

  it('makes the query interval the headline below 5 clusters', () => {
    expect(build(4).significance?.clusters).toEqual({
      unit: 'conversation',
      n: 4,
      headline: 'query',
    });
    expect(build(5).significance?.clusters?.headline).toBe('cluster');
  });

  it('still parses a results file without cluster figures, and refuses inconsistent ones', () => {
    expect(resultsSchema.safeParse(JSON.parse(JSON.stringify(build()))).success).toBe(true);
    const wrongHeadline = JSON.parse(JSON.stringify(build(4)));
    wrongHeadline.significance.clusters.headline = 'cluster';
    expect(resultsSchema.safeParse(wrongHeadline).success).toBe(false);
    const missing = JSON.parse(JSON.stringify(build(6)));
    delete missing.systems[1].comparisons.pooled['recall@10'].cluster;
    expect(resultsSchema.safeParse(missing).success).toBe(false);
    const orphan = JSON.parse(JSON.stringify(build(6)));
    delete orphan.significance.clusters;
    expect(resultsSchema.safeParse(orphan).success).toBe(false);
  });
});

describe('per-query lines with clusters', () => {
  it('carry each query’s cluster, so the cluster figures can be recomputed', () => {
    const of = clustersOf(6);
    const lines = systems.flatMap((s) => [...perQueryLines(s.name, s.evaluation, of)]);
    expect(lines.every((l) => l.cluster === of.get(l.queryId))).toBe(true);
    const recovered = clustersFromPerQuery(lines);
    expect(recovered).toEqual(of);
    const again = recomputeFromPerQuery(lines, { subtasks: SUBTASKS });
    const rebuilt = buildResults({
      dataset: 'synthetic',
      split: 'test',
      systems: [...again].map(([name, evaluation]) => ({ name, evaluation })),
      compareTo: ['pooled'],
      resamples: 400,
      seed: 42,
      clusters: { unit: 'conversation', of: recovered as Map<string, string> },
    });
    const original = build(6);
    expect(rebuilt.systems[1]?.comparisons).toEqual(original.systems[1]?.comparisons);
    expect(rebuilt.significance).toEqual(original.significance);
  });

  it('has no clusters for old files and refuses a file that mixes both', () => {
    const old = [...perQueryLines('pooled', systems[0]!.evaluation)];
    expect(old.some((l) => 'cluster' in l)).toBe(false);
    expect(clustersFromPerQuery(old)).toBeUndefined();
    const mixed = [...old.slice(1), { ...old[0]!, cluster: 'conv-0' }];
    expect(() => clustersFromPerQuery(mixed)).toThrow(DataError);
    const twice = [
      { ...old[0]!, cluster: 'conv-0' },
      { ...old[0]!, system: 'bm25', cluster: 'conv-1' },
    ];
    expect(() => clustersFromPerQuery(twice)).toThrow(/two|cluster 'conv-0'/);
  });
});
