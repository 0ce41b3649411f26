import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { tmpDir } from '@bfe/core/testing';
import { installTinyModel } from '@bfe/encoder/testing';
import { parseExperiment } from '../config.js';
import type { DatasetStage } from './dataset.js';
import { encodeIdentity, shardRange } from './encode-shard.js';

describe('shardRange', () => {
  it('cuts the rows into n contiguous slices of whole chunks that cover every row once', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 5000 }),
        fc.integer({ min: 1, max: 300 }),
        fc.integer({ min: 1, max: 12 }),
        (rows, chunkSize, count) => {
          let next = 0;
          for (let i = 0; i < count; i++) {
            const { start, end } = shardRange(rows, chunkSize, i, count);
            expect(start).toBe(next);
            expect(end).toBeGreaterThanOrEqual(start);
            // Slices begin on a chunk boundary, so each holds the chunks a single pass makes.
            if (start < rows) expect(start % chunkSize).toBe(0);
            next = end;
          }
          expect(next).toBe(rows);
        },
      ),
    );
  });

  it('spreads chunks evenly', () => {
    expect(shardRange(5000, 2048, 0, 2)).toEqual({ start: 0, end: 2048 });
    expect(shardRange(5000, 2048, 1, 2)).toEqual({ start: 2048, end: 5000 });
    expect(shardRange(30, 4, 0, 2)).toEqual({ start: 0, end: 16 });
    expect(shardRange(30, 4, 1, 2)).toEqual({ start: 16, end: 30 });
    expect(shardRange(3, 4, 0, 2)).toEqual({ start: 0, end: 0 });
    expect(shardRange(3, 4, 1, 2)).toEqual({ start: 0, end: 3 });
  });
});

describe('encodeIdentity', () => {
  it('keys model.window only when it is written, so a truncating experiment keeps its key', async () => {
    const dir = await installTinyModel(tmpDir('bfe-encode-key-'));
    const dataset = { artifact: { key: 'd'.repeat(64) } } as unknown as DatasetStage;
    const experiment = (model: Record<string, unknown>) =>
      parseExperiment({ name: 'k', dataset: { name: 'locomo' }, model: { dir, ...model } });
    const plain = await encodeIdentity(experiment({ maxLength: 16 }), dataset);
    expect(plain.config).toEqual({
      model: 'tiny',
      maxLength: 16,
      dtype: 'float32',
      executionProvider: 'cpu',
    });
    const windowed = await encodeIdentity(
      experiment({ maxLength: 16, window: { size: 12, stride: 6 } }),
      dataset,
    );
    expect(windowed.config).toEqual({ ...plain.config, window: { size: 12, stride: 6 } });
  });
});
