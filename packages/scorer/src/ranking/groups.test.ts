import { ArtifactCorruptError } from '@bfe/core';
import { describe, expect, it } from 'vitest';
import { tieKey } from '@bfe/index';
import { groupByCandidates, type RankQuery } from './groups.js';

const memories = { ids: ['a:1', 'a:2', 'b:1', 'b:2', 'c:1'], bankIds: ['a', 'a', 'b', 'b', 'c'] };

/** Each group's rows (ascending here; their order is tested apart), ids and queries. */
const shape = (groups: ReturnType<typeof groupByCandidates>) =>
  groups.map((g) => [
    [...g.rows].sort((a, b) => a - b),
    [...g.ids].sort(),
    g.queries.map((q) => q.id),
  ]);

describe('groupByCandidates', () => {
  it('resolves candidate banks to every row of those banks, ascending', () => {
    const groups = groupByCandidates(memories, [
      { id: 'q1', candidateBankIds: ['b'] },
      { id: 'q2', candidateBankIds: ['c', 'a'] },
      { id: 'q3', candidateBankIds: ['b'] },
    ]);
    expect(shape(groups)).toEqual([
      [
        [2, 3],
        ['b:1', 'b:2'],
        ['q1', 'q3'],
      ],
      [[0, 1, 4], ['a:1', 'a:2', 'c:1'], ['q2']],
    ]);
  });

  it('resolves candidate ids to rows, dropping repeats, and groups equal sets with bank ones', () => {
    const groups = groupByCandidates(memories, [
      { id: 'q1', candidateIds: ['b:2', 'a:1', 'b:2'] },
      { id: 'q2', candidateBankIds: ['a'] },
      { id: 'q3', candidateIds: ['a:2', 'a:1'] },
      { id: 'q4', candidateIds: ['b:2', 'a:1'] },
    ]);
    expect(shape(groups)).toEqual([
      [
        [0, 3],
        ['a:1', 'b:2'],
        ['q1', 'q4'],
      ],
      [
        [0, 1],
        ['a:1', 'a:2'],
        ['q2', 'q3'],
      ],
    ]);
    expect(groups[0]!.rows).toBeInstanceOf(Int32Array);
  });

  it('lists each group’s rows in the tie order of their memory ids, not in bank order', () => {
    const ids = Array.from({ length: 12 }, (_, i) => `m${i}`);
    const bankIds = ids.map(() => 'all');
    const [group] = groupByCandidates({ ids, bankIds }, [{ id: 'q', candidateBankIds: ['all'] }]);
    const byKey = [...ids].sort((a, b) => (tieKey(a) < tieKey(b) ? -1 : 1));
    expect(Array.from(group!.rows, (r) => ids[r])).toEqual(byKey);
    expect([...group!.ids]).toEqual(byKey);
    expect(byKey).not.toEqual(ids);
    // The same memories in another bank order: the same ids in the same order.
    const reversed = [...ids].reverse();
    const [again] = groupByCandidates({ ids: reversed }, [{ id: 'q', candidateIds: ids }]);
    expect(Array.from(again!.rows, (r) => reversed[r])).toEqual(byKey);
  });

  it('keeps the caller’s query objects and order within a group', () => {
    const queries = [
      { id: 'z', candidateBankIds: ['a'], text: 'zz', category: '2' },
      { id: 'y', candidateBankIds: ['a'], text: 'yy', category: '1' },
    ];
    const [group] = groupByCandidates(memories, queries);
    expect(group!.queries).toEqual(queries);
    expect(group!.queries[0]).toBe(queries[0]);
  });

  it('refuses a candidate memory that is not in the bank', () => {
    const queries: RankQuery[] = [{ id: 'q9', candidateIds: ['a:1', 'nowhere'] }];
    expect(() => groupByCandidates(memories, queries)).toThrow(ArtifactCorruptError);
    expect(() => groupByCandidates(memories, queries)).toThrow(
      "Candidate memory 'nowhere' of query 'q9' is not in the bank.",
    );
  });

  it('refuses a query whose candidate banks hold no memory, or that names none', () => {
    for (const q of [{ id: 'q8', candidateBankIds: ['x'] }, { id: 'q8' }]) {
      expect(() => groupByCandidates(memories, [q])).toThrow(
        new ArtifactCorruptError("Query 'q8' has no candidate memory in the bank."),
      );
    }
  });

  it('needs bank ids only for queries that name candidate banks', () => {
    const ids = { ids: memories.ids };
    expect(shape(groupByCandidates(ids, [{ id: 'q', candidateIds: ['c:1'] }]))).toEqual([
      [[4], ['c:1'], ['q']],
    ]);
    expect(() => groupByCandidates(ids, [{ id: 'q', candidateBankIds: ['a'] }])).toThrow(
      ArtifactCorruptError,
    );
  });
});
