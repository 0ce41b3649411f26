import { describe, expect, it } from 'vitest';
import { TIE_DEPTH, TIE_SEED, TieTally, tieKey, tieOrder, tiedPositions } from './ties.js';

describe('tieKey', () => {
  it('is the SHA-256 of `${seed}:${id}` (checked against sha256sum)', () => {
    expect(TIE_SEED).toBe(42);
    // printf '42:conv-26:D1:3' | sha256sum
    expect(tieKey('conv-26:D1:3')).toBe(
      'eaee2696e33cb392a620eba221127f93f52090b679587cb9e830b388bc3c4b93',
    );
    expect(tieKey('conv-26:D1:3', 7)).toBe(
      'ab31382a7d943854066133768d50cdfe1b519650332ff9b8cca61204846989b0',
    );
  });
});

describe('tieOrder', () => {
  const ids = Array.from({ length: 200 }, (_, i) => `conv-${i % 7}:D${i}:${i % 13}`);

  it('ranks rows by tie key, a permutation of the rows', () => {
    const { rank, ids: kept, seed } = tieOrder(ids);
    expect(kept).toBe(ids);
    expect(seed).toBe(TIE_SEED);
    expect([...rank].sort((a, b) => a - b)).toEqual(ids.map((_, i) => i));
    const byKey = ids
      .map((id, row) => ({ key: tieKey(id), row }))
      .sort((a, b) => (a.key < b.key ? -1 : 1));
    byKey.forEach(({ row }, place) => expect(rank[row]).toBe(place));
    // Not the row order, and not the id order.
    expect([...rank]).not.toEqual(ids.map((_, i) => i));
  });

  it('orders the same ids the same way, whatever the order of the rows', () => {
    const reversed = [...ids].reverse();
    const a = tieOrder(ids);
    const b = tieOrder(reversed);
    const placeOf = (o: typeof a) => new Map(o.ids.map((id, row) => [id, o.rank[row]]));
    expect(placeOf(b)).toEqual(placeOf(a));
  });

  it('depends on the seed, and is memoised per ids array and seed', () => {
    expect(tieOrder(ids)).toBe(tieOrder(ids));
    expect(tieOrder(ids, 7)).not.toBe(tieOrder(ids));
    expect([...tieOrder(ids, 7).rank]).not.toEqual([...tieOrder(ids).rank]);
    expect(tieOrder([...ids])).not.toBe(tieOrder(ids));
  });

  it('stays total for a repeated id: the earlier row first', () => {
    const { rank } = tieOrder(['x', 'y', 'x']);
    expect(rank[0]! < rank[2]!).toBe(true);
    expect(new Set(rank).size).toBe(3);
  });
});

describe('tiedPositions and TieTally', () => {
  it('counts positions within the depth whose score equals a neighbour’s', () => {
    expect(TIE_DEPTH).toBe(10);
    expect(tiedPositions([3, 2, 1])).toBe(0);
    expect(tiedPositions([3, 2, 2, 1, 0, 0], 5)).toBe(3); // 1, 2, and 4 (tied with 5)
    expect(tiedPositions([3, 2, 2, 1, 0, 0], 4)).toBe(2);
    expect(tiedPositions([1, 1])).toBe(2);
    expect(tiedPositions([])).toBe(0);
    // Twelve equal scores: all ten positions within the top 10.
    expect(tiedPositions(new Float64Array(12))).toBe(10);
    // Position 9 ties position 10, just past the depth.
    expect(tiedPositions([...Array.from({ length: 9 }, (_, i) => 20 - i), 5, 5])).toBe(1);
  });

  it('sums tied positions over rankings and counts rankings with any', () => {
    const tally = new TieTally();
    tally.add([5, 4, 3]);
    tally.add([5, 5, 3]);
    tally.add(new Float64Array(11));
    expect(tally.counts()).toEqual({ queries: 3, queriesWithTies: 2, tiedPositions: 12 });
  });
});
