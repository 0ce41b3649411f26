import { describe, expect, it } from 'vitest';
import { ConfigError } from '@bfe/core';
import { checkChunkSizes, chunkedPooledConfigSchema } from './systems.js';
import { parseExperiment } from '../config.js';

const base = { name: 'x', dataset: { name: 'locomo' }, split: { policy: 'none' } };

describe('systems.chunkedPooled', () => {
  it('is optional, and absent from a parsed experiment that does not write it', () => {
    expect(parseExperiment(base).systems).toBeUndefined();
    const e = parseExperiment({ ...base, systems: { chunkedPooled: { sizes: [128, 64, 32] } } });
    expect(e.systems?.chunkedPooled).toEqual({ sizes: [128, 64, 32] });
    expect(e.systems).not.toHaveProperty('hybrid');
  });

  it('refuses an empty, repeated, fractional or too small size, and unknown keys', () => {
    for (const chunkedPooled of [
      { sizes: [] },
      { sizes: [64, 64] },
      { sizes: [64.5] },
      { sizes: [2] },
      { sizes: [64], stride: 32 },
      {},
    ]) {
      expect(() => parseExperiment({ ...base, systems: { chunkedPooled } })).toThrow(ConfigError);
      expect(chunkedPooledConfigSchema.safeParse(chunkedPooled).success).toBe(false);
    }
  });

  it('is refused in a cross-fitted run', () => {
    const crossfit = {
      name: 'x',
      dataset: { name: 'locomo' },
      split: { policy: 'connected-bank', folds: 5 },
      scorer: { kSweep: [] },
      systems: { chunkedPooled: { sizes: [64] } },
    };
    expect(() => parseExperiment(crossfit)).toThrow(/not scored in a cross-fitted run/);
    expect(() => parseExperiment({ ...crossfit, systems: {} })).not.toThrow();
  });
});

describe('checkChunkSizes', () => {
  const minilm = { name: 'all-minilm-l6-v2', maxPositions: 512 };

  it('accepts sizes up to the bank’s maxLength, or its window when windowed', () => {
    expect(() =>
      checkChunkSizes({ sizes: [128, 64, 32] }, minilm, { maxLength: 128 }),
    ).not.toThrow();
    expect(() =>
      checkChunkSizes({ sizes: [256] }, minilm, { maxLength: 128, windowSize: 256 }),
    ).not.toThrow();
  });

  it('refuses a size above the bank’s untruncated one-window length', () => {
    expect(() => checkChunkSizes({ sizes: [64, 256] }, minilm, { maxLength: 128 })).toThrow(
      /256 is above the bank's maxLength 128/,
    );
    expect(() =>
      checkChunkSizes({ sizes: [300] }, minilm, { maxLength: 128, windowSize: 256 }),
    ).toThrow(/window size 256/);
  });

  it('refuses a size beyond the model’s positions', () => {
    expect(() =>
      checkChunkSizes({ sizes: [1024] }, minilm, { maxLength: 128, windowSize: 2048 }),
    ).toThrow(/beyond all-minilm-l6-v2's 512 positions/);
  });
});
