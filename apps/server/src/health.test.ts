import { readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { StorageError } from '@bfe/core';
import { tmpDir } from '@bfe/core/testing';
import { MemoryStore } from '@bfe/store';
import { fakeEmbedder } from '@bfe/store/testing';
import { buildServer } from './app.js';
import { loopbackPolicy } from './keys.js';
import { liveServer, post, send } from './testing/live.js';

describe('/healthz looks at the store', () => {
  it('answers 200 while the store serves, 503 once it is closed', async () => {
    const server = await liveServer();
    try {
      const ok = await send(server.port, '/healthz');
      expect(ok.status).toBe(200);
      expect(ok.json()).toEqual({ status: 'ok' });
      await server.store.close();
      const closed = await send(server.port, '/healthz');
      expect(closed.status).toBe(503);
      expect(closed.json()).toMatchObject({
        status: 'unavailable',
        checks: { store: expect.stringMatching(/^closed/), writes: 'ok' },
      });
    } finally {
      await server.close();
    }
  });

  it('answers 503 when the write-ahead log is gone', async () => {
    const server = await liveServer();
    try {
      const [wal] = readdirSync(server.store.dir).filter((f) => /^wal-\d+\.log$/.test(f));
      rmSync(join(server.store.dir, wal!));
      const res = await send(server.port, '/healthz');
      expect(res.status).toBe(503);
      expect(res.json().checks).toEqual({
        store: 'ok',
        wal: 'no write-ahead log in the store directory',
        writes: 'ok',
      });
    } finally {
      await server.close();
    }
  });

  it('answers 503 after a write the disk refused, counts it, and recovers with the next write', async () => {
    const store = await MemoryStore.open(tmpDir(), { embedder: fakeEmbedder() });
    let failNext = false;
    // The store, with its next add refused as a full disk refuses it.
    const failing = new Proxy(store, {
      get(target, property) {
        if (property === 'add' && failNext) {
          failNext = false;
          return () =>
            Promise.reject(
              new StorageError({
                path: join(target.dir, 'wal-000001.log'),
                errno: 'ENOSPC',
                syscall: 'write',
                needed: 100,
                available: 0,
              }),
            );
        }
        const value: unknown = Reflect.get(target, property, target);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    const app = await buildServer({ store: failing, access: loopbackPolicy() });
    await app.listen({ host: '127.0.0.1', port: 0 });
    const port = (app.server.address() as { port: number }).port;
    try {
      const add = (id: string) =>
        post(port, '/v1/banks/alice/memories', { memories: [{ id, text: 'some words' }] });
      failNext = true;
      const refused = await add('m1');
      expect(refused.status).toBe(503);
      expect(refused.json().error.code).toBe('STORAGE_FULL');
      const sick = await send(port, '/healthz');
      expect(sick.status).toBe(503);
      expect(sick.json().checks.writes).toBe('last write failed: STORAGE_FULL');
      const metrics = await send(port, '/metrics');
      expect(metrics.text).toMatch(/^bfe_store_write_failures_total\{code="STORAGE_FULL"\} 1$/m);
      expect((await add('m2')).status).toBe(200);
      expect((await send(port, '/healthz')).json()).toEqual({ status: 'ok' });
    } finally {
      await app.close();
      await store.close();
    }
  });
});
