import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { searchResultToJson } from '@bfe/store/wire';
import type { StoreLike } from '../backend.js';

/** A running stub: its base URL, the requests it saw, and `close`. */
export interface StubServer {
  readonly url: string;
  /** Each request's method, path and `authorization` header, in arrival order. */
  readonly requests: { method: string; path: string; authorization: string | undefined }[];
  close(): Promise<void>;
}

export interface StubServerOptions {
  /** The store searches go to. */
  readonly store: StoreLike;
  /** API key → banks it may read; absent: every request is accepted (a server without `--keys`). */
  readonly keys?: Readonly<Record<string, readonly string[]>>;
}

const ROUTE = /^\/v1\/banks\/([^/]+)\/search$/;

/**
 * A stand-in for `bfe serve`'s search route, written to the documented contract:
 * `POST /v1/banks/{bank}/search` `{ query, k?, system?, weights? }` → `{ results: [...] }` (the store's
 * `SearchResult`s in `@bfe/store`'s wire format), `Authorization: Bearer <key>`, errors as `{ error: { code,
 * message } }` — 401 `UNAUTHORIZED` for a missing or unknown key, 404 `BANK_NOT_FOUND` for a
 * bank the key may not read or the store does not hold, 400 `BAD_REQUEST` for a bad body. It
 * listens on 127.0.0.1, port 0: the packages' own HTTP tests run against it, the end-to-end
 * tests against the real service.
 * @example
 * const stub = await startStubServer({ store, keys: { k1: ['alice'] } });
 * const http = new HttpBackend({ url: stub.url, apiKey: 'k1' });
 * await stub.close();
 */
export async function startStubServer(options: StubServerOptions): Promise<StubServer> {
  const requests: StubServer['requests'] = [];
  const server = createServer((req, res) => {
    requests.push({
      method: req.method ?? '',
      path: req.url ?? '',
      authorization: req.headers.authorization,
    });
    handle(options, req, res).catch((e: unknown) => {
      send(res, 500, { error: { code: 'INTERNAL', message: String(e) } });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((e) => (e === undefined ? resolve() : reject(e)));
      }),
  };
}

async function handle(
  { store, keys }: StubServerOptions,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const match = ROUTE.exec(req.url ?? '');
  if (req.method !== 'POST' || match === null) {
    return send(res, 404, { error: { code: 'NOT_FOUND', message: `no route ${req.url}` } });
  }
  const bank = decodeURIComponent(match[1]!);
  if (keys !== undefined) {
    const key = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];
    const banks = key === undefined ? undefined : keys[key];
    if (banks === undefined) {
      return send(res, 401, { error: { code: 'UNAUTHORIZED', message: 'missing or unknown key' } });
    }
    if (!banks.includes(bank)) return send(res, 404, notFound(bank));
  }
  let body: {
    query?: unknown;
    k?: unknown;
    system?: unknown;
    weights?: unknown;
    minScore?: unknown;
  };
  try {
    body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as typeof body;
  } catch {
    return send(res, 400, { error: { code: 'BAD_REQUEST', message: 'malformed JSON' } });
  }
  if (typeof body.query !== 'string' || body.query.trim() === '') {
    return send(res, 400, { error: { code: 'BAD_REQUEST', message: 'query: a non-empty string' } });
  }
  try {
    const results = await store.search({
      bank,
      query: body.query,
      ...(typeof body.k === 'number' ? { k: body.k } : {}),
      ...(typeof body.system === 'string' ? { system: body.system as 'pooled' } : {}),
      ...(typeof body.weights === 'object' && body.weights !== null
        ? { weights: body.weights as { pooled: number; sparse: number; bm25: number } }
        : {}),
      ...(typeof body.minScore === 'number' ? { minScore: body.minScore } : {}),
    });
    send(res, 200, { results: results.map(searchResultToJson) });
  } catch (e) {
    const code = (e as { code?: unknown }).code;
    if (code === 'DATA_INVALID') return send(res, 404, notFound(bank));
    if (code === 'CONFIG_INVALID') {
      return send(res, 400, { error: { code: 'BAD_REQUEST', message: (e as Error).message } });
    }
    throw e;
  }
}

const notFound = (bank: string) => ({
  error: { code: 'BANK_NOT_FOUND', message: `no bank '${bank}'` },
});

function send(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}
