import { describe, expect, it } from 'vitest';
import { RelevanceLabels, benchmarkHash } from '@bfe/core';
import type { Benchmark, Query } from '@bfe/core';
import type { ScoreBank } from '../score/pipeline.js';
import { parseExplainCliOptions } from './options.js';
import { aggregateInterventions, explainQuery, type ExplainRunInput } from './pipeline.js';

// The scorer's hand-computed bank (interventions.test.ts): query tokens e1, e2, e3, pooled e4;
// at k = 2 and α 0.5 memory a ranks 1 of 4 and only its e1 token (excess (0.8 − 0.6)/3) is
// above the floor; removing it drops a to rank 3.
const v = (...x: number[]): number[] => [...x, 0, 0, 0, 0, 0].slice(0, 5);
const side = (ids: string[], vectors: number[][], offsets: number[], pooled: number[][]) => ({
  ids,
  bankIds: ids.map(() => 'conv'),
  nTokens: Int32Array.from(ids, (_, i) => offsets[i + 1]! - offsets[i]!),
  pooled: Float32Array.from(pooled.flat()),
  tokenOwner: Int32Array.from(vectors, (_, t) => offsets.findIndex((o) => o > t) - 1),
  tokenPosition: Int32Array.from(vectors, (_, t) => t),
  // Vocabulary ids 100 + token index: the test's "pieces" below.
  tokenId: Int32Array.from(vectors, (_, t) => 100 + t),
  tokenVectors: Float32Array.from(vectors.flat()),
  tokenOffsets: Int32Array.from(offsets),
});
const p = (x: number): number[] => v(0, 0, 0, x, Math.sqrt(1 - x * x));

const query = (id: string, category: string): Query =>
  ({ id, text: id, category, meta: {}, candidateBankIds: ['conv'] }) as Query;
const benchmark: Benchmark = {
  name: 'toy',
  options: {},
  subtasks: ['single-hop', 'temporal'],
  sources: [],
  memories: ['a', 'b', 'c', 'd'].map((id) => ({ id, bankId: 'conv', text: id, meta: {} })),
  queries: [query('q1', 'temporal'), query('q2', 'single-hop')],
};
const q = [v(1), v(0, 1), v(0, 0, 1)];
const bank = {
  manifest: { dataset: 'toy', benchmarkHash: benchmarkHash(benchmark), model: { sha256: 'm' } },
  dim: 5,
  memories: side(
    ['a', 'b', 'c', 'd'],
    [v(0.8, 0.6), v(0.6, 0, 0.8), v(0, 0.8, 0.6), v(0, 0, 0, 0, 1), v(0.28, 0.96)],
    [0, 1, 3, 4, 5],
    [p(0.5), p(0.3), p(0.1), p(0.45)],
  ),
  queries: side(['q1', 'q2'], [...q, ...q], [0, 3, 6], [v(0, 0, 0, 1), v(0, 0, 0, 1)]),
} as unknown as ScoreBank;

const labels = new RelevanceLabels();
labels.add('q1', 'a');
labels.add('q1', 'b');
const input: ExplainRunInput = {
  bank,
  benchmark,
  labels,
  queryIds: undefined,
  system: 'sparse-fusion',
  k: 2,
  alpha: 0.5,
  backend: 'js',
};
const pieces = ['when', 'did', 'melanie'];
const tokenText = (id: number): string => pieces[(id - 100) % 3]!;

describe('bfe explain: the pipeline', () => {
  it('analyses each query’s highest-ranked relevant memory and leaves out queries without one', async () => {
    const a = await aggregateInterventions(input, [1, 2]);
    expect(a.dropped).toBe(1);
    expect(a.records).toEqual([
      { queryId: 'q1', subtask: 'temporal', fileIndex: 0, memoryId: 'a', before: 1, after: [3, 3] },
    ]);
    expect(a.rows.map((r) => [r.subtask, r.removeTop, r.medianShift, r.leftTop])).toEqual([
      ['temporal', 1, 2, 0],
      ['temporal', 2, 2, 0],
      ['all', 1, 2, 0],
      ['all', 2, 2, 0],
    ]);
  });

  it('picks the relevant memory ranked higher, not the first labelled one', async () => {
    const other = new RelevanceLabels();
    other.add('q1', 'c');
    other.add('q1', 'd');
    const a = await aggregateInterventions({ ...input, labels: other }, [1]);
    // Fused: a 0.886, d 0.483, b 0.243, c −1.612: d is the relevant memory at rank 2.
    expect(a.records.map((r) => [r.memoryId, r.before])).toEqual([['d', 2]]);
  });

  it('explains one query: top-n removals and named tokens, the top memory without labels', async () => {
    const e = await explainQuery(input, {
      queryId: 'q2',
      removeTop: 2,
      removeTokens: ['did', '#0'],
      tokenText,
    });
    expect([e.memoryId, e.chosen, e.relevant]).toEqual(['a', 'top', false]);
    expect(e.labels).toEqual(['top 1', 'top 2', "'did'", 'when (#0)']);
    expect(e.interventions.outcomes.map((o) => o.rank)).toEqual([3, 3, 1, 3]);
    expect(Array.from(e.memoryTokenIds)).toEqual([100, -1, -1]);
    const d = await explainQuery(input, { queryId: 'q1', memoryId: 'd', removeTop: 1, tokenText });
    expect([d.memoryId, d.chosen, d.relevant, d.interventions.rank]).toEqual([
      'd',
      'given',
      false,
      2,
    ]);
    await expect(
      explainQuery(input, { queryId: 'q1', memoryId: 'zz', removeTop: 1, tokenText }),
    ).rejects.toThrow(/not a candidate/);
  });
});

describe('bfe explain: options', () => {
  const base = {
    bank: 'b',
    dataset: 'locomo',
    splitPart: 'test',
    system: 'sparse-fusion',
    k: '64',
    alpha: '0.5',
    removeTop: '6',
    top: '4,1,2',
  };

  it('takes either --query or --aggregate', () => {
    expect(parseExplainCliOptions({ ...base, aggregate: true }).top).toEqual([1, 2, 4]);
    expect(parseExplainCliOptions({ ...base, query: 'q1' }).removeToken).toEqual([]);
    expect(() => parseExplainCliOptions({ ...base })).toThrow(/either --query/);
    expect(() => parseExplainCliOptions({ ...base, query: 'q', aggregate: true })).toThrow(
      /either --query/,
    );
    expect(() => parseExplainCliOptions({ ...base, aggregate: true, removeToken: ['x'] })).toThrow(
      /go with --query/,
    );
    expect(() => parseExplainCliOptions({ ...base, query: 'q', removeTop: '7' })).toThrow(
      /removeTop/,
    );
    expect(() => parseExplainCliOptions({ ...base, query: 'q', system: 'adapted' })).toThrow(
      /--adapter/,
    );
  });
});
