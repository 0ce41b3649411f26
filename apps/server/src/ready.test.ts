import { execFile } from 'node:child_process';
import { readdirSync, rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ordinaryUserPrefix } from '@bfe/core/testing';
import { storeIndexFactory } from '@bfe/store';
import { fakeEmbedder } from '@bfe/store/testing';
import { harness, body } from './testing/harness.js';
import { liveServer, post, send } from './testing/live.js';

const OK = { store: 'ok', wal: 'ok', writes: 'ok', index: 'ok' };

describe('/readyz', () => {
  it('answers 200 while the store serves, 503 once it is closed or its WAL is gone', async () => {
    const server = await liveServer();
    try {
      const ok = await send(server.port, '/readyz');
      expect(ok.status).toBe(200);
      // The store's default index (made by `serve`) reports its graphs.
      const index = { graphs: 0, failures: [] };
      expect(ok.json()).toEqual({ status: 'ready', checks: OK, index });
      const [wal] = readdirSync(server.store.dir).filter((f) => /^wal-\d+\.log$/.test(f));
      rmSync(join(server.store.dir, wal!));
      const noWal = await send(server.port, '/readyz');
      expect(noWal.status).toBe(503);
      expect(noWal.json()).toEqual({
        status: 'not-ready',
        checks: { ...OK, wal: 'no write-ahead log in the store directory' },
        index,
      });
      await server.store.close();
      const closed = await send(server.port, '/readyz');
      expect(closed.status).toBe(503);
      expect(closed.json().checks.store).toMatch(/^closed/);
    } finally {
      await server.close();
    }
  });

  it('answers 503 while the token index builds its graphs, 200 once they are settled', async () => {
    const real = storeIndexFactory({ hnswMinTokens: 0 });
    let settle = (): void => {};
    const pending = new Promise<void>((resolve) => (settle = resolve));
    const h = await harness();
    await h.app.close();
    // The service over the same store, seeing an index whose graph builds have not settled.
    const { buildServer } = await import('./app.js');
    const { loopbackPolicy } = await import('./keys.js');
    const app = await buildServer({
      store: h.store,
      access: loopbackPolicy(),
      index: { graphsSettled: () => pending, graphStats: () => real.graphStats() },
    });
    try {
      const building = await app.inject({ method: 'GET', url: '/readyz' });
      expect(building.statusCode).toBe(503);
      expect(body(building)).toEqual({
        status: 'not-ready',
        checks: { ...OK, index: 'building: graph builds or loads under way' },
        index: { graphs: 0, failures: [] },
      });
      settle();
      const ready = await app.inject({ method: 'GET', url: '/readyz' });
      expect(ready.statusCode).toBe(200);
      expect(body(ready).status).toBe('ready');
    } finally {
      await app.close();
      await h.store.close();
    }
  });

  it("reports the store's HNSW graphs once a bank has one", async () => {
    const index = storeIndexFactory({ hnswMinTokens: 0 });
    const server = await liveServer({ storeOptions: { embedder: fakeEmbedder(), index } });
    try {
      const add = await post(server.port, '/v1/banks/alice/memories', {
        memories: [
          { id: 'm1', text: 'grey cat on the sofa' },
          { id: 'm2', text: 'marathon in autumn' },
        ],
      });
      expect(add.status).toBe(200);
      const search = await post(server.port, '/v1/banks/alice/search', { query: 'grey cat' });
      expect(search.status).toBe(200);
      await index.graphsSettled();
      const res = await send(server.port, '/readyz');
      expect(res.status).toBe(200);
      expect(res.json()).toEqual({
        status: 'ready',
        checks: OK,
        index: { graphs: 1, failures: [] },
      });
    } finally {
      await server.close();
      await index.dispose();
    }
  });

  // Root writes anywhere, so the case runs in a child process that is not root: this user where
  // it is not root; as root, nobody in a user namespace of its own (`unshare`: no capability,
  // still the owner of root's files, so the folder's mode binds it). The same test either way.
  it('answers 503 when the store directory cannot be written (root or not)', async () => {
    const child = await readyzAsOrdinaryUser();
    expect(child.uid).not.toBe(0);
    expect(child.status).toBe(503);
    expect(child.wal).toMatch(/^not writable: EACCES/);
    expect(child.after).toBe(200); // writable again: ready again
  });
});

/**
 * In a child process that is not root: a live server, its store directory made read-only, then
 * `/readyz`; the mode restored, `/readyz` again. Returns the child's uid and what it saw.
 */
function readyzAsOrdinaryUser(): Promise<{
  uid: number;
  status: number;
  wal: string;
  after: number;
}> {
  const serveModule = new URL('./serve.ts', import.meta.url).href;
  const live = new URL('./testing/live.ts', import.meta.url).href;
  const script = `
    import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
    import { tmpdir } from 'node:os';
    import { join } from 'node:path';
    const { serve } = await import(${JSON.stringify(serveModule)});
    const { send } = await import(${JSON.stringify(live)});
    const { fakeEmbedder } = await import('@bfe/store/testing');
    const dir = mkdtempSync(join(tmpdir(), 'bfe-readyz-'));
    const server = await serve({ store: join(dir, 'store'), host: '127.0.0.1', port: 0,
      storeOptions: { embedder: fakeEmbedder() }, kernelWorkers: 0 });
    const port = Number(new URL(server.url).port);
    try {
      chmodSync(server.store.dir, 0o500);
      const res = await send(port, '/readyz');
      chmodSync(server.store.dir, 0o700);
      const again = await send(port, '/readyz');
      console.log(JSON.stringify({ uid: process.getuid(), status: res.status, wal: res.json().checks.wal, after: again.status }));
    } finally {
      chmodSync(server.store.dir, 0o700);
      await server.close();
      rmSync(dir, { recursive: true, force: true });
    }`;
  const node = [process.execPath, '--conditions=@bfe/source', '--import', 'tsx'];
  const command = [...ordinaryUserPrefix(), ...node, '--input-type=module', '-e', script];
  return new Promise((resolve, reject) => {
    execFile(
      command[0]!,
      command.slice(1),
      { cwd: fileURLToPath(new URL('.', import.meta.url)) },
      (error, stdout, stderr) => {
        if (error !== null) reject(new Error(`${error.message}\n${stderr}`));
        else resolve(JSON.parse(stdout.trim().split('\n').at(-1)!) as never);
      },
    );
  });
}
