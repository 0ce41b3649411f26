import { describe, expect, it } from 'vitest';
import { ConfigError } from '@bfe/core';
import { parseSplitOptions } from './split-options.js';

describe('parseSplitOptions', () => {
  it('defaults the ratios to 60,20,20 without folds', () => {
    expect(parseSplitOptions({ policy: 'connected-bank', seed: '42' }).ratios).toEqual([
      60, 20, 20,
    ]);
  });
  it('takes folds and a fold', () => {
    const o = parseSplitOptions({ policy: 'connected-bank', seed: '7', folds: '5', fold: '2' });
    expect(o).toMatchObject({ seed: 7, folds: 5, fold: 2 });
  });
  it('refuses ratios beside folds, a fold without folds, and fewer than three folds', () => {
    const base = { policy: 'connected-bank', seed: '42' };
    expect(() => parseSplitOptions({ ...base, folds: '5', ratios: '60,20,20' })).toThrow(
      /cannot be given with --folds/,
    );
    expect(() => parseSplitOptions({ ...base, fold: '1' })).toThrow(ConfigError);
    expect(() => parseSplitOptions({ ...base, folds: '2' })).toThrow(ConfigError);
  });
});
