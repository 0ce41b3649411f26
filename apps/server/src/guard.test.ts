import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { suiteTmpDir } from '@bfe/core/testing';
import { hostGuard, hostOf } from './guard.js';
import { liveServer, post, send } from './testing/live.js';

const KEY = 'alice-key-0123456789abcdef';

describe('Host and Origin without a keys file (DNS rebinding, cross-site requests)', () => {
  let server: Awaited<ReturnType<typeof liveServer>>;
  const dir = suiteTmpDir();
  beforeAll(async () => {
    server = await liveServer({ allowedHosts: ['memories.internal'], dir: dir() });
    await server.store.add([{ id: 'm1', bank: 'alice', text: 'alice adopted a grey cat' }]);
  });
  afterAll(async () => {
    await server?.close();
  });

  it('answers loopback names, the bound address and the allowed hosts', async () => {
    for (const host of [
      `127.0.0.1:${server.port}`,
      `localhost:${server.port}`,
      'LOCALHOST',
      `[::1]:${server.port}`,
      '127.8.9.10',
      `memories.internal:${server.port}`,
    ]) {
      const res = await send(server.port, '/v1/banks/alice/memories/m1', { headers: { host } });
      expect(res.status, host).toBe(200);
      expect(res.json().text).toBe('alice adopted a grey cat');
    }
  });

  it('refuses a rebinding name in Host on every route, reading and writing alike', async () => {
    const host = `rebind.attacker.example:${server.port}`;
    for (const [method, path] of [
      ['GET', '/v1/banks'],
      ['GET', '/v1/banks/alice/memories/m1'],
      ['DELETE', '/v1/banks/alice/memories/m1'],
      ['GET', '/metrics'],
      ['GET', '/'],
      ['GET', '/healthz'],
    ] as const) {
      const res = await send(server.port, path, { method, headers: { host } });
      expect(res.status, `${method} ${path}`).toBe(403);
      expect(res.json().error.code).toBe('HOST_NOT_ALLOWED');
    }
    const added = await post(
      server.port,
      '/v1/banks/alice/memories',
      { memories: [{ id: 'evil', text: 'planted' }] },
      { host },
    );
    expect(added.status).toBe(403);
    expect(server.store.get('alice', 'm1')).toBeDefined();
    expect(server.store.get('alice', 'evil')).toBeUndefined();
  });

  it('refuses an Origin of another site, and "null", and answers its own pages', async () => {
    for (const origin of [
      'https://attacker.example',
      'null',
      'file://',
      'http://127.0.0.1.nip.io',
    ]) {
      const res = await send(server.port, '/v1/banks', { headers: { origin } });
      expect(res.status, origin).toBe(403);
      expect(res.json().error.code).toBe('ORIGIN_NOT_ALLOWED');
    }
    for (const origin of [`http://127.0.0.1:${server.port}`, 'http://localhost:5173']) {
      const res = await send(server.port, '/v1/banks', { headers: { origin } });
      expect(res.status, origin).toBe(200);
    }
  });
});

describe('Host with a keys file', () => {
  it('is not checked: the key is what authorizes', async () => {
    const server = await liveServer({ keys: { [KEY]: { banks: ['alice'], write: true } } });
    try {
      const res = await send(server.port, '/v1/banks', {
        headers: { host: 'memories.example.com', authorization: `Bearer ${KEY}` },
      });
      expect(res.status).toBe(200);
    } finally {
      await server.close();
    }
  });
});

describe('hostOf', () => {
  it('takes the host of a Host header or an origin authority', () => {
    expect(hostOf('Example.COM:8080')).toBe('example.com');
    expect(hostOf('example.com.')).toBe('example.com');
    expect(hostOf('[::1]:80')).toBe('::1');
    expect(hostOf('fe80::1')).toBe('fe80::1');
    expect(hostOf('[::1')).toBeUndefined();
    expect(hostOf('a b')).toBeUndefined();
    expect(hostOf('host:port')).toBeUndefined();
    const guard = hostGuard([]);
    expect(() => guard(undefined, undefined)).toThrow(/Host ''/);
  });
});
