import { describe, expect, it } from 'vitest';
import { TooManyRequests, createLimiter } from './limits.js';
import { EXPLAIN_DEFAULT_MAX_K, MAX_EXPLAIN_K } from './schemas.js';
import { gatedEmbedder, liveServer, post, send } from './testing/live.js';

const ALICE = 'alice-key-0123456789abcdef';
const BOB = 'bob-key-0123456789abcdef00';
const ADMIN = 'admin-key-0123456789abcdef';
const auth = (key: string) => ({ authorization: `Bearer ${key}` });

describe('the limiter (a clock of its own)', () => {
  it('admits a burst, refills at the rate, and says when to retry', () => {
    let t = 0;
    const limiter = createLimiter(() => t);
    const key = {};
    const limits = { rate: 2, burst: 2, concurrency: 10 };
    limiter.admit(key, limits)();
    limiter.admit(key, limits)();
    const over = (() => {
      try {
        limiter.admit(key, limits);
      } catch (error) {
        return error;
      }
      return undefined;
    })();
    expect(over).toBeInstanceOf(TooManyRequests);
    expect((over as TooManyRequests).reason).toBe('rate');
    expect((over as TooManyRequests).headers).toEqual({ 'retry-after': '1' });
    t += 250; // half a token
    expect(() => limiter.admit(key, limits)).toThrow(TooManyRequests);
    t += 250;
    limiter.admit(key, limits)();
    // Another principal has a bucket of its own.
    limiter.admit({}, limits)();
  });

  it('caps requests in flight; a release frees the slot once, however often it is called', () => {
    const limiter = createLimiter(() => 0);
    const key = {};
    const limits = { rate: Infinity, burst: 1, concurrency: 2 };
    const first = limiter.admit(key, limits);
    limiter.admit(key, limits);
    expect(() => limiter.admit(key, limits)).toThrow(/2 requests in flight/);
    first();
    first();
    limiter.admit(key, limits);
    expect(() => limiter.admit(key, limits)).toThrow(TooManyRequests);
  });
});

