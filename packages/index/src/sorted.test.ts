import { describe, expect, it } from 'vitest';
import { lastAtMost } from './sorted.js';

describe('lastAtMost', () => {
  it('finds the last entry at most the value, within [0, hi]', () => {
    const starts = [0, 3, 3, 7, 10];
    expect(lastAtMost(starts, 0, 4)).toBe(0);
    expect(lastAtMost(starts, 2, 4)).toBe(0);
    // a tie: the last of the equal starts
    expect(lastAtMost(starts, 3, 4)).toBe(2);
    expect(lastAtMost(starts, 9, 4)).toBe(3);
    expect(lastAtMost(starts, 99, 4)).toBe(4);
    // hi bounds the answer
    expect(lastAtMost(starts, 99, 3)).toBe(3);
    expect(lastAtMost(starts, -1, 4)).toBe(0);
  });
});
