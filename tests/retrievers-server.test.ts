import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BfeServiceError, HttpBackend, storeBackend } from '@bfe/client';
import { FIXTURE_MEMORIES } from '@bfe/client/testing';
import { suiteTmpDir } from '@bfe/core/testing';
import { BfeRetriever as LangchainRetriever } from '@bfe/langchain';
import { BfeRetriever as LlamaindexRetriever } from '@bfe/llamaindex';
import { SEARCH_SYSTEMS } from '@bfe/store';
import { fakeEmbedder } from '@bfe/store/testing';
import { serve, type RunningServer } from '../apps/server/src/index.ts';

const KEY = 'alice-key-0123456789abcdef';
/** A key of one request per 1,000 s after its first: the second is over its rate. */
const SLOW_KEY = 'slow-key-0123456789abcdef0';

/** The retrievers' HTTP mode against the real `bfe serve` (in process), not a stub. */
describe('the LangChain and LlamaIndex retrievers against bfe serve', () => {
  let server: RunningServer;
  const dir = suiteTmpDir('bfe-retrievers-server-');

  beforeAll(async () => {
    const keys = join(dir(), 'keys.json');
    writeFileSync(
      keys,
      JSON.stringify({
        [KEY]: { banks: ['alice'], write: true },
        [SLOW_KEY]: { banks: ['alice'], rate: 0.001, burst: 1 },
      }),
    );
    server = await serve({
      store: join(dir(), 'store'),
      host: '127.0.0.1',
      port: 0,
      keys,
      storeOptions: { embedder: fakeEmbedder(16), compactSegments: 0 },
    });
    await server.store.add(FIXTURE_MEMORIES.map((m) => ({ ...m })));
  });

  afterAll(async () => {
    await server?.close();
  });

  it('LangChain over HTTP returns what the store returns in process', async () => {
    const query = 'grey cat sofa';
    const expected = await server.store.search({ bank: 'alice', query, k: 3 });
    const retriever = new LangchainRetriever({ url: server.url, apiKey: KEY, bank: 'alice', k: 3 });
    const docs = await retriever.invoke(query);
    expect(docs.map((d) => d.metadata.id)).toEqual(expected.map((r) => r.id));
    expect(docs.map((d) => d.metadata.score)).toEqual(expected.map((r) => r.score));
    expect(docs.map((d) => d.pageContent)).toEqual(expected.map((r) => r.text));
    const evidence = docs[0]!.metadata.evidence;
    expect(evidence?.tokens.length).toBeGreaterThan(0);
  });

  it('LlamaIndex over HTTP returns what the store returns in process', async () => {
    const query = 'alice marathon';
    const expected = await server.store.search({ bank: 'alice', query, k: 2 });
    const retriever = new LlamaindexRetriever({
      url: server.url,
      apiKey: KEY,
      bank: 'alice',
      k: 2,
    });
    const nodes = await retriever.retrieve({ query });
    expect(nodes.map((n) => n.node.id_)).toEqual(expected.map((r) => r.id));
    expect(nodes.map((n) => n.score)).toEqual(expected.map((r) => r.score));
  });

  it('the HTTP backend returns the in-process results field by field, evidence included', async () => {
    const http = new HttpBackend({ url: server.url, apiKey: KEY });
    const local = storeBackend(server.store);
    for (const system of SEARCH_SYSTEMS) {
      const query = { bank: 'alice', query: 'grey cat on the sofa in May', k: 5, system };
      const expected = await local.search(query);
      expect(expected[0]!.evidence).toBeDefined();
      expect(await http.search(query)).toStrictEqual(expected);
    }
  });

  it('a wrong key is 401 and another tenant’s bank is 404, as errors', async () => {
    const wrong = new LangchainRetriever({
      url: server.url,
      apiKey: 'x'.repeat(24),
      bank: 'alice',
    });
    await expect(wrong.invoke('cat')).rejects.toSatisfy(
      (e) => e instanceof BfeServiceError && e.status === 401,
    );
    const other = new LlamaindexRetriever({ url: server.url, apiKey: KEY, bank: 'bob' });
    await expect(other.retrieve({ query: 'lisbon' })).rejects.toSatisfy(
      (e) => e instanceof BfeServiceError && e.status === 404,
    );
  });

  it('keeps the evidence above the service’s default explain k, and reports a 429 with its Retry-After', async () => {
    const http = new HttpBackend({ url: server.url, apiKey: KEY });
    const query = { bank: 'alice', query: 'grey cat on the sofa', k: 30 };
    const expected = await storeBackend(server.store).search(query);
    expect(expected[0]!.evidence).toBeDefined();
    expect(await http.search(query)).toStrictEqual(expected);

    const slow = new HttpBackend({ url: server.url, apiKey: SLOW_KEY });
    await slow.search({ bank: 'alice', query: 'cat' });
    const refused = await slow.search({ bank: 'alice', query: 'cat' }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(BfeServiceError);
    expect(refused).toMatchObject({ status: 429, code: 'RATE_LIMITED' });
    expect((refused as BfeServiceError).retryAfter).toBeGreaterThan(900);
  });
});
