import { describe, expect, it } from 'vitest';
import { tmpDir } from '@bfe/core/testing';
import { MemoryStore, type Embedder } from '@bfe/store';
import { fakeEmbedder } from '@bfe/store/testing';
import { serve } from './serve.js';

/** The fake embedder, with passage encoding held until `release()`: an add stays in flight. */
function gatedEmbedder(): Embedder & { started: Promise<void>; release(): void } {
  const inner = fakeEmbedder();
  let started!: () => void;
  let release!: () => void;
  const startedP = new Promise<void>((r) => (started = r));
  const gate = new Promise<void>((r) => (release = r));
  return {
    model: inner.model,
    dim: inner.dim,
    tokenText: (id) => inner.tokenText(id),
    dispose: () => inner.dispose(),
    async encode(texts, role) {
      if (role === 'passage') {
        started();
        await gate;
      }
      return inner.encode(texts, role);
    },
    started: startedP,
    release,
  };
}

describe('graceful shutdown', () => {
  it('finishes an in-flight add, refuses new connections, closes the store', async () => {
    const dir = tmpDir();
    const embedder = gatedEmbedder();
    const server = await serve({
      store: dir,
      host: '127.0.0.1',
      port: 0,
      storeOptions: { embedder },
    });
    expect(server.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const inFlight = fetch(`${server.url}/v1/banks/alice/memories`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ memories: [{ id: 'late', text: 'written while closing' }] }),
    });
    await embedder.started; // the add is inside the store, encoding
    const closing = server.close();
    while (server.app.server.listening) await new Promise((r) => setImmediate(r));
    await expect(fetch(`${server.url}/healthz`)).rejects.toThrow();
    embedder.release();
    const res = await inFlight;
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ ids: ['late'] });
    await closing;
    // The lock is released and the memory is durable: a new store opens the directory.
    const reopened = await MemoryStore.open(dir, { embedder: fakeEmbedder() });
    try {
      expect(reopened.get('alice', 'late')?.text).toBe('written while closing');
    } finally {
      await reopened.close();
    }
  });
});
