import { ConfigError, LabelLeakError } from '@bfe/core';
import { describe, expect, it } from 'vitest';
import { assertTrainable } from './guards.js';

const queryIds = { train: ['q1', 'q2'], validation: ['q3'], test: ['q4'] };
const memoryIds = { train: ['m1', 'm2'], validation: ['m3'], test: ['m4'] };

describe('assertTrainable', () => {
  it('passes disjoint splits under both policies', () => {
    expect(() => assertTrainable({ policy: 'connected-bank', queryIds, memoryIds })).not.toThrow();
    expect(() => assertTrainable({ policy: 'query-disjoint-shared-bank', queryIds })).not.toThrow();
  });

  it('refuses a query id in two splits, naming it, under either policy', () => {
    for (const policy of ['connected-bank', 'query-disjoint-shared-bank'] as const) {
      const ids = { ...queryIds, test: ['q4', 'q2'] };
      expect(() => assertTrainable({ policy, queryIds: ids, memoryIds })).toThrow(LabelLeakError);
      expect(() => assertTrainable({ policy, queryIds: ids, memoryIds })).toThrow(
        /'q2' \(train and test\)/,
      );
    }
    expect(() =>
      assertTrainable({
        policy: 'connected-bank',
        queryIds: { train: ['q1'], validation: ['q1'] },
        memoryIds,
      }),
    ).toThrow(expect.objectContaining({ code: 'LABEL_LEAK' }));
  });

  it('under connected-bank refuses a memory in two splits; shared-bank allows it', () => {
    const shared = { ...memoryIds, validation: ['m3', 'm1'] };
    expect(() =>
      assertTrainable({ policy: 'connected-bank', queryIds, memoryIds: shared }),
    ).toThrow(/1 memory id\(s\) appear in two splits: 'm1' \(train and validation\)/);
    expect(() =>
      assertTrainable({ policy: 'query-disjoint-shared-bank', queryIds, memoryIds: shared }),
    ).not.toThrow();
  });

  it('under connected-bank requires the memory ids', () => {
    expect(() => assertTrainable({ policy: 'connected-bank', queryIds })).toThrow(ConfigError);
  });

  it('refuses an empty train or validation split', () => {
    expect(() =>
      assertTrainable({
        policy: 'connected-bank',
        queryIds: { ...queryIds, validation: [] },
        memoryIds,
      }),
    ).toThrow(/validation split has no queries/);
    expect(() =>
      assertTrainable({
        policy: 'connected-bank',
        queryIds: { ...queryIds, train: [] },
        memoryIds,
      }),
    ).toThrow(expect.objectContaining({ code: 'CONFIG_INVALID' }));
  });

  it('counts every clash but names at most five', () => {
    const many = Array.from({ length: 8 }, (_, i) => `q${i}`);
    expect(() =>
      assertTrainable({
        policy: 'query-disjoint-shared-bank',
        queryIds: { train: many, validation: many },
      }),
    ).toThrow(/8 query id\(s\).* and 3 more/);
  });
});