describe('limits on a running server', () => {
  it('a key over its rate gets 429 with Retry-After; other keys do not notice', async () => {
    const server = await liveServer({
      keys: {
        [ALICE]: { banks: ['alice'], rate: 0.001, burst: 2 },
        [BOB]: { banks: ['bob'] },
        [ADMIN]: { banks: [], admin: true },
      },
    });
    try {
      expect((await send(server.port, '/v1/banks', { headers: auth(ALICE) })).status).toBe(200);
      expect((await send(server.port, '/v1/banks', { headers: auth(ALICE) })).status).toBe(200);
      const over = await send(server.port, '/v1/banks', { headers: auth(ALICE) });
      expect(over.status).toBe(429);
      expect(over.json().error.code).toBe('RATE_LIMITED');
      // One token per 1,000 s: the next one is about that far away.
      expect(Number(over.headers['retry-after'])).toBeGreaterThan(900);
      for (let i = 0; i < 3; i++)
        expect((await send(server.port, '/v1/banks', { headers: auth(BOB) })).status).toBe(200);
      // Public routes are not limited.
      expect((await send(server.port, '/healthz', { headers: auth(ALICE) })).status).toBe(200);
      const metrics = await send(server.port, '/metrics', { headers: auth(ADMIN) });
      expect(metrics.text).toMatch(/^bfe_http_rejected_total\{reason="rate"\} 1$/m);
    } finally {
      await server.close();
    }
  });

  it('a key at its concurrency cap gets 429 until a request of its own finishes', async () => {
    const embedder = gatedEmbedder('query');
    const server = await liveServer({
      keys: {
        [ALICE]: { banks: ['alice'], concurrency: 1 },
        [BOB]: { banks: ['alice'] },
      },
      storeOptions: { embedder },
    });
    try {
      await server.store.add([{ id: 'm1', bank: 'alice', text: 'alice adopted a grey cat' }]);
      const held = post(server.port, '/v1/banks/alice/search', { query: 'cat' }, auth(ALICE));
      await embedder.started; // the search holds Alice's one slot
      const refused = await send(server.port, '/v1/banks', { headers: auth(ALICE) });
      expect(refused.status).toBe(429);
      expect(refused.json().error.code).toBe('TOO_MANY_IN_FLIGHT');
      expect(refused.headers['retry-after']).toBe('1');
      expect((await send(server.port, '/v1/banks', { headers: auth(BOB) })).status).toBe(200);
      embedder.release();
      expect((await held).status).toBe(200);
      expect((await send(server.port, '/v1/banks', { headers: auth(ALICE) })).status).toBe(200);
    } finally {
      await server.close();
    }
  });

  it('limits bodies per route: a search of 64 KiB is refused, an add of 200 KiB is not', async () => {
    const server = await liveServer();
    try {
      // 50 KiB each, under maxTextBytes; one word, so the fake embedder makes one token.
      const text = (c: string) => c.repeat(50 * 1024);
      const memories = ['a', 'b', 'c', 'd'].map((c) => ({ id: c, text: text(c) }));
      const added = await post(server.port, '/v1/banks/alice/memories', { memories });
      expect(added.status).toBe(200);
      // A valid search body, padded with JSON whitespace past 64 KiB: refused before parsing.
      const padded = JSON.stringify({ query: 'aaa', k: 2 }) + ' '.repeat(64 * 1024);
      const search = await send(server.port, '/v1/banks/alice/search', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: padded,
      });
      expect(search.status).toBe(413);
      expect(search.json().error.code).toBe('BODY_TOO_LARGE');
      const fits = await send(server.port, '/v1/banks/alice/search', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: padded.slice(0, 60 * 1024),
      });
      expect(fits.status).toBe(200);
    } finally {
      await server.close();
    }
  });

  it('explains a small k by default, not a large one, and refuses to explain above the cap', async () => {
    const server = await liveServer();
    try {
      await server.store.add(
        Array.from({ length: MAX_EXPLAIN_K + 5 }, (_, i) => ({
          id: `m${i}`,
          bank: 'alice',
          text: `memory number ${i} about cats`,
        })),
      );
      const search = (body: object) => post(server.port, '/v1/banks/alice/search', body);
      const small = await search({ query: 'cats', k: EXPLAIN_DEFAULT_MAX_K });
      expect(small.json().results[0].evidence).toBeDefined();
      const large = await search({ query: 'cats', k: EXPLAIN_DEFAULT_MAX_K + 1 });
      expect(large.status).toBe(200);
      expect(large.json().results).toHaveLength(EXPLAIN_DEFAULT_MAX_K + 1);
      expect(large.json().results[0].evidence).toBeUndefined();
      const asked = await search({ query: 'cats', k: MAX_EXPLAIN_K, explain: true });
      expect(asked.json().results[MAX_EXPLAIN_K - 1].evidence).toBeDefined();
      const tooMany = await search({ query: 'cats', k: MAX_EXPLAIN_K + 1, explain: true });
      expect(tooMany.status).toBe(400);
      expect(tooMany.json().error.message).toMatch(/explain/);
    } finally {
      await server.close();
    }
  });

  it('refuses a response over the size limit instead of sending it', async () => {
    const server = await liveServer({ sizes: { response: 64 * 1024 } });
    try {
      await server.store.add(
        ['a', 'b', 'c'].map((c) => ({ id: c, bank: 'alice', text: `${c} `.repeat(16 * 1024) })),
      );
      const one = await post(server.port, '/v1/banks/alice/search', { query: 'a', k: 1 });
      expect(one.status).toBe(200);
      const all = await post(server.port, '/v1/banks/alice/search', { query: 'a', k: 3 });
      expect(all.status).toBe(400);
      expect(all.json().error.code).toBe('RESPONSE_TOO_LARGE');
      const list = await send(server.port, '/v1/banks/alice/memories');
      expect(list.status).toBe(400);
      expect(list.json().error.code).toBe('RESPONSE_TOO_LARGE');
    } finally {
      await server.close();
    }
  });
});
