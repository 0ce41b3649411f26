import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '@bfe/core';
import { tmpDir } from '@bfe/core/testing';
import { installTinyModel } from '@bfe/encoder/testing';
import { resolveModelDir } from '@bfe/models';
import { openEmbedder } from './embedder.js';
import { DEFAULT_ENCODE_BATCH, openEmbedderPool, rowsOf } from './embedder-pool.js';
import { MemoryStore } from '../store.js';
import type { EncodedTexts } from '../types.js';

const plain = (e: EncodedTexts) => ({
  count: e.count,
  dim: e.dim,
  pooled: Array.from(e.pooled),
  tokenOffsets: Array.from(e.tokenOffsets),
  tokenVectors: Array.from(e.tokenVectors),
  tokenIds: Array.from(e.tokenIds),
  tokenPositions: Array.from(e.tokenPositions),
  truncated: Array.from(e.truncated),
});

describe('rowsOf', () => {
  it('cuts rows out of an encoded batch with offsets from 0', () => {
    const e: EncodedTexts = {
      count: 3,
      dim: 2,
      pooled: Float32Array.of(1, 2, 3, 4, 5, 6),
      tokenOffsets: Int32Array.of(0, 1, 3, 4),
      tokenVectors: Float32Array.of(1, 1, 2, 2, 3, 3, 4, 4),
      tokenIds: Int32Array.of(10, 20, 30, 40),
      tokenPositions: Int32Array.of(1, 1, 2, 1),
      truncated: Uint8Array.of(0, 1, 0),
    };
    expect(plain(rowsOf(e, 1, 2))).toEqual({
      count: 2,
      dim: 2,
      pooled: [3, 4, 5, 6],
      tokenOffsets: [0, 2, 3],
      tokenVectors: [2, 2, 3, 3, 4, 4],
      tokenIds: [20, 30, 40],
      tokenPositions: [1, 2, 1],
      truncated: [1, 0],
    });
  });
});

describe('openEmbedderPool on the tiny ONNX model', () => {
  it('coalesces concurrent queries and answers each with exactly its own encoding', async () => {
    const modelDir = await installTinyModel(tmpDir());
    const direct = await openEmbedder({ model: { dir: modelDir } });
    const pool = await openEmbedderPool({ model: { dir: modelDir }, workers: 2, maxBatch: 4 });
    try {
      expect(pool.model).toBe(direct.model);
      expect(pool.dim).toBe(direct.dim);
      const texts = ['the cat sat on a mat', 'hello world', 'dogs', 'the dogs sat', 'a', 'cat'];
      const calls = Array.from({ length: 24 }, (_, i) =>
        i % 5 === 4 ? [texts[i % 6]!, texts[(i + 1) % 6]!] : [texts[i % 6]!],
      );
      const answers = await Promise.all(calls.map((c) => pool.encode(c, 'query')));
      for (let i = 0; i < calls.length; i++)
        expect(plain(answers[i]!)).toEqual(plain(await direct.encode(calls[i]!, 'query')));
      const passages = await pool.encode(texts, 'passage');
      expect(plain(passages)).toEqual(plain(await direct.encode(texts, 'passage')));
      const stats = pool.stats();
      expect(stats.calls).toBe(25);
      expect(stats.runs).toBeLessThan(stats.calls); // some runs answered several calls
      expect(stats.largestBatch).toBeGreaterThan(1);
      expect(stats.largestBatch).toBeLessThanOrEqual(4);
      for (const id of [0, 5, 7, 17, 99]) expect(pool.tokenText(id)).toBe(direct.tokenText(id));
    } finally {
      await pool.dispose();
      await direct.dispose();
    }
    await expect(pool.encode(['cat'], 'query')).rejects.toThrow(/dispose/);
  });

  it('by default takes at most DEFAULT_ENCODE_BATCH queued queries a run, leaving the rest', async () => {
    const modelDir = await installTinyModel(tmpDir());
    const direct = await openEmbedder({ model: { dir: modelDir } });
    const pool = await openEmbedderPool({ model: { dir: modelDir }, workers: 2 });
    try {
      const texts = ['the cat sat on a mat', 'hello world', 'dogs', 'the dogs sat', 'a', 'cat'];
      // Sent at once: each worker takes the first call, the other ten wait in the queue.
      const calls = Array.from({ length: 12 }, (_, i) => [texts[i % 6]!]);
      const answers = await Promise.all(calls.map((c) => pool.encode(c, 'query')));
      for (let i = 0; i < calls.length; i++)
        expect(plain(answers[i]!)).toEqual(plain(await direct.encode(calls[i]!, 'query')));
      expect(DEFAULT_ENCODE_BATCH).toBe(2);
      const stats = pool.stats();
      expect(stats.largestBatch).toBe(2); // coalesced, never more than two a run
      expect(stats.runs).toBeGreaterThanOrEqual(6);
    } finally {
      await pool.dispose();
      await direct.dispose();
    }
  });

  it('answers a window the model cannot run with a ConfigError, as the encoder does', async () => {
    const modelDir = await installTinyModel(tmpDir());
    const pool = await openEmbedderPool({ model: { dir: modelDir }, workers: 1 });
    try {
      const call = pool.encode(['the cat sat on a mat'], 'passage', {
        window: { size: 100_000, stride: 1 },
      });
      await expect(call).rejects.toThrow(ConfigError);
      await expect(call).rejects.toThrow(/window\.size 100000 is outside/);
      // The worker goes on serving.
      expect((await pool.encode(['cat'], 'query')).count).toBe(1);
    } finally {
      await pool.dispose();
    }
  });

  it('fails to open on a model that is not installed, before starting workers', async () => {
    await expect(openEmbedderPool({ model: { dir: join(tmpDir(), 'none') } })).rejects.toThrow();
  });
});

