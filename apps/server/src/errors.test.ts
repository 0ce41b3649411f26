import type { IncomingMessage, ServerResponse } from 'node:http';
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { suiteTmpDir } from '@bfe/core/testing';
import { MAX_META_DEPTH } from './schemas.js';
import {
  gatedEmbedder,
  liveServer,
  post,
  rawError,
  rawExchange,
  send,
  type Answer,
} from './testing/live.js';

/** The one error shape: `{ error: { code, message } }` and nothing else. */
function expectError(res: Answer, status: number, code: string): void {
  expect(res.status, res.text).toBe(status);
  const body = res.json();
  expect(Object.keys(body)).toEqual(['error']);
  expect(Object.keys(body.error).sort()).toEqual(['code', 'message']);
  expect(body.error.code).toBe(code);
  expect(body.error.message.length).toBeGreaterThan(0);
}

describe('every valid name and id over HTTP, every error in one shape', () => {
  let server: Awaited<ReturnType<typeof liveServer>>;
  const dir = suiteTmpDir();
  beforeAll(async () => {
    server = await liveServer({ dir: dir() });
  });
  afterAll(async () => {
    await server?.close();
  });

  it('adds, gets, searches and deletes in a 128-character bank with 512-character ids', async () => {
    const bank = `b${'x'.repeat(127)}`;
    const ids = ['i'.repeat(512), '😀'.repeat(512), `${'/'.repeat(256)}${'%'.repeat(256)}`];
    const added = await post(server.port, `/v1/banks/${bank}/memories`, {
      memories: ids.map((id, n) => ({ id, text: `memory ${n} about cats` })),
    });
    expect(added.status, added.text).toBe(200);
    for (const id of ids) {
      const path = `/v1/banks/${bank}/memories/${encodeURIComponent(id)}`;
      const got = await send(server.port, path);
      expect(got.status, got.text).toBe(200);
      expect(got.json()).toMatchObject({ id, bank });
    }
    const list = await send(server.port, `/v1/banks/${bank}/memories`);
    expect(list.json().total).toBe(3);
    const found = await post(server.port, `/v1/banks/${bank}/search`, { query: 'cats', k: 3 });
    expect(
      found
        .json()
        .results.map((r: { id: string }) => r.id)
        .sort(),
    ).toEqual([...ids].sort());
    for (const id of ids) {
      const path = `/v1/banks/${bank}/memories/${encodeURIComponent(id)}`;
      const deleted = await send(server.port, path, { method: 'DELETE' });
      expect(deleted.json()).toEqual({ deleted: [id] });
    }
  });

  it('answers names and ids past the limits, and broken URLs, in the error shape', async () => {
    expectError(
      await send(server.port, `/v1/banks/${'b'.repeat(129)}/memories`),
      400,
      'BAD_REQUEST',
    );
    expectError(
      await send(server.port, `/v1/banks/alice/memories/${'i'.repeat(513)}`),
      400,
      'BAD_REQUEST',
    );
    expectError(
      await send(server.port, `/v1/banks/alice/memories/${'i'.repeat(1025)}`),
      414,
      'URI_TOO_LONG',
    );
    expectError(await send(server.port, '/v1/banks/alice/memories/%zz'), 400, 'BAD_REQUEST');
    expectError(await send(server.port, '/v2/nothing/here'), 404, 'NOT_FOUND');
  });

  it('answers framework refusals of a body in the error shape', async () => {
    const path = '/v1/banks/alice/memories';
    expectError(
      await send(server.port, path, {
        method: 'POST',
        headers: { 'content-type': 'text/plain' },
        body: 'x',
      }),
      415,
      'UNSUPPORTED_MEDIA_TYPE',
    );
    expectError(
      await send(server.port, path, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{"memories": [',
      }),
      400,
      'MALFORMED_JSON',
    );
    expectError(
      await send(server.port, path, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{"__proto__": {"x": 1}}',
      }),
      400,
      'MALFORMED_JSON',
    );
    expectError(
      await send(server.port, '/v1/banks/alice/search', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: ' '.repeat(65 * 1024),
      }),
      413,
      'BODY_TOO_LARGE',
    );
    expectError(await post(server.port, path, { memories: [{ id: 'x' }] }), 400, 'BAD_REQUEST');
  });

  it('answers requests Node refuses before routing in the error shape', async () => {
    const garbage = rawError(await rawExchange(server.port, 'NOT HTTP AT ALL\r\n\r\n'));
    expect(garbage).toMatchObject({ status: 400, code: 'BAD_REQUEST' });
    const huge = rawError(
      await rawExchange(
        server.port,
        `GET /healthz HTTP/1.1\r\nHost: localhost\r\nX-Pad: ${'a'.repeat(20_000)}\r\n\r\n`,
      ),
    );
    expect(huge).toMatchObject({ status: 431, code: 'HEADERS_TOO_LARGE' });
    const length = rawError(
      await rawExchange(
        server.port,
        'POST /v1/banks/alice/memories HTTP/1.1\r\nHost: localhost\r\n' +
          'Content-Type: application/json\r\nContent-Length: nope\r\n\r\n',
      ),
    );
    expect(length).toMatchObject({ status: 400, code: 'BAD_REQUEST' });
  });

  it(`refuses meta nested 5,000 deep (or past ${MAX_META_DEPTH}) with a 400`, async () => {
    const deep = (n: number) => '['.repeat(n) + ']'.repeat(n);
    for (const depth of [5000, MAX_META_DEPTH]) {
      // Written by hand: JSON.stringify itself recurses.
      const body = `{"memories":[{"id":"deep","text":"deep meta","meta":{"a":${deep(depth)}}}]}`;
      const res = await send(server.port, '/v1/banks/alice/memories', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body,
      });
      expectError(res, 400, 'BAD_REQUEST');
      expect(res.json().error.message).toMatch(/meta nests deeper than 32/);
    }
    const fits = await post(server.port, '/v1/banks/alice/memories', {
      memories: [
        { id: 'ok', text: 'shallow enough', meta: { a: JSON.parse(deep(MAX_META_DEPTH - 1)) } },
      ],
    });
    expect(fits.status, fits.text).toBe(200);
    expect(server.store.get('alice', 'deep')).toBeUndefined();
  });
});

