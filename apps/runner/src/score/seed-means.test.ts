import { describe, expect, it } from 'vitest';
import type { Results } from '@bfe/eval';
import { parseRunResults, buildRunResults } from '../experiment/run-results.js';
import { seedMeans, seedMeansSchema } from './seed-means.js';

/** One seed's results: pooled fixed, adapted at the given NDCG@10 and Recall@10. */
function seedResults(adapted: [number, number], nQueries = 20): Results {
  const sys = (name: string, ndcg: number, recall: number) => ({
    name,
    metrics: { 'ndcg@10': ndcg, 'recall@10': recall },
    subtasks: { a: { metrics: { 'ndcg@10': ndcg, 'recall@10': recall }, nQueries } },
    nQueries,
    dropped: { noRelevant: 0 },
  });
  return {
    schemaVersion: 1,
    dataset: 'locomo',
    split: 'test',
    ks: [10],
    subtasks: ['a'],
    systems: [sys('pooled', 0.5, 0.6), sys('adapted', adapted[0], adapted[1])],
  };
}

describe('seedMeans', () => {
  it('gives the mean, the sample standard deviation (n − 1) and each seed, per system and metric', () => {
    const means = seedMeans([
      { seed: 42, results: seedResults([0.7, 0.8]) },
      { seed: 43, results: seedResults([0.8, 0.8]) },
      { seed: 44, results: seedResults([0.9, 0.8]) },
    ]);
    expect(seedMeansSchema.parse(means)).toEqual(means);
    expect(means.seeds).toEqual([42, 43, 44]);
    const adapted = means.systems[1]!;
    expect(adapted.name).toBe('adapted');
    expect(adapted.nQueries).toEqual([20, 20, 20]);
    expect(adapted.metrics['ndcg@10']!.mean).toBeCloseTo(0.8, 12);
    // Sample std of 0.7, 0.8, 0.9: sqrt((0.01 + 0 + 0.01) / 2) = 0.1.
    expect(adapted.metrics['ndcg@10']!.std).toBeCloseTo(0.1, 12);
    expect(adapted.metrics['ndcg@10']!.perSeed).toEqual([0.7, 0.8, 0.9]);
    expect(adapted.metrics['recall@10']).toEqual({ mean: 0.8, std: 0, perSeed: [0.8, 0.8, 0.8] });
    // Recall equal in every seed but NDCG not: the system is not identical across seeds.
    expect(adapted.identicalAcrossSeeds).toBe(false);
    expect(means.systems[0]!.identicalAcrossSeeds).toBe(true);
    expect(means.identicalAcrossSeeds).toBe(false);
  });

  it('flags every system identical when the seeds gave equal test metrics', () => {
    const means = seedMeans([
      { seed: 42, results: seedResults([0.7, 0.8]) },
      { seed: 43, results: seedResults([0.7, 0.8]) },
    ]);
    expect(means.identicalAcrossSeeds).toBe(true);
    expect(means.systems.every((s) => s.identicalAcrossSeeds)).toBe(true);
  });

  it('does not call equal figures on different query counts identical', () => {
    const means = seedMeans([
      { seed: 42, results: seedResults([0.7, 0.8], 20) },
      { seed: 43, results: seedResults([0.7, 0.8], 21) },
    ]);
    expect(means.systems[0]!.nQueries).toEqual([20, 21]);
    expect(means.identicalAcrossSeeds).toBe(false);
  });

  it('gives plain figures for one seed: std null, never "identical"', () => {
    const means = seedMeans([{ seed: null, results: seedResults([0.7, 0.8]) }]);
    expect(means.systems[1]!.metrics['ndcg@10']).toEqual({ mean: 0.7, std: null, perSeed: [0.7] });
    expect(means.identicalAcrossSeeds).toBe(false);
    expect(means.systems[1]!.identicalAcrossSeeds).toBe(false);
  });

  it('refuses seeds that report different systems, and per-seed lists of the wrong length', () => {
    const other = {
      ...seedResults([0.7, 0.8]),
      systems: seedResults([0.7, 0.8]).systems.slice(0, 1),
    };
    expect(() =>
      seedMeans([
        { seed: 42, results: seedResults([0.7, 0.8]) },
        { seed: 43, results: other },
      ]),
    ).toThrow("seed 43 has no system 'adapted'");
    const means = seedMeans([{ seed: 42, results: seedResults([0.7, 0.8]) }]);
    expect(() => seedMeansSchema.parse({ ...means, seeds: [42, 43] })).toThrow(
      /one count per seed \(2\)/,
    );
  });
});

describe('run results (the run folder results.json)', () => {
  const runs = [
    {
      seed: 42,
      splitHash: 'a'.repeat(64),
      results: seedResults([0.7, 0.8]),
      selected: { epoch: 0, alpha: 0.75 },
    },
    {
      seed: 43,
      splitHash: 'a'.repeat(64),
      results: seedResults([0.8, 0.8]),
      selected: { epoch: 2, alpha: 0.5 },
    },
  ];

  it('holds the seed means, the selection per seed and every seed’s results, and reads back', () => {
    const built = buildRunResults({ splitSeed: 42, selectionData: false, runs });
    expect(built).toMatchObject({
      kind: 'run-results',
      dataset: 'locomo',
      split: 'test',
      splitSeed: 42,
    });
    expect(built.adapter?.seeds).toEqual([
      { seed: 42, selectedEpoch: 0, selectedAlpha: 0.75, identity: true },
      { seed: 43, selectedEpoch: 2, selectedAlpha: 0.5, identity: false },
    ]);
    expect(built.runs.map((r) => r.results)).toEqual(runs.map((r) => r.results));
    expect(parseRunResults(JSON.parse(JSON.stringify(built)), 'results.json')).toEqual(built);
  });

  it('refuses a file whose means do not match its per-seed results', () => {
    const built = buildRunResults({ splitSeed: 42, selectionData: false, runs });
    const edited = structuredClone(built);
    edited.systems[1]!.metrics['ndcg@10']!.mean = 0.9;
    expect(() => parseRunResults(edited, 'runs/x/results.json')).toThrow(
      /runs\/x\/results.json is not a run results file:[\s\S]*seed means do not match/,
    );
  });
});
