import { describe, expect, it } from 'vitest';
import { ConfigError } from '@bfe/core';
import { tmpDir } from '@bfe/core/testing';
import { MemoryStore } from './store.js';
import { fakeEmbedder } from './testing/fake-embedder.js';
import type { EmbedOptions, Embedder } from './types.js';

/** The fake embedder, recording each call's role and options. */
function recording(truncate = false): Embedder & { calls: Array<[string, EmbedOptions]> } {
  const inner = fakeEmbedder();
  const calls: Array<[string, EmbedOptions]> = [];
  return {
    model: inner.model,
    dim: inner.dim,
    calls,
    async encode(texts, role, options = {}) {
      calls.push([role, options]);
      const encoded = await inner.encode(texts, role);
      // An embedder that drops the window and cuts a long text.
      if (truncate) encoded.truncated.fill(1);
      return encoded;
    },
    tokenText: (id) => inner.tokenText(id),
    dispose: () => inner.dispose(),
  };
}

const WINDOW = { size: 256, stride: 192 };

describe('MemoryStore with a window', () => {
  it('encodes every add and update in the window, queries not, and keeps it across a reopen', async () => {
    const dir = tmpDir();
    const embedder = recording();
    const store = await MemoryStore.open(dir, { embedder, window: WINDOW, compactSegments: 0 });
    await store.add([{ id: 'a', bank: 'b', text: 'the cat sat on the mat' }]);
    await store.update([{ id: 'a', bank: 'b', text: 'the cat sat on the red mat' }]);
    await store.search({ bank: 'b', query: 'cat', system: 'pooled' });
    await store.close();
    // The probe at open (no texts), the add, the update; the query without a window.
    expect(embedder.calls).toEqual([
      ['passage', { window: WINDOW }],
      ['passage', { window: WINDOW }],
      ['passage', { window: WINDOW }],
      ['query', {}],
    ]);
    // Reopened without the option: the window recorded at creation.
    const again = recording();
    const reopened = await MemoryStore.open(dir, { embedder: again, compactSegments: 0 });
    await reopened.add([{ id: 'c', bank: 'b', text: 'a dog ran home' }]);
    await reopened.close();
    expect(again.calls.at(-1)).toEqual(['passage', { window: WINDOW }]);
    await expect(
      MemoryStore.open(dir, { embedder: recording(), window: { size: 128, stride: 96 } }),
    ).rejects.toThrow(ConfigError);
  });

  it('encodes without a window when the store has none', async () => {
    const embedder = recording();
    const store = await MemoryStore.open(tmpDir(), { embedder });
    await store.add([{ id: 'a', bank: 'b', text: 'the cat sat on the mat' }]);
    await store.close();
    expect(embedder.calls).toEqual([['passage', {}]]);
  });

  it('refuses an add that its embedder truncated, and keeps the store unchanged', async () => {
    const store = await MemoryStore.open(tmpDir(), {
      embedder: recording(true),
      window: WINDOW,
    });
    await expect(store.add([{ id: 'a', bank: 'b', text: 'a long text' }])).rejects.toThrow(
      /truncated one: the embedder does not pass EmbedOptions.window on/,
    );
    expect(store.list('b').items).toEqual([]);
    await store.close();
  });
});
