import { copyFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeEach, describe, expect, it } from 'vitest';
import { tmpDir } from '@bfe/core/testing';
import { ArtifactCorruptError } from '@bfe/core';
import { openEncoder } from './encoder.js';
import type { ModelManifest } from '@bfe/models';

const fixture = (name: string) => fileURLToPath(new URL(`../fixtures/${name}`, import.meta.url));

const manifest: ModelManifest = {
  schemaVersion: 1,
  name: 'tiny',
  modelId: 'test/tiny',
  source: { kind: 'local', detail: 'test' },
  licence: 'none',
  files: [],
  onnxFile: 'model.onnx',
  tokenizerFile: 'tokenizer.json',
  dtype: 'float32',
  pooling: 'cls',
  normalize: false,
  dimension: 4,
  maxLength: 8,
  maxPositions: 16,
  vocabSize: 18,
  specialTokens: { '[CLS]': 2, '[SEP]': 3 },
  padTokenId: 0,
  prefixes: { query: 'query: ', passage: '' },
  modelSha256: 'b'.repeat(64),
  createdAt: '2026-01-01T00:00:00Z',
};

let dir: string;
beforeEach(() => {
  dir = tmpDir('bfe-encoder-');
  copyFileSync(fixture('tiny-encoder.onnx'), join(dir, 'model.onnx'));
  copyFileSync(fixture('tiny-tokenizer.json'), join(dir, 'tokenizer.json'));
});

describe('openEncoder', () => {
  it('encodes queries with the prefix in the pooled input and out of the content tokens', async () => {
    const encoder = await openEncoder(dir, manifest);
    try {
      const chunks = [];
      for await (const c of encoder.encode(['the cat'], 'query')) chunks.push(c);
      const c = chunks[0]!;
      expect(Array.from(c.tokenId)).toEqual([9, 10]); // 'query' ':' are prefix tokens
      // CLS pooling of the tiny graph: state = id * [1, -1, 0.5, 2] + [0, 0, 1, 0], [CLS] id 2
      expect(Array.from(c.pooled)).toEqual([2, -2, 2, 4]);
    } finally {
      await encoder.dispose();
    }
  });

  it('refuses a tokenizer with more tokens than the model embeds', async () => {
    const error = await openEncoder(dir, { ...manifest, vocabSize: 10 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ArtifactCorruptError);
    expect((error as Error).message).toContain('does not belong to this model');
  });

  it('refuses a maxLength beyond the model positions', async () => {
    await expect(openEncoder(dir, manifest, { maxLength: 64 })).rejects.toThrow(/outside 2\.\.16/);
  });

  it('names a missing model file', async () => {
    rmSync(join(dir, 'model.onnx'));
    await expect(openEncoder(dir, manifest)).rejects.toThrow(/model\.onnx/);
  });
});
