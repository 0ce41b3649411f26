import { describe, expect, it } from 'vitest';
import { RelevanceLabels } from './labels.js';

describe('RelevanceLabels', () => {
  it('stores graded judgements per query and counts pairs once', () => {
    const l = new RelevanceLabels();
    l.add('q1', 'm1');
    l.add('q1', 'm2', 2);
    l.add('q1', 'm1', 3);
    l.add('q2', 'm1');
    expect(l.pairCount).toBe(3);
    expect([...l.relevant('q1')]).toEqual([
      ['m1', 3],
      ['m2', 2],
    ]);
    expect(l.relevant('missing').size).toBe(0);
    expect(l.has('q2')).toBe(true);
    expect(l.queryIds()).toEqual(['q1', 'q2']);
  });

  it('rejects non-positive or fractional grades', () => {
    const l = new RelevanceLabels();
    expect(() => l.add('q', 'm', 0)).toThrow(/positive integer/);
    expect(() => l.add('q', 'm', 1.5)).toThrow(/positive integer/);
  });

  it('restricts to a subset of queries and deletes queries', () => {
    const l = new RelevanceLabels();
    l.add('a', 'x');
    l.add('b', 'y');
    l.add('b', 'z');
    const only = l.restrictTo(['b']);
    expect(only.queryIds()).toEqual(['b']);
    expect(only.pairCount).toBe(2);
    l.delete('b');
    expect(l.pairCount).toBe(1);
    expect(l.toRows()).toEqual([['a', 'x', 1]]);
  });

  it('keeps grades above 1 through restrictTo and toRows', () => {
    const l = new RelevanceLabels();
    l.add('a', 'x', 3);
    l.add('b', 'y', 2);
    l.add('b', 'z');
    expect(l.restrictTo(['b']).toRows()).toEqual([
      ['b', 'y', 2],
      ['b', 'z', 1],
    ]);
    expect(l.restrictTo(['a', 'b']).relevant('a')).toEqual(new Map([['x', 3]]));
  });
});