describe('while shutting down', () => {
  it('answers a request that still arrives with 503 in the error shape', async () => {
    const embedder = gatedEmbedder('query');
    const server = await liveServer({ storeOptions: { embedder } });
    await server.store.add([{ id: 'm1', bank: 'alice', text: 'alice adopted a grey cat' }]);
    const socket = connect(server.port, '127.0.0.1');
    const ended = new Promise((resolve) => socket.on('close', resolve));
    socket.resume();
    const search = JSON.stringify({ query: 'cat', k: 1 });
    socket.write(
      'POST /v1/banks/alice/search HTTP/1.1\r\nHost: localhost\r\n' +
        `Content-Type: application/json\r\nContent-Length: ${search.length}\r\n\r\n${search}`,
    );
    await embedder.started; // the search is in flight: its connection stays open
    const closing = server.close();
    while (server.app.server.listening) await new Promise((r) => setImmediate(r));
    // A request pipelined on that connection now reaches the app. Its answer is queued behind
    // the search's, which closes the connection, so it is read where the server writes it.
    const late = new Promise<{ status: number; body: string }>((resolve) =>
      server.app.server.once('request', (_req: IncomingMessage, res: ServerResponse) => {
        const end = res.end.bind(res) as (chunk?: unknown) => ServerResponse;
        res.end = ((chunk?: unknown) => {
          resolve({ status: res.statusCode, body: String(chunk) });
          return end(chunk);
        }) as typeof res.end;
      }),
    );
    socket.write('GET /v1/banks HTTP/1.1\r\nHost: localhost\r\n\r\n');
    const answer = await late;
    expect(answer.status).toBe(503);
    expect(JSON.parse(answer.body)).toEqual({
      error: { code: 'UNAVAILABLE', message: 'the server is shutting down' },
    });
    embedder.release();
    await ended;
    await closing;
  });
});
