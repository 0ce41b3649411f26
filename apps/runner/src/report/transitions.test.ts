import { describe, expect, it } from 'vitest';
import type { Results } from '@bfe/eval';
import { renderReport, reportInputSchema } from './index.js';

const metrics = (r: number) => ({ 'recall@10': r, 'ndcg@10': r / 2 });
const system = (name: string, r: number) => ({
  name,
  metrics: metrics(r),
  subtasks: {
    'multi-hop': { metrics: metrics(r), nQueries: 5 },
    temporal: { metrics: metrics(r), nQueries: 4 },
  },
  nQueries: 9,
  dropped: { noRelevant: 0 },
});
const counts = (n: number, recoveries: number, reverse: number, bothHit: number) => ({
  nQueries: n,
  recoveries,
  reverse,
  bothHit,
  bothMiss: n - recoveries - reverse - bothHit,
  net: recoveries - reverse,
});

function input(withTransitions: boolean) {
  const results: Results = {
    schemaVersion: 1,
    dataset: 'locomo',
    split: 'test',
    ks: [10],
    subtasks: ['multi-hop', 'temporal'],
    systems: [system('pooled', 0.4), system('sparse-fusion', 0.5)],
    ...(withTransitions
      ? {
          transitions: [
            {
              from: 'pooled',
              to: 'sparse-fusion',
              k: 10,
              hit: 'at least one relevant memory in the top k',
              overall: counts(9, 3, 1, 4),
              subtasks: [
                { subtask: 'multi-hop', ...counts(5, 1, 1, 2) },
                { subtask: 'temporal', ...counts(4, 2, 0, 2) },
              ],
            },
          ],
        }
      : {}),
  };
  return reportInputSchema.parse({
    experiment: 'locomo-minilm',
    runId: 'run-1',
    dataset: 'locomo',
    split: {
      name: 'test',
      policy: 'connected-bank',
      diagnosticOnly: false,
      promotionEligible: true,
      marks: [],
    },
    results,
  });
}

const bundles = { vega: '', vegaLite: '', vegaEmbed: '' };

describe('the report’s query-level transitions', () => {
  it('has a section with a row per subtask and an all row of gross counts', () => {
    const { markdown, html } = renderReport(input(true), { bundles });
    expect(markdown).toContain('## Query-level transitions');
    expect(markdown).toContain('in the system’s top 10');
    expect(markdown).toContain(
      '| subtask | queries | recoveries | reverse | net | both hit | both miss |',
    );
    expect(markdown).toContain('| multi-hop | 5 | 1 | 1 | 0 | 2 | 1 |');
    expect(markdown).toContain('| temporal | 4 | 2 | 0 | +2 | 2 | 0 |');
    expect(markdown).toContain('| all | 9 | 3 | 1 | +2 | 4 | 1 |');
    expect(html).toContain('<h2>Query-level transitions</h2>');
  });

  it('has no such section when the results carry no transitions', () => {
    const { markdown } = renderReport(input(false), { bundles });
    expect(markdown).not.toContain('Query-level transitions');
  });
});
