import type { Benchmark, Query } from '@bfe/core';
import { describe, expect, it } from 'vitest';
import type { ScoreRun } from './pipeline.js';
import { scoredClusters } from './write.js';

const query = (id: string, bank: string): Query => ({
  id,
  text: '',
  category: 'c',
  meta: {},
  candidateBankIds: [bank],
});

describe('scoredClusters', () => {
  it('gives every scored query (evaluated or dropped) its bank component, and no other query', () => {
    const benchmark: Benchmark = {
      name: 'locomo',
      options: {},
      memories: ['conv-1', 'conv-2', 'conv-3'].map((bankId) => ({
        id: `${bankId}:m`,
        bankId,
        text: '',
        meta: {},
      })),
      queries: [query('q1', 'conv-1'), query('q2', 'conv-2'), query('q3', 'conv-3')],
      subtasks: ['c'],
      sources: [],
    };
    const run = {
      systems: [
        {
          name: 'pooled',
          evaluation: {
            queries: [{ queryId: 'q2' }],
            droppedQueries: [{ queryId: 'q3' }],
          },
        },
      ],
    } as unknown as ScoreRun;
    expect(scoredClusters(benchmark, run)).toEqual({
      unit: 'conversation',
      of: new Map([
        ['q2', 'conv-2'],
        ['q3', 'conv-3'],
      ]),
    });
  });
});
