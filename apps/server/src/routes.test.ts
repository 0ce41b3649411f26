import SwaggerParser from '@apidevtools/swagger-parser';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { body, harness, storeState, type Harness } from './testing/harness.js';
import { MAX_BATCH, searchResponseSchema } from './schemas.js';

let h: Harness;
beforeEach(async () => {
  h = await harness();
});
afterEach(async () => {
  await h.close();
});

const json = { 'content-type': 'application/json' };
const add = (bank: string, memories: unknown) =>
  h.app.inject({ method: 'POST', url: `/v1/banks/${bank}/memories`, payload: { memories } });

describe('routes, happy paths (fake embedder, loopback)', () => {
  it('adds, gets, lists, searches with evidence, deletes', async () => {
    const res = await add('alice', [
      { id: 'm1', text: 'alice adopted a grey cat called miso' },
      { id: 'm2', text: 'alice runs a marathon every autumn', meta: { who: 'alice', n: 2 } },
      { id: 'm3', text: 'bob is allergic to cats' },
    ]);
    expect(res.statusCode).toBe(200);
    expect(body(res)).toEqual({ ids: ['m1', 'm2', 'm3'] });
    // Durable: the store holds them now (the add resolved after its WAL fsync).
    expect(h.store.get('alice', 'm2')?.meta).toEqual({ who: 'alice', n: 2 });

    const got = await h.app.inject({ method: 'GET', url: '/v1/banks/alice/memories/m2' });
    expect(got.statusCode).toBe(200);
    expect(body(got)).toEqual({
      id: 'm2',
      bank: 'alice',
      text: 'alice runs a marathon every autumn',
      meta: { who: 'alice', n: 2 },
    });

    const page = await h.app.inject({ url: '/v1/banks/alice/memories?offset=1&limit=1' });
    expect(body(page)).toMatchObject({ total: 3, offset: 1, limit: 1, items: [{ id: 'm2' }] });

    const banks = await h.app.inject({ url: '/v1/banks' });
    expect(body(banks)).toEqual({ banks: ['alice'] });

    const search = await h.app.inject({
      method: 'POST',
      url: '/v1/banks/alice/search',
      payload: { query: 'what cat did alice adopt', k: 2 },
    });
    expect(search.statusCode).toBe(200);
    expect(search.headers['server-timing']).toMatch(/^store;dur=\d+\.\d\d$/);
    const results = body(search).results;
    expect(results).toHaveLength(2);
    expect(results.map((r: { rank: number }) => r.rank)).toEqual([1, 2]);
    const direct = await h.store.search({ bank: 'alice', query: 'what cat did alice adopt', k: 2 });
    expect(results.map((r: { id: string }) => r.id)).toEqual(direct.map((r) => r.id));
    // The body is written without a zod pass: it must still be exactly what the schema says.
    expect(searchResponseSchema.parse(body(search))).toEqual(body(search));
    // Every number as the store computed it (JSON keeps a double exactly).
    for (const [i, r] of direct.entries()) {
      const got = results[i];
      expect([got.score, got.pooled, got.sparse, got.pooledRank]).toEqual([
        r.score,
        r.pooled,
        r.sparse,
        r.pooledRank,
      ]);
      expect(got.evidence.tokens).toEqual(
        r.evidence!.tokens.map((t) => ({
          queryToken: t.queryToken,
          queryTokenId: t.queryTokenId,
          queryPiece: t.queryPiece ?? null,
          memoryToken: t.memoryToken,
          memoryTokenId: t.memoryTokenId,
          memoryPiece: t.memoryPiece ?? null,
          similarity: t.floored ? null : t.similarity,
          floored: t.floored,
          floor: t.floor,
          best:
            t.best === undefined
              ? null
              : {
                  memoryToken: t.best.memoryToken,
                  tokenId: t.bestTokenId,
                  piece: t.bestPiece ?? null,
                  similarity: t.best.similarity,
                },
          contribution: t.contribution,
          share: t.share,
        })),
      );
    }
    const top = results[0];
    expect(top.score).toBeCloseTo(direct[0]!.score, 12);
    expect(top.evidence.tokens.length).toBe(direct[0]!.evidence!.tokens.length);
    expect(top.evidence.tokens.length).toBeGreaterThan(0);
    for (const t of top.evidence.tokens) {
      expect(typeof t.floored).toBe('boolean');
      if (t.floored) expect(t.similarity).toBeNull();
      else expect(typeof t.similarity).toBe('number');
    }
    const sum = top.evidence.tokens.reduce(
      (a: number, t: { contribution: number }) => a + t.contribution,
      0,
    );
    expect(sum).toBeCloseTo(top.sparse, 9);

    // With one proposal per query token, the lower memories get the floor: null similarity.
    const narrow = await h.app.inject({
      method: 'POST',
      url: '/v1/banks/alice/search',
      payload: { query: 'what cat did alice adopt', k: 3, tokenK: 1 },
    });
    const narrowDirect = await h.store.search({
      bank: 'alice',
      query: 'what cat did alice adopt',
      k: 3,
      tokenK: 1,
    });
    expect(searchResponseSchema.parse(body(narrow))).toEqual(body(narrow));
    const tokens = body(narrow).results.flatMap(
      (r: { evidence: { tokens: unknown[] } }) => r.evidence.tokens,
    );
    const floored = tokens.filter((t: { floored: boolean }) => t.floored);
    expect(floored.length).toBe(
      narrowDirect.flatMap((r) => r.evidence!.tokens).filter((t) => t.floored).length,
    );
    expect(floored.length).toBeGreaterThan(0);
    for (const t of floored) expect(t).toMatchObject({ similarity: null, memoryToken: -1 });

    const plain = await h.app.inject({
      method: 'POST',
      url: '/v1/banks/alice/search',
      payload: { query: 'cat', system: 'pooled', explain: false, k: 5 },
    });
    expect(searchResponseSchema.parse(body(plain))).toEqual(body(plain));
    expect(body(plain).results).toHaveLength(3);
    expect(body(plain).results[0].evidence).toBeUndefined();

    const put = await h.app.inject({
      method: 'PUT',
      url: '/v1/banks/alice/memories',
      payload: { memories: [{ id: 'm1', text: 'alice adopted a black cat', meta: { v: 2 } }] },
    });
    expect(put.statusCode).toBe(200);
    expect(h.store.get('alice', 'm1')).toEqual({
      id: 'm1',
      bank: 'alice',
      text: 'alice adopted a black cat',
      meta: { v: 2 },
    });

    const del = await h.app.inject({ method: 'DELETE', url: '/v1/banks/alice/memories/m3' });
    expect(del.statusCode).toBe(200);
    expect(body(del)).toEqual({ deleted: ['m3'] });
    expect(h.store.get('alice', 'm3')).toBeUndefined();
    const again = await h.app.inject({ method: 'DELETE', url: '/v1/banks/alice/memories/m3' });
    expect(again.statusCode).toBe(404);
    expect(body(again).error.code).toBe('NOT_FOUND');
  });

  it('answers /healthz and /metrics with request counts and store gauges', async () => {
    expect(body(await h.app.inject({ url: '/healthz' }))).toEqual({ status: 'ok' });
    await add('alice', [{ id: 'a', text: 'one two three' }]);
    const metrics = await h.app.inject({ url: '/metrics' });
    expect(metrics.statusCode).toBe(200);
    expect(metrics.headers['content-type']).toMatch(/^text\/plain/);
    expect(metrics.body).toMatch(/^bfe_store_memories 1$/m);
    expect(metrics.body).toMatch(/^bfe_store_tokens 3$/m);
    expect(metrics.body).toMatch(
      /^bfe_http_requests_total\{route="\/v1\/banks\/:bank\/memories",method="POST",status="200"\} 1$/m,
    );
    expect(metrics.body).toMatch(
      /bfe_http_request_duration_seconds_bucket\{le="0.001",route="\/healthz"/,
    );
  });

  it('serves a valid OpenAPI 3 document listing every route', async () => {
    const res = await h.app.inject({ url: '/openapi.json' });
    expect(res.statusCode).toBe(200);
    const doc = body(res);
    expect(doc.openapi).toMatch(/^3\./);
    // Validated against the OpenAPI 3.1 schema, with every $ref resolved.
    await expect(SwaggerParser.validate(structuredClone(doc))).resolves.toMatchObject({
      openapi: doc.openapi,
    });
    const ops = Object.entries(doc.paths as Record<string, Record<string, unknown>>).flatMap(
      ([path, item]) => Object.keys(item).map((m) => `${m.toUpperCase()} ${path}`),
    );
    expect(ops.sort()).toEqual(
      [
        'GET /healthz',
        'GET /readyz',
        'GET /metrics',
        'GET /openapi.json',
        'GET /v1/banks',
        'POST /v1/banks/{bank}/memories',
        'PUT /v1/banks/{bank}/memories',
        'GET /v1/banks/{bank}/memories',
        'GET /v1/banks/{bank}/memories/{id}',
        'DELETE /v1/banks/{bank}/memories/{id}',
        'POST /v1/banks/{bank}/search',
      ].sort(),
    );
    const search = doc.paths['/v1/banks/{bank}/search'].post;
    const req = search.requestBody.content['application/json'].schema;
    expect(Object.keys(req.properties)).toEqual([
      'query',
      'k',
      'system',
      'alpha',
      'weights',
      'explain',
      'tokenK',
      'interventions',
      'minScore',
    ]);
    expect(search.responses['200']).toBeDefined();
    expect(search.responses['404']).toBeDefined();
    expect(doc.components.securitySchemes.bearer).toEqual({ type: 'http', scheme: 'bearer' });
  });
});

describe('bad input: a clear 4xx and nothing changes', () => {
  beforeEach(async () => {
    await add('alice', [{ id: 'm1', text: 'alice adopted a grey cat' }]);
  });

  const cases: [
    string,
    () => Promise<{ statusCode: number; body: string }>,
    number,
    string,
    RegExp,
  ][] = [
    [
      'malformed JSON',
      () =>
        h.app.inject({
          method: 'POST',
          url: '/v1/banks/alice/memories',
          headers: json,
          payload: '{"memories": [',
        }),
      400,
      'MALFORMED_JSON',
      /JSON/i,
    ],
    [
      'an empty body',
      () =>
        h.app.inject({
          method: 'POST',
          url: '/v1/banks/alice/memories',
          headers: json,
          payload: '',
        }),
      400,
      'MALFORMED_JSON',
      /empty/i,
    ],
    [
      'non-UTF-8 bytes',
      () =>
        h.app.inject({
          method: 'POST',
          url: '/v1/banks/alice/memories',
          headers: json,
          payload: Buffer.concat([
            Buffer.from('{"memories":[{"id":"x","text":"caf'),
            Buffer.from([0xe9]),
            Buffer.from('"}]}'),
          ]),
        }),
      400,
      'INVALID_UTF8',
      /byte 0xe9/,
    ],
    [
      'an oversized body',
      () =>
        h.app.inject({
          method: 'POST',
          url: '/v1/banks/alice/memories',
          headers: json,
          payload: JSON.stringify({
            memories: [{ id: 'big', text: 'a'.repeat(40 * 1024 * 1024) }],
          }),
        }),
      413,
      'BODY_TOO_LARGE',
      /body/i,
    ],
    [
      'a text over maxTextBytes',
      () => add('alice', [{ id: 'long', text: 'a '.repeat(40 * 1024) }]),
      400,
      'INVALID_MEMORIES',
      /over the limit of 65536/,
    ],
    [
      'an empty text',
      () => add('alice', [{ id: 'e', text: '' }]),
      400,
      'INVALID_MEMORIES',
      /\[0\]\.text: empty/,
    ],
    [
      'a blank text',
      () => add('alice', [{ id: 'e', text: '  \n ' }]),
      400,
      'INVALID_MEMORIES',
      /empty|blank/i,
    ],
    [
      'duplicate ids in a batch',
      () =>
        add('alice', [
          { id: 'd', text: 'one' },
          { id: 'd', text: 'two' },
        ]),
      400,
      'INVALID_MEMORIES',
      /id 'd' appears twice/,
    ],
    [
      'an id that exists',
      () => add('alice', [{ id: 'm1', text: 'again' }]),
      400,
      'INVALID_MEMORIES',
      /id 'm1' already exists/,
    ],
    [
      'update: an id that does not exist',
      () =>
        h.app.inject({
          method: 'PUT',
          url: '/v1/banks/alice/memories',
          payload: { memories: [{ id: 'ghost', text: 'boo' }] },
        }),
      400,
      'INVALID_MEMORIES',
      /id 'ghost' does not exist/,
    ],
    [
      'search: a query over the limit',
      () =>
        h.app.inject({
          method: 'POST',
          url: '/v1/banks/alice/search',
          payload: { query: 'cat '.repeat(5000) },
        }),
      400,
      'BAD_REQUEST',
      /query over 16384 characters/,
    ],
    [
      'a 10k-memory batch',
      () =>
        add(
          'alice',
          Array.from({ length: 10_000 }, (_, i) => ({ id: `n${i}`, text: `memory ${i}` })),
        ),
      400,
      'BAD_REQUEST',
      new RegExp(`at most ${MAX_BATCH} memories`),
    ],
    ['an empty batch', () => add('alice', []), 400, 'BAD_REQUEST', /at least one/],
    [
      'an unknown field',
      () => add('alice', [{ id: 'u', text: 'x', bank: 'bob' }]),
      400,
      'BAD_REQUEST',
      /bank/,
    ],
    ['a bad bank name', () => add('_bad', [{ id: 'u', text: 'x' }]), 400, 'BAD_REQUEST', /bank/],
    [
      'a non-JSON content type',
      () =>
        h.app.inject({
          method: 'POST',
          url: '/v1/banks/alice/memories',
          headers: { 'content-type': 'text/plain' },
          payload: 'hello',
        }),
      415,
      'UNSUPPORTED_MEDIA_TYPE',
      /application\/json/,
    ],
    [
      'search: an unknown bank',
      () =>
        h.app.inject({ method: 'POST', url: '/v1/banks/nobody/search', payload: { query: 'cat' } }),
      404,
      'NOT_FOUND',
      /no bank 'nobody'/,
    ],
    [
      'search: an empty query',
      () => h.app.inject({ method: 'POST', url: '/v1/banks/alice/search', payload: { query: '' } }),
      400,
      'BAD_REQUEST',
      /empty query/,
    ],
    [
      'search: k 0',
      () =>
        h.app.inject({
          method: 'POST',
          url: '/v1/banks/alice/search',
          payload: { query: 'cat', k: 0 },
        }),
      400,
      'BAD_REQUEST',
      /k/,
    ],
    [
      'search: an unknown system',
      () =>
        h.app.inject({
          method: 'POST',
          url: '/v1/banks/alice/search',
          payload: { query: 'cat', system: 'magic' },
        }),
      400,
      'BAD_REQUEST',
      /system/,
    ],
    [
      'get: an unknown bank',
      () => h.app.inject({ url: '/v1/banks/nobody/memories/m1' }),
      404,
      'NOT_FOUND',
      /no bank 'nobody'/,
    ],
    [
      'get: an unknown id',
      () => h.app.inject({ url: '/v1/banks/alice/memories/zzz' }),
      404,
      'NOT_FOUND',
      /no memory 'zzz'/,
    ],
    [
      'list: an unknown bank',
      () => h.app.inject({ url: '/v1/banks/nobody/memories' }),
      404,
      'NOT_FOUND',
      /no bank 'nobody'/,
    ],
    [
      'list: a negative offset',
      () => h.app.inject({ url: '/v1/banks/alice/memories?offset=-1' }),
      400,
      'BAD_REQUEST',
      /offset/,
    ],
    [
      'delete: an unknown bank',
      () => h.app.inject({ method: 'DELETE', url: '/v1/banks/nobody/memories/m1' }),
      404,
      'NOT_FOUND',
      /no bank 'nobody'/,
    ],
    [
      'delete: an unknown id',
      () => h.app.inject({ method: 'DELETE', url: '/v1/banks/alice/memories/zzz' }),
      404,
      'NOT_FOUND',
      /no memory 'zzz'/,
    ],
    ['an unknown route', () => h.app.inject({ url: '/v2/whatever' }), 404, 'NOT_FOUND', /no route/],
  ];

  it.each(cases)('%s', async (_name, send, status, code, message) => {
    const before = await storeState(h.store);
    const res = await send();
    expect(res.statusCode).toBe(status);
    const error = JSON.parse(res.body).error;
    expect(error.code).toBe(code);
    expect(error.message).toMatch(message);
    expect(await storeState(h.store)).toEqual(before);
  });
});
