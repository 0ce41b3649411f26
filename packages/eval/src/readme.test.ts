import { RelevanceLabels } from '@bfe/core';
import { describe, expect, it } from 'vitest';
import { evaluate } from './evaluate.js';
import { rankByScore } from './metrics.js';
import { perQueryLines, recomputeFromPerQuery } from './per-query.js';
import { buildResults } from './results.js';

// Keeps README.md's example honest: the same calls, the numbers it shows.
describe('the README example', () => {
  it('gives the numbers the README shows', () => {
    const labels = new RelevanceLabels();
    labels.add('q1', 'm1');
    const common = {
      labels,
      candidates: new Map([['q1', new Set(['m1', 'm2', 'm3'])]]),
      subtaskOf: new Map([['q1', 'single-hop']]),
      subtasks: ['single-hop'],
    };
    const pooled = evaluate({ ...common, runs: new Map([['q1', ['m2', 'm1', 'm3']]]) });
    expect(pooled.metrics['recall@1']).toBe(0);
    expect(pooled.metrics['ndcg@10']).toBeCloseTo(1 / Math.log2(3), 15);
    expect(pooled.gains).toBe('binary');
    const ranked = rankByScore(['m2', 'm1', 'm3', 'x'], [0.5, 0.5, 0.1, 0.9]);
    expect(ranked).toEqual(['x', 'm1', 'm2', 'm3']);
    const fusion = evaluate({ ...common, runs: new Map([['q1', ranked]]) });
    expect(fusion.metrics['ndcg@1']).toBe(1);
    const results = buildResults({
      dataset: 'locomo',
      split: 'test',
      systems: [
        { name: 'pooled', evaluation: pooled },
        { name: 'sparse-fusion', evaluation: fusion },
      ],
      compareTo: ['pooled'],
    });
    const d = results.systems[1]?.comparisons?.pooled?.['ndcg@10'];
    expect(d?.meanDiff).toBeCloseTo(1 - 1 / Math.log2(3), 15);
    expect(d?.ci95[0]).toBeCloseTo(d?.meanDiff as number, 15);
    expect(d?.ci95[1]).toBeCloseTo(d?.meanDiff as number, 15);
    expect(d?.pValue).toBe(1);
    const lines = [...perQueryLines('pooled', pooled), ...perQueryLines('sparse-fusion', fusion)];
    expect(recomputeFromPerQuery(lines).get('pooled')?.metrics['ndcg@10']).toBe(
      pooled.metrics['ndcg@10'],
    );
  });
});
