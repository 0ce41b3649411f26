import { Document } from '@langchain/core/documents';
import { BaseRetriever } from '@langchain/core/retrievers';
import { RunnableLambda } from '@langchain/core/runnables';
import { describe, expect, it } from 'vitest';
import { BfeServiceError } from '@bfe/client';
import { openFixtureStore, startStubServer } from '@bfe/client/testing';
import { BfeRetriever } from './index.js';

describe('BfeRetriever in process', () => {
  it("returns the store's ranking as Documents through invoke", async () => {
    const store = await openFixtureStore();
    try {
      const query = 'grey cat sofa';
      const expected = await store.search({ bank: 'alice', query, k: 3 });
      const retriever = new BfeRetriever({ store, bank: 'alice', k: 3 });
      expect(retriever).toBeInstanceOf(BaseRetriever);
      const docs = await retriever.invoke(query);
      expect(docs).toHaveLength(3);
      expect(docs.every((d) => d instanceof Document)).toBe(true);
      expect(docs.map((d) => d.id)).toEqual(expected.map((r) => r.id));
      expect(docs.map((d) => d.pageContent)).toEqual(expected.map((r) => r.text));
      docs.forEach((doc, i) => {
        const hit = expected[i]!;
        expect(doc.metadata).toEqual({
          ...hit.meta,
          id: hit.id,
          rank: i + 1,
          score: hit.score,
          pooled: hit.pooled,
          sparse: hit.sparse,
          bank: 'alice',
          evidence: hit.evidence,
        });
        expect(doc.metadata.evidence?.tokens.length).toBeGreaterThan(0);
      });
      // The store's default k (10) when unset: the whole five-memory bank.
      const all = await new BfeRetriever({ store, bank: 'alice' }).invoke(query);
      expect(all.map((d) => d.id).sort()).toEqual(['a1', 'a2', 'a3', 'a4', 'a5']);
    } finally {
      await store.close();
    }
  });

  it('passes the system, composes in a chain, and rejects an unknown bank', async () => {
    const store = await openFixtureStore();
    try {
      const pooled = await store.search({ bank: 'alice', query: 'cat', k: 2, system: 'pooled' });
      const retriever = new BfeRetriever({ store, bank: 'alice', k: 2, system: 'pooled' });
      const docs = await retriever.invoke('cat');
      expect(docs.map((d) => [d.id, d.metadata.score])).toEqual(pooled.map((r) => [r.id, r.score]));
      expect(docs[0]?.metadata.evidence?.system).toBe('pooled');
      const chain = retriever.pipe(
        RunnableLambda.from((ds: Document[]) => ds.map((d) => d.pageContent).join('\n')),
      );
      expect(await chain.invoke('cat')).toBe(pooled.map((r) => r.text).join('\n'));
      const unknown = new BfeRetriever({ store, bank: 'carol' }).invoke('cat');
      await expect(unknown).rejects.toMatchObject({ code: 'DATA_INVALID' });
      await expect(new BfeRetriever({ store, bank: 'carol' }).invoke('cat')).rejects.toThrow(
        /unknown bank 'carol'/,
      );
    } finally {
      await store.close();
    }
  });

  it('searches with hybrid and its weights: BM25 evidence on each Document', async () => {
    const store = await openFixtureStore();
    try {
      const weights = { pooled: 1, sparse: 0, bm25: 1 };
      const expected = await store.search({
        bank: 'alice',
        query: 'cat sofa',
        k: 3,
        system: 'hybrid',
        weights,
      });
      const retriever = new BfeRetriever({ store, bank: 'alice', k: 3, system: 'hybrid', weights });
      const docs = await retriever.invoke('cat sofa');
      expect(docs.map((d) => [d.id, d.metadata.score])).toEqual(
        expected.map((r) => [r.id, r.score]),
      );
      expect(docs[0]?.metadata.evidence?.bm25?.weights).toEqual({
        pooled: 0.5,
        sparse: 0,
        bm25: 0.5,
      });
      expect(docs[0]?.metadata.evidence?.bm25?.terms.map((t) => t.term)).toContain('sofa');
    } finally {
      await store.close();
    }
  });

  it('refuses bad settings at construction', () => {
    expect(() => new BfeRetriever({ bank: 'alice', k: 0, url: 'http://127.0.0.1:1' })).toThrow(/k/);
    expect(() => new BfeRetriever({ bank: 'alice' } as never)).toThrow(/either store/);
  });
});

// The stub speaks the search contract of issue 15 (`@bfe/client/testing`); these tests run
// against `bfe serve` itself once apps/server lands.
describe('BfeRetriever over HTTP (stub of the bfe serve contract)', () => {
  it('returns the same Documents as in process, with the key sent', async () => {
    const store = await openFixtureStore();
    const stub = await startStubServer({ store, keys: { 'key-a': ['alice'] } });
    try {
      const local = await new BfeRetriever({ store, bank: 'alice', k: 4 }).invoke('grey cat');
      const http = new BfeRetriever({ url: stub.url, apiKey: 'key-a', bank: 'alice', k: 4 });
      const remote = await http.invoke('grey cat');
      expect(remote.map((d) => ({ ...d }))).toEqual(
        JSON.parse(JSON.stringify(local.map((d) => ({ ...d })))),
      );
      expect(stub.requests.at(-1)?.authorization).toBe('Bearer key-a');
    } finally {
      await stub.close();
      await store.close();
    }
  });

  it('maps 401 and 404 to BfeServiceError with the status and the server message', async () => {
    const store = await openFixtureStore();
    const stub = await startStubServer({ store, keys: { 'key-a': ['alice'], 'key-b': ['bob'] } });
    try {
      const wrongKey = new BfeRetriever({ url: stub.url, apiKey: 'nope', bank: 'alice' });
      const e401 = await wrongKey.invoke('cat').catch((e: unknown) => e);
      expect(e401).toBeInstanceOf(BfeServiceError);
      expect(e401).toMatchObject({ status: 401, code: 'UNAUTHORIZED' });
      expect((e401 as Error).message).toBe(
        'POST /v1/banks/alice/search: 401 UNAUTHORIZED: missing or unknown key',
      );
      const otherTenant = new BfeRetriever({ url: stub.url, apiKey: 'key-b', bank: 'alice' });
      await expect(otherTenant.invoke('cat')).rejects.toMatchObject({
        status: 404,
        code: 'BANK_NOT_FOUND',
      });
    } finally {
      await stub.close();
      await store.close();
    }
  });
});
