import { describe, expect, it } from 'vitest';
import { timingEdits } from './timings.js';

describe('timingEdits', () => {
  it('replaces nothing unless asked, and each asked setting on its own template line', () => {
    expect(timingEdits()).toEqual([]);
    expect(timingEdits({ timeTickMs: 50, sessionTtlS: 10 })).toEqual([
      ['\n  timeTickInterval: 200 ', '\n  timeTickInterval: 50 '],
      ['\n    ttl: 30 ', '\n    ttl: 10 '],
    ]);
    expect(timingEdits({ sessionTtlS: 7 })).toEqual([['\n    ttl: 30 ', '\n    ttl: 7 ']]);
  });

  it('refuses a value that is not a positive integer', () => {
    for (const bad of [0, -5, 1.5, Number.NaN]) {
      expect(() => timingEdits({ timeTickMs: bad })).toThrow(/timeTickMs must be a positive/);
      expect(() => timingEdits({ sessionTtlS: bad })).toThrow(/sessionTtlS must be a positive/);
    }
  });
});
