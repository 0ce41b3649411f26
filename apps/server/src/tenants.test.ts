import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { suiteTmpDir } from '@bfe/core/testing';
import { keysPolicy } from './keys.js';
import { body, harness, storeState, type Harness } from './testing/harness.js';

// Alice's key reads and writes bank alice; Bob's reads and writes bob; a reader key reads
// alice only. Every endpoint is tried with no key, a wrong key and another tenant's key.
const ALICE = 'alice-key-0123456789abcdef';
const BOB = 'bob-key-0123456789abcdefgh';
const READER = 'reader-key-0123456789abcdef';
const WRONG = 'wrong-key-0123456789abcdefg';

const root = suiteTmpDir('bfe-server-tenants-');
let h: Harness;
beforeAll(async () => {
  h = await harness({
    dir: root(),
    access: keysPolicy({
      [ALICE]: { banks: ['alice'], write: true },
      [BOB]: { banks: ['bob'], write: true },
      [READER]: { banks: ['alice'], write: false },
    }),
  });
  await h.store.add([
    { id: 'a1', bank: 'alice', text: 'alice adopted a grey cat', meta: { secret: 'alice' } },
    { id: 'b1', bank: 'bob', text: 'bob moved to lisbon', meta: { secret: 'bob' } },
  ]);
});
afterAll(async () => {
  await h.close();
});

const auth = (key: string | undefined) =>
  key === undefined ? {} : { authorization: `Bearer ${key}` };

/** Every bank endpoint, aimed at `bank`. */
const endpoints = (bank: string) =>
  [
    {
      method: 'POST',
      url: `/v1/banks/${bank}/memories`,
      payload: { memories: [{ id: 'x', text: 'intruder' }] },
      write: true,
    },
    {
      method: 'PUT',
      url: `/v1/banks/${bank}/memories`,
      payload: { memories: [{ id: `${bank[0]}1`, text: 'overwritten' }] },
      write: true,
    },
    { method: 'GET', url: `/v1/banks/${bank}/memories` },
    { method: 'GET', url: `/v1/banks/${bank}/memories/${bank[0]}1` },
    { method: 'DELETE', url: `/v1/banks/${bank}/memories/${bank[0]}1`, write: true },
    { method: 'POST', url: `/v1/banks/${bank}/search`, payload: { query: 'cat lisbon' } },
  ] as const;

const send = (e: ReturnType<typeof endpoints>[number], key: string | undefined) =>
  h.app.inject({
    method: e.method,
    url: e.url,
    headers: auth(key),
    ...('payload' in e ? { payload: e.payload } : {}),
  });

describe('tenant isolation', () => {
  it.each([
    ['no key', undefined, 'missing Authorization'],
    ['a wrong key', WRONG, 'unknown API key'],
  ])('%s: 401 on every endpoint, nothing changes', async (_name, key, message) => {
    const before = await storeState(h.store);
    for (const e of [...endpoints('alice'), ...endpoints('nobody')]) {
      const res = await send(e, key);
      expect(res.statusCode, `${e.method} ${e.url}`).toBe(401);
      expect(body(res).error).toEqual({
        code: 'UNAUTHORIZED',
        message: expect.stringContaining(message),
      });
    }
    for (const url of ['/v1/banks', '/metrics']) {
      expect((await h.app.inject({ url, headers: auth(key) })).statusCode).toBe(401);
    }
    expect(await storeState(h.store)).toEqual(before);
  });

  it("another tenant's key: the bank answers exactly like a bank that does not exist", async () => {
    const before = await storeState(h.store);
    for (const [i, e] of endpoints('alice').entries()) {
      const theirs = await send(e, BOB);
      const missing = await send(endpoints('nobody')[i]!, BOB);
      expect(theirs.statusCode, `${e.method} ${e.url}`).toBe(404);
      expect(missing.statusCode).toBe(404);
      expect(theirs.body.replaceAll('alice', 'nobody')).toBe(missing.body);
      expect(theirs.body).not.toMatch(/cat|secret|a1/);
    }
    const banks = await h.app.inject({ url: '/v1/banks', headers: auth(BOB) });
    expect(body(banks)).toEqual({ banks: ['bob'] });
    expect(await storeState(h.store)).toEqual(before);
  });

  it('a read-only key reads its bank, may not write it (403), and sees no other', async () => {
    const before = await storeState(h.store);
    for (const e of endpoints('alice')) {
      const res = await send(e, READER);
      if ('write' in e) {
        expect(res.statusCode, `${e.method} ${e.url}`).toBe(403);
        expect(body(res).error.code).toBe('FORBIDDEN');
      } else expect(res.statusCode, `${e.method} ${e.url}`).toBe(200);
    }
    for (const e of endpoints('bob')) expect((await send(e, READER)).statusCode).toBe(404);
    expect(await storeState(h.store)).toEqual(before);
  });

  it("each owner reads and writes its own bank, and search never returns another bank's memory", async () => {
    const search = await send(endpoints('alice')[5], ALICE);
    expect(body(search).results.map((r: { id: string }) => r.id)).toEqual(['a1']);
    const added = await h.app.inject({
      method: 'POST',
      url: '/v1/banks/bob/memories',
      headers: auth(BOB),
      payload: { memories: [{ id: 'b2', text: 'bob likes fado' }] },
    });
    expect(added.statusCode).toBe(200);
    expect(h.store.get('bob', 'b2')?.text).toBe('bob likes fado');
    expect(h.store.list('alice').total).toBe(1);
  });

  it('public routes: /healthz and /openapi.json need no key; /metrics needs one', async () => {
    expect((await h.app.inject({ url: '/healthz' })).statusCode).toBe(200);
    expect((await h.app.inject({ url: '/openapi.json' })).statusCode).toBe(200);
    expect((await h.app.inject({ url: '/metrics', headers: auth(READER) })).statusCode).toBe(200);
  });

  it('without a keys file only loopback peers are served', async () => {
    const local = await harness();
    try {
      const far = await local.app.inject({ url: '/v1/banks', remoteAddress: '10.1.2.3' });
      expect(far.statusCode).toBe(403);
      expect(body(far).error.message).toMatch(/loopback/);
      const health = await local.app.inject({ url: '/healthz', remoteAddress: '192.168.0.9' });
      expect(health.statusCode).toBe(403);
      for (const remoteAddress of ['127.0.0.1', '::1', '::ffff:127.0.0.1'])
        expect((await local.app.inject({ url: '/v1/banks', remoteAddress })).statusCode).toBe(200);
    } finally {
      await local.close();
    }
  });
});
