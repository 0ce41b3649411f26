import { describe, expect, it } from 'vitest';
import { ConfigError } from '@bfe/core';
import { collect, parseSetOptions, parseShardOption } from './options.js';
import { parseSplitOptions } from '../data/split-options.js';

describe('parseSetOptions', () => {
  it('reads JSON values and keeps other values as strings', () => {
    expect(
      parseSetOptions([
        'categories=[1,2,3,4,5]',
        'includeImageCaptions=false',
        'granularity=session',
        'x=a=b',
      ]),
    ).toEqual({
      categories: [1, 2, 3, 4, 5],
      includeImageCaptions: false,
      granularity: 'session',
      x: 'a=b',
    });
  });

  it('rejects a pair without a key', () => {
    expect(() => parseSetOptions(['=1'])).toThrow(ConfigError);
    expect(() => parseSetOptions(['novalue'])).toThrow(/key=value/);
  });

  it('collects repeated options in order', () => {
    expect(collect('b', collect('a', []))).toEqual(['a', 'b']);
  });
});

describe('parseSplitOptions', () => {
  it('parses seed and ratios', () => {
    expect(
      parseSplitOptions({ policy: 'connected-bank', seed: '7', ratios: '0.6, 0.2,0.2' }),
    ).toEqual({
      policy: 'connected-bank',
      seed: 7,
      ratios: [0.6, 0.2, 0.2],
    });
  });

  it('names the offending field', () => {
    expect(() => parseSplitOptions({ policy: 'random', seed: '1', ratios: '60,20,20' })).toThrow(
      /policy/,
    );
    expect(() =>
      parseSplitOptions({ policy: 'connected-bank', seed: '1.5', ratios: '60,20,20' }),
    ).toThrow(/seed/);
    expect(() =>
      parseSplitOptions({ policy: 'connected-bank', seed: '1', ratios: '60,20' }),
    ).toThrow(/ratios/);
  });
});

describe('parseShardOption', () => {
  it('reads i/n and refuses anything else', () => {
    expect(parseShardOption('1/4')).toEqual({ index: 1, count: 4 });
    expect(parseShardOption('0/1')).toEqual({ index: 0, count: 1 });
    for (const bad of ['2/2', '1/0', '-1/2', '1', 'a/b', '1/2/3', '']) {
      expect(() => parseShardOption(bad)).toThrow(/--shard expects i\/n/);
    }
  });
});