const hasModel = existsSync(join(resolveModelDir('all-minilm-l6-v2'), 'bfe-model.json'));
/** CI sets BFE_REQUIRE_MODEL=1: a missing model then fails instead of skipping. */
const required = process.env.BFE_REQUIRE_MODEL === '1';

const MEMORIES = [
  'Caroline went hiking with her friends in the mountains last weekend.',
  'Melanie painted a sunrise over the lake and hung it in the kitchen.',
  'The support group meets every Tuesday evening at the library.',
  'Caroline is thinking about adopting a child and has been reading about agencies.',
  'Melanie signed up for a pottery class in July.',
  'They talked about camping at the beach with the kids.',
  'Caroline gave a speech at school about her transition journey.',
  'Melanie ran a charity race for mental health awareness.',
];
const QUERIES = [
  'When did Caroline go hiking?',
  'What did Melanie paint?',
  'When does the support group meet?',
  'What is Caroline considering?',
  'pottery',
  'Where did they want to go camping with the kids during the summer holidays?',
  'speech',
  'What race did Melanie run, and what cause was it for?',
  'Who went to the mountains?',
  'kitchen painting',
  'adoption agencies research',
  'What happens on Tuesday evenings at the library?',
];

describe.skipIf(!hasModel && !required)('openEmbedderPool on MiniLM', () => {
  it('coalesced query encodings are bit-identical, so rankings and evidence are too', async () => {
    const direct = await openEmbedder({ model: 'all-minilm-l6-v2', threads: 1 });
    const pool = await openEmbedderPool({ model: 'all-minilm-l6-v2', threads: 1, maxBatch: 16 });
    const store = await MemoryStore.open(tmpDir(), { embedder: pool, threads: 1 });
    try {
      // Queries of different lengths in one padded run, against each alone on this thread.
      const together = await Promise.all(QUERIES.map((q) => pool.encode([q], 'query')));
      expect(pool.stats().largestBatch).toBeGreaterThan(1);
      for (let i = 0; i < QUERIES.length; i++)
        expect(plain(together[i]!), QUERIES[i]).toEqual(
          plain(await direct.encode([QUERIES[i]!], 'query')),
        );

      await store.add(MEMORIES.map((text, i) => ({ id: `m${i}`, bank: 'b', text })));
      const alone = [];
      for (const query of QUERIES) alone.push(await store.search({ bank: 'b', query, k: 8 }));
      const before = pool.stats();
      const concurrent = await Promise.all(
        QUERIES.map((query) => store.search({ bank: 'b', query, k: 8 })),
      );
      expect(pool.stats().runs - before.runs).toBeLessThan(QUERIES.length);
      expect(concurrent).toEqual(alone);
    } finally {
      await store.close();
      await pool.dispose();
      await direct.dispose();
    }
  }, 120_000);
});
