import { describe, expect, it } from 'vitest';
import type { Results } from '@bfe/eval';
import { renderReport, reportInputSchema } from './index.js';

const fakeBundles = {
  vega: 'window.vega = {};',
  vegaLite: 'window.vegaLite = {};',
  vegaEmbed: 'window.vegaEmbed = function () {};',
};

const diff = (meanDiff: number, low: number, high: number, pValue: number) => ({
  meanDiff,
  ci95: [low, high] as [number, number],
  pValue,
});

/** pooled, sparse fusion and one chunked-pooled row, each compared with both bases. */
function results(chunked: boolean): Results {
  const sys = (name: string, r: number, n: number) => ({
    name,
    metrics: { 'recall@10': r, 'ndcg@10': n },
    subtasks: {},
    nQueries: 100,
    dropped: { noRelevant: 0 },
  });
  const vs = (p: number, s: number) => ({
    pooled: {
      'recall@10': diff(p, p - 0.01, p + 0.01, 0.01),
      'ndcg@10': diff(p, p - 0.01, p + 0.01, 0.01),
    },
    'sparse-fusion': {
      'recall@10': diff(s, s - 0.02, s + 0.02, 0.02),
      'ndcg@10': diff(s, s - 0.02, s + 0.02, 0.02),
    },
  });
  return {
    schemaVersion: 1,
    dataset: 'locomo',
    split: 'all',
    ks: [10],
    subtasks: [],
    significance: {
      resamples: 10000,
      seed: 42,
      ci: 'stratified-paired-bootstrap-percentile',
      pValue: 'stratified-paired-sign-flip',
    },
    systems: [
      {
        ...sys('pooled', 0.4, 0.3),
        comparisons: { 'sparse-fusion': vs(0, -0.2)['sparse-fusion'] },
      },
      { ...sys('sparse-fusion', 0.6, 0.5), comparisons: { pooled: vs(0.2, 0).pooled } },
      ...(chunked
        ? [{ ...sys('chunked-pooled@32', 0.45, 0.33), comparisons: vs(0.05, -0.15) }]
        : []),
    ],
  };
}

function input(chunked: boolean) {
  return reportInputSchema.parse({
    experiment: 'chunks-locomo',
    runId: 'run-1',
    dataset: 'locomo',
    split: { name: 'all', diagnosticOnly: false, promotionEligible: true, marks: [] },
    results: results(chunked),
  });
}

describe('renderReport: chunked-pooled rows', () => {
  it('print a headline against sparse-fusion beside the one against pooled', () => {
    const { markdown } = renderReport(input(true), { bundles: fakeBundles });
    expect(markdown).toContain('Against sparse-fusion (subtasks averaged equally)');
    expect(markdown).toContain('| chunked-pooled@32 | 100 | 0.4500 | +0.0500 [+0.0400, +0.0600] |');
    expect(markdown).toContain('| chunked-pooled@32 | 100 | 0.4500 | −0.1500 [−0.1700, −0.1300] |');
    expect(markdown).toContain('| pooled | 100 | 0.4000 | −0.2000 [−0.2200, −0.1800] |');
  });

  it('leave the report as it was without them', () => {
    const { markdown } = renderReport(input(false), { bundles: fakeBundles });
    expect(markdown).not.toContain('Against sparse-fusion');
  });
});
