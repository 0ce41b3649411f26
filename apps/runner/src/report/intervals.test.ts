import { describe, expect, it } from 'vitest';
import { resultsSchema } from '@bfe/eval';
import type { Results } from '@bfe/eval';
import { renderScoreTable } from '../score/table.js';
import type { SubtaskComparisons } from '../score/table.js';
import { deltaChart } from './charts.js';
import { intervalChoice } from './format.js';
import { renderReport, reportInputSchema } from './index.js';

const fakeBundles = { vega: '', vegaLite: '', vegaEmbed: '' };

/** Two systems, fusion compared with pooled; cluster figures differ visibly from query ones. */
function clustered(n: number | undefined): Results {
  const figures = (r: number, d: number) => ({
    name: r === 0.4213 ? 'pooled' : 'sparse-fusion',
    metrics: { 'recall@10': r, 'ndcg@10': d },
    subtasks: { temporal: { metrics: { 'recall@10': r, 'ndcg@10': d }, nQueries: 322 } },
    nQueries: 322,
    dropped: { noRelevant: 0 },
  });
  const diff = (meanDiff: number) => ({
    meanDiff,
    ci95: [meanDiff - 0.02, meanDiff + 0.02] as [number, number],
    pValue: 0.0001,
    ...(n === undefined
      ? {}
      : {
          cluster: { ci95: [meanDiff - 0.09, meanDiff + 0.07] as [number, number], pValue: 0.25 },
        }),
  });
  return resultsSchema.parse({
    schemaVersion: 1,
    dataset: 'locomo',
    split: 'test',
    ks: [10],
    subtasks: ['temporal'],
    significance: {
      resamples: 10000,
      seed: 42,
      ci: 'stratified-paired-bootstrap-percentile',
      pValue: 'stratified-paired-sign-flip',
      ...(n === undefined
        ? {}
        : { clusters: { unit: 'conversation', n, headline: n >= 5 ? 'cluster' : 'query' } }),
    },
    systems: [
      figures(0.4213, 0.3011),
      {
        ...figures(0.512, 0.3874),
        comparisons: { pooled: { 'recall@10': diff(0.0907), 'ndcg@10': diff(0.0863) } },
      },
    ],
  });
}

function report(results: Results) {
  return renderReport(
    reportInputSchema.parse({
      experiment: 'locomo-minilm',
      runId: 'run-1',
      dataset: 'locomo',
      split: { name: 'test', diagnosticOnly: false, promotionEligible: true, marks: [] },
      results,
    }),
    { bundles: fakeBundles },
  );
}

const FEW =
  'query-level interval over 2 conversations; cannot include between-conversation variance';

describe('intervals with clusters', () => {
  it('prints the cluster CI and p as the headline with at least 5 clusters, the query CI beside', () => {
    const results = clustered(7);
    expect(intervalChoice(results).kind).toBe('cluster');
    const { markdown, terminal, html } = report(results);
    const row = markdown.split('\n').find((l) => l.startsWith('| sparse-fusion')) as string;
    // Δ [cluster CI] | p (cluster) | query-level CI, for Recall@10 then NDCG@10.
    expect(row).toContain('+0.0907 [+0.0007, +0.1607] | 0.250 | [+0.0707, +0.1107]');
    expect(row).toContain('+0.0863 [−0.0037, +0.1563] | 0.250 | [+0.0663, +0.1063]');
    expect(markdown).toContain('query-level 95% CI');
    expect(markdown).toContain('cluster bootstrap and sign-flip over 7 conversations');
    expect(html).toContain('cluster bootstrap and sign-flip over 7 conversations');
    expect(terminal).toContain('+0.0907 [+0.0007, +0.1607]');
    expect(terminal).toContain('intervals: 95% CI and p resample whole conversations');
    const values = (deltaChart(results, 'pooled') as { data: { values: { low: number }[] } }).data
      .values;
    expect(values[0]?.low).toBeCloseTo(0.0007, 12);
  });

  it('says the interval is query-level and cannot include between-bank variance below 5', () => {
    const results = clustered(2);
    const { markdown, terminal, html } = report(results);
    const row = markdown.split('\n').find((l) => l.startsWith('| sparse-fusion')) as string;
    expect(row).toContain('+0.0907 [+0.0707, +0.1107] | <0.001 |');
    expect(markdown).not.toContain('query-level 95% CI');
    expect(markdown).toContain(FEW);
    expect(html).toContain(FEW);
    expect(terminal).toContain(`intervals: ${FEW}`);
    const table = renderScoreTable(results, new Map(), 'pooled');
    expect(table).toContain(`intervals: ${FEW}`);
    expect(table).toContain('+0.0907 [+0.0707, +0.1107] p <0.001');
  });

  it('leaves results without clusters as they were', () => {
    const results = clustered(undefined);
    expect(intervalChoice(results)).toEqual({ kind: 'query', unit: '', note: '' });
    const { terminal } = report(results);
    expect(terminal).not.toContain('intervals:');
    expect(renderScoreTable(results, new Map(), 'pooled')).not.toContain('intervals');
  });

  it('prints a subtask’s cluster figures in the terminal table when they were computed', () => {
    const results = clustered(7);
    const bySubtask: SubtaskComparisons = new Map([
      [
        'temporal',
        new Map([
          [
            'sparse-fusion',
            {
              'recall@10': {
                meanDiff: 0.0907,
                ci95: [0.07, 0.11] as const,
                pValue: 0.0001,
                cluster: { ci95: [0.01, 0.2] as const, pValue: 0.03 },
              },
              'ndcg@10': { meanDiff: 0.0863, ci95: [0.06, 0.1] as const, pValue: 0.0001 },
            },
          ],
        ]),
      ],
    ]);
    const table = renderScoreTable(results, bySubtask, 'pooled');
    const row = table.split('\n').find((l) => l.includes('sparse-fusion') && l.includes('0.0100'));
    expect(row).toContain('+0.0907 [+0.0100, +0.2000] p 0.030');
    expect(row).toContain('+0.0863 [+0.0600, +0.1000] p <0.001 q');
    expect(table).toContain('+0.0907 [+0.0007, +0.1607] p 0.250');
  });
});
