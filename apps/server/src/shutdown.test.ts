import { connect } from 'node:net';
import { describe, expect, it } from 'vitest';
import { tmpDir } from '@bfe/core/testing';
import { MemoryStore } from '@bfe/store';
import { fakeEmbedder } from '@bfe/store/testing';
import { serve } from './serve.js';
import { gatedEmbedder, liveServer } from './testing/live.js';

describe('graceful shutdown', () => {
  it('finishes an in-flight add, refuses new connections, closes the store', async () => {
    const dir = tmpDir();
    const embedder = gatedEmbedder('passage');
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

describe('shutdown with a stalled client', () => {
  it('cuts a client stalled half-way through a body after the drain, and closes', async () => {
    const server = await liveServer({ drainMs: 300 });
    const socket = connect(server.port, '127.0.0.1');
    let received = '';
    socket.on('data', (d: Buffer) => (received += d.toString()));
    const cut = new Promise((resolve) => socket.on('close', resolve));
    const arrived = new Promise((resolve) => server.app.server.once('request', resolve));
    socket.write(
      'POST /v1/banks/alice/memories HTTP/1.1\r\nHost: localhost\r\n' +
        'Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"memories": [',
    );
    await arrived; // its headers are in; the rest of the body never comes
    await server.close();
    await cut;
    // Cut by the drain, not answered by a request timeout (which would write a 408 first).
    expect(received).toBe('');
    const reopened = await MemoryStore.open(server.store.dir, { embedder: fakeEmbedder() });
    await reopened.close();
  }, 60_000);
});
