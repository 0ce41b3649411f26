import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it, onTestFinished } from 'vitest';
import { hitMetadata, openBackend, storeBackend } from './backend.js';
import { BfeServiceError, HttpBackend } from './http.js';
import { openFixtureStore, startStubServer } from './testing/index.js';

/** A server that answers every request with one fixed status and body. */
async function fixedServer(status: number, body: string): Promise<string> {
  const server = createServer((_req, res) => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  onTestFinished(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

describe('HttpBackend against the stub of the documented contract', () => {
  it('returns what the store returns, sends the key, and maps 401/404 to errors', async () => {
    const store = await openFixtureStore();
    const stub = await startStubServer({ store, keys: { 'key-a': ['alice'], 'key-b': ['bob'] } });
    try {
      const query = { bank: 'alice', query: 'grey cat', k: 3 };
      const local = await storeBackend(store).search(query);
      const remote = await new HttpBackend({ url: `${stub.url}/`, apiKey: 'key-a' }).search(query);
      expect(remote).toStrictEqual(local); // the wire format reads back the in-process shape
      expect(remote.map((r) => r.rank)).toEqual([1, 2, 3]);
      expect(stub.requests.at(-1)).toEqual({
        method: 'POST',
        path: '/v1/banks/alice/search',
        authorization: 'Bearer key-a',
      });

      const noKey = new HttpBackend({ url: stub.url }).search(query);
      await expect(noKey).rejects.toMatchObject({ status: 401, code: 'UNAUTHORIZED' });
      const wrongKey = new HttpBackend({ url: stub.url, apiKey: 'nope' }).search(query);
      await expect(wrongKey).rejects.toThrow('POST /v1/banks/alice/search: 401 UNAUTHORIZED');
      // Another tenant's bank and a bank nobody holds look the same: 404.
      const otherTenant = new HttpBackend({ url: stub.url, apiKey: 'key-b' }).search(query);
      await expect(otherTenant).rejects.toMatchObject({ status: 404, code: 'BANK_NOT_FOUND' });
      const err = await new HttpBackend({ url: stub.url, apiKey: 'key-a' })
        .search({ ...query, system: 'nope' as 'pooled' })
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(BfeServiceError);
      expect(err).toMatchObject({ status: 400, code: 'BAD_REQUEST' });
    } finally {
      await stub.close();
      await store.close();
    }
  });

  it('passes hybrid and its weights: the same results as in process, BM25 evidence included', async () => {
    const store = await openFixtureStore();
    const stub = await startStubServer({ store });
    try {
      const weights = { pooled: 0, sparse: 1, bm25: 3 };
      const query = { bank: 'alice', query: 'grey cat sofa', k: 4, system: 'hybrid' as const };
      const local = await storeBackend(store).search({ ...query, weights });
      const remote = await new HttpBackend({ url: stub.url }).search({ ...query, weights });
      expect(remote).toStrictEqual(local);
      expect(local[0]?.evidence?.bm25?.weights).toEqual({ pooled: 0, sparse: 0.25, bm25: 0.75 });
      expect(local[0]?.evidence?.bm25?.terms.length).toBeGreaterThan(0);
      // The weights reach the store: thirds (the default) rank and score otherwise.
      const thirds = await new HttpBackend({ url: stub.url }).search(query);
      expect(thirds.map((r) => r.score)).not.toEqual(remote.map((r) => r.score));
    } finally {
      await stub.close();
      await store.close();
    }
  });

  it('passes minScore to the store, in process and over HTTP', async () => {
    const store = await openFixtureStore();
    const stub = await startStubServer({ store });
    try {
      // The fixture's encoder has no relevance calibration: the store refuses minScore, so
      // the refusal shows it arrived.
      const query = { bank: 'alice', query: 'grey cat', k: 3, minScore: 0.5 };
      await expect(storeBackend(store).search(query)).rejects.toThrow(/no relevance calibration/);
      await expect(new HttpBackend({ url: stub.url }).search(query)).rejects.toMatchObject({
        status: 400,
        message: expect.stringMatching(/no relevance calibration/),
      });
      const { minScore, ...rest } = query;
      expect(minScore).toBe(0.5);
      const plain = await new HttpBackend({ url: stub.url }).search(rest);
      expect(plain).toHaveLength(3);
    } finally {
      await stub.close();
      await store.close();
    }
  });

  it('encodes the bank into the path', async () => {
    const store = await openFixtureStore();
    const stub = await startStubServer({ store });
    try {
      const search = new HttpBackend({ url: stub.url }).search({ bank: 'a/b c', query: 'x' });
      await expect(search).rejects.toMatchObject({ status: 404 });
      expect(stub.requests.at(-1)?.path).toBe('/v1/banks/a%2Fb%20c/search');
      expect(stub.requests.at(-1)?.authorization).toBeUndefined();
    } finally {
      await stub.close();
      await store.close();
    }
  });

  it('names an error without a JSON body, a bad answer, and no answer', async () => {
    const query = { bank: 'alice', query: 'x' };
    const plain = await fixedServer(502, 'upstream down');
    await expect(new HttpBackend({ url: plain }).search(query)).rejects.toMatchObject({
      status: 502,
      code: 'HTTP_502',
      message: 'POST /v1/banks/alice/search: 502: upstream down',
    });
    const notJson = await fixedServer(200, '<html>');
    await expect(new HttpBackend({ url: notJson }).search(query)).rejects.toMatchObject({
      code: 'BAD_RESPONSE',
    });
    const wrongShape = await fixedServer(200, JSON.stringify({ results: [{ id: 1 }] }));
    await expect(new HttpBackend({ url: wrongShape }).search(query)).rejects.toThrow(/results/);
    // A port nothing listens on: take one from a server that has just closed.
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const unreachable = new HttpBackend({ url: `http://127.0.0.1:${port}` }).search(query);
    await expect(unreachable).rejects.toMatchObject({ status: undefined, code: 'UNREACHABLE' });
    // A server that never answers: the client gives up after timeoutMs.
    const silent = createServer(() => undefined);
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    onTestFinished(() => {
      silent.closeAllConnections();
      silent.close();
    });
    const url = `http://127.0.0.1:${(silent.address() as AddressInfo).port}`;
    const timedOut = new HttpBackend({ url, timeoutMs: 50 }).search(query);
    await expect(timedOut).rejects.toMatchObject({ code: 'UNREACHABLE', message: /timeout/ });
  });
});

describe('openBackend and hitMetadata', () => {
  it('validates the settings', () => {
    expect(() => openBackend({ bank: '', url: 'http://127.0.0.1:1' })).toThrow(/bank/);
    expect(() => openBackend({ bank: 'a', url: 'ftp://x' })).toThrow(/url/);
    expect(() => openBackend({ bank: 'a', k: 0, url: 'http://127.0.0.1:1' })).toThrow(/k/);
    expect(() => openBackend({ bank: 'a' } as never)).toThrow(/either store .* or url/);
    const store = { search: () => Promise.resolve([]) };
    expect(() => openBackend({ bank: 'a', store, url: 'http://x' } as never)).toThrow(/either/);
    expect(() => openBackend({ bank: 'a', store: {} } as never)).toThrow(/MemoryStore/);
    expect(openBackend({ bank: 'a', store }).backend).not.toBeInstanceOf(HttpBackend);
    const { backend, query } = openBackend({ bank: 'a', k: 2, url: 'http://127.0.0.1:1' });
    expect(backend).toBeInstanceOf(HttpBackend);
    expect(query).toEqual({ bank: 'a', k: 2 });
  });

  it("puts the search's fields over the memory's metadata", async () => {
    const store = await openFixtureStore();
    try {
      const hits = await storeBackend(store).search({ bank: 'alice', query: 'grey cat sofa' });
      const spoof = hits.find((h) => h.id === 'a4')!;
      const meta = hitMetadata(spoof, 'alice');
      expect(meta.score).toBe(spoof.score);
      expect(meta).toMatchObject({ id: 'a4', bank: 'alice', rank: spoof.rank });
      expect(meta.evidence).toBe(spoof.evidence);
      const pets = hitMetadata(
        hits.find((h) => h.id === 'a1')!,
        'alice',
      );
      expect(pets.topic).toBe('pets');
    } finally {
      await store.close();
    }
  });
});
