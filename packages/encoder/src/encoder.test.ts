import { copyFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeEach, describe, expect, it } from 'vitest';
import { tmpDir } from '@bfe/core/testing';
import { ArtifactCorruptError } from '@bfe/core';
import { openEncoder } from './encoder.js';
import type { EncodedChunk } from './pass.js';
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

  it('windows a passage call that names a window as an encoder opened with it, queries not', async () => {
    const mean: ModelManifest = { ...manifest, pooling: 'mean', normalize: true };
    const window = { size: 8, stride: 4 };
    const plain = await openEncoder(dir, mean);
    const opened = await openEncoder(dir, mean, { window });
    const all = async (chunks: AsyncGenerator<EncodedChunk>) => {
      const out: EncodedChunk[] = [];
      for await (const c of chunks) out.push(c);
      return out;
    };
    try {
      const texts = ['the cat sat on a mat . the cat sat on a mat', 'the cat'];
      const asked = await all(plain.encode(texts, 'passage', { window }));
      expect(asked).toEqual(await all(opened.encode(texts, 'passage')));
      // 13 content tokens, none cut: windows of 8 (6 content tokens beside [CLS] and [SEP]).
      expect(Array.from(asked[0]!.nTokens)).toEqual([13, 2]);
      expect(Array.from(asked[0]!.windows!)).toEqual([3, 1]);
      expect(Array.from(asked[0]!.truncated)).toEqual([0, 0]);
      // Without it the same encoder truncates at maxLength 8; a query ignores a window.
      const cut = await all(plain.encode(texts, 'passage'));
      expect(Array.from(cut[0]!.nTokens)).toEqual([6, 2]);
      expect(Array.from(cut[0]!.truncated)).toEqual([1, 0]);
      expect(await all(plain.encode(texts, 'query', { window }))).toEqual(
        await all(plain.encode(texts, 'query')),
      );
    } finally {
      await plain.dispose();
      await opened.dispose();
    }
  });

  it('refuses a call window the model cannot run', async () => {
    const encoder = await openEncoder(dir, manifest);
    try {
      const call = async (window: { size: number; stride: number }) => {
        for await (const c of encoder.encode(['the cat'], 'passage', { window })) void c;
      };
      await expect(call({ size: 8, stride: 4 })).rejects.toThrow(/mean pooling only/);
      await expect(call({ size: 64, stride: 4 })).rejects.toThrow(/outside 3\.\.16/);
    } finally {
      await encoder.dispose();
    }
  });

  it('names a missing model file', async () => {
    rmSync(join(dir, 'model.onnx'));
    await expect(openEncoder(dir, manifest)).rejects.toThrow(/model\.onnx/);
  });
});
