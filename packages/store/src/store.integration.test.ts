import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { tmpDir } from '@bfe/core/testing';
import { openEncoder } from '@bfe/encoder';
import { installTinyModel } from '@bfe/encoder/testing';
import { loadModelManifest } from '@bfe/models';
import { openEmbedder } from './encode/embedder.js';
import { MemoryStore } from './store.js';

// The store on a real ONNX model: the tiny encoder fixture (4 dimensions, 18-token vocabulary).

describe('MemoryStore on the tiny ONNX model', () => {
  it('stores exactly what the encoder computes, and reopens by model name', async () => {
    const root = tmpDir();
    const modelDir = await installTinyModel(root);
    const dir = join(root, 'store');
    const texts = ['the cat sat on a mat', 'hello world', 'dogs'];
    const store = await MemoryStore.open(dir, { model: { dir: modelDir } });
    await store.add(texts.map((text, i) => ({ id: `m${i}`, bank: 'tiny', text })));
    const snap = store.snapshot();
    const view = snap.bank('tiny');
    const encoder = await openEncoder(modelDir, await loadModelManifest(modelDir));
    const chunks = [];
    for await (const c of encoder.encode(texts, 'passage')) chunks.push(c);
    await encoder.dispose();
    const [c] = chunks;
    expect(chunks).toHaveLength(1);
    expect(view.dim).toBe(4);
    expect(Array.from(view.pooled)).toEqual(Array.from(c!.pooled));
    expect(Array.from(view.tokenVectors)).toEqual(Array.from(c!.tokenVectors));
    expect(Array.from(view.tokenIds)).toEqual(Array.from(c!.tokenId));
    expect(Array.from(view.tokenOffsets)).toEqual([0, 6, 8, 10]); // 'dogs' is dog ##s
    await snap.release();
    await store.close();

    vi.stubEnv('BFE_MODEL_DIR', join(root, 'models'));
    const again = await MemoryStore.open(dir, { model: 'tiny' });
    expect(again.get('tiny', 'm2')?.text).toBe('dogs');
    await again.close();
  });

  it('names token ids by their vocabulary pieces, and encodes queries with the query role', async () => {
    const modelDir = await installTinyModel(tmpDir());
    const embedder = await openEmbedder({ model: { dir: modelDir }, maxLength: 8 });
    try {
      const e = await embedder.encode(['dogs', 'hello world'], 'query');
      expect(Array.from(e.tokenIds, (id) => embedder.tokenText(id))).toEqual([
        'dog',
        '##s',
        'hello',
        'world',
      ]);
      expect(e.count).toBe(2);
      expect(embedder.tokenText(10_000)).toBe('[10000]');
    } finally {
      await embedder.dispose();
    }
  });
});
