import { BaseRetriever } from '@llamaindex/core/retriever';
import { MetadataMode, TextNode } from '@llamaindex/core/schema';
import { describe, expect, it } from 'vitest';
import { BfeServiceError } from '@bfe/client';
import { openFixtureStore, startStubServer } from '@bfe/client/testing';
import { BfeRetriever } from './index.js';

describe('BfeRetriever (LlamaIndex) in process', () => {
  it("returns the store's ranking as NodeWithScore through retrieve", async () => {
    const store = await openFixtureStore();
    try {
      const query = 'grey cat sofa';
      const expected = await store.search({ bank: 'alice', query, k: 3 });
      const retriever = new BfeRetriever({ store, bank: 'alice', k: 3 });
      expect(retriever).toBeInstanceOf(BaseRetriever);
      const nodes = await retriever.retrieve({ query });
      expect(nodes).toHaveLength(3);
      nodes.forEach(({ node, score }, i) => {
        const hit = expected[i]!;
        expect(node).toBeInstanceOf(TextNode);
        expect(node.id_).toBe(hit.id);
        expect(score).toBe(hit.score);
        expect((node as TextNode).text).toBe(hit.text);
        expect(node.metadata).toEqual({
          ...hit.meta,
          id: hit.id,
          rank: i + 1,
          score: hit.score,
          pooled: hit.pooled,
          sparse: hit.sparse,
          bank: 'alice',
          evidence: hit.evidence,
        });
      });
      // A plain string query, and the store's default k (10): the whole five-memory bank.
      const all = await new BfeRetriever({ store, bank: 'alice' }).retrieve(query);
      expect(all.map((n) => n.node.id_).sort()).toEqual(['a1', 'a2', 'a3', 'a4', 'a5']);
      // A multi-part query is searched as its text parts.
      const parts = await retriever.retrieve({ query: [{ type: 'text', text: query }] });
      expect(parts.map((n) => n.node.id_)).toEqual(expected.map((r) => r.id));
    } finally {
      await store.close();
    }
  });

  it('searches with hybrid and its weights: BM25 evidence on each node', async () => {
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
      const nodes = await retriever.retrieve('cat sofa');
      expect(nodes.map((n) => [n.node.id_, n.score])).toEqual(expected.map((r) => [r.id, r.score]));
      const evidence = nodes[0]?.node.metadata.evidence as (typeof expected)[number]['evidence'];
      expect(evidence?.bm25?.weights).toEqual({ pooled: 0.5, sparse: 0, bm25: 0.5 });
      expect(evidence?.bm25?.terms.map((t) => t.term)).toContain('sofa');
    } finally {
      await store.close();
    }
  });

  it('keeps the search fields out of the LLM view and keeps memory metadata in', async () => {
    const store = await openFixtureStore();
    try {
      const nodes = await new BfeRetriever({ store, bank: 'alice' }).retrieve('grey cat');
      const a1 = nodes.find((n) => n.node.id_ === 'a1')!.node;
      const llmView = a1.getContent(MetadataMode.LLM);
      expect(llmView).toContain('topic: pets');
      expect(llmView).toContain('alice adopted a grey cat called miso');
      expect(llmView).not.toMatch(/evidence|score|rank/);
      expect(a1.getContent(MetadataMode.EMBED)).not.toMatch(/evidence|score/);
    } finally {
      await store.close();
    }
  });

  it('passes the system and rejects an unknown bank', async () => {
    const store = await openFixtureStore();
    try {
      const pooled = await store.search({ bank: 'alice', query: 'cat', k: 2, system: 'pooled' });
      const retriever = new BfeRetriever({ store, bank: 'alice', k: 2, system: 'pooled' });
      const nodes = await retriever.retrieve('cat');
      expect(nodes.map((n) => [n.node.id_, n.score])).toEqual(pooled.map((r) => [r.id, r.score]));
      const unknown = new BfeRetriever({ store, bank: 'carol' }).retrieve('cat');
      await expect(unknown).rejects.toMatchObject({ code: 'DATA_INVALID' });
      expect(() => new BfeRetriever({ bank: 'alice', k: 1.5, store })).toThrow(/k/);
    } finally {
      await store.close();
    }
  });
});

// The stub speaks the search contract of issue 15 (`@bfe/client/testing`); these tests run
// against `bfe serve` itself once apps/server lands.
describe('BfeRetriever (LlamaIndex) over HTTP (stub of the bfe serve contract)', () => {
  it('returns the same nodes as in process, sends the key, maps 401/404', async () => {
    const store = await openFixtureStore();
    const stub = await startStubServer({ store, keys: { 'key-a': ['alice'], 'key-b': ['bob'] } });
    try {
      const local = await new BfeRetriever({ store, bank: 'alice', k: 4 }).retrieve('grey cat');
      const http = new BfeRetriever({ url: stub.url, apiKey: 'key-a', bank: 'alice', k: 4 });
      const remote = await http.retrieve('grey cat');
      const view = (ns: typeof local) =>
        ns.map((n) => ({ id: n.node.id_, score: n.score, metadata: n.node.metadata }));
      expect(view(remote)).toEqual(JSON.parse(JSON.stringify(view(local))));
      expect(stub.requests.at(-1)?.authorization).toBe('Bearer key-a');

      const noKey = await new BfeRetriever({ url: stub.url, bank: 'alice' })
        .retrieve('cat')
        .catch((e: unknown) => e);
      expect(noKey).toBeInstanceOf(BfeServiceError);
      expect(noKey).toMatchObject({ status: 401, code: 'UNAUTHORIZED' });
      const otherTenant = new BfeRetriever({ url: stub.url, apiKey: 'key-b', bank: 'alice' });
      await expect(otherTenant.retrieve('cat')).rejects.toThrow(
        "POST /v1/banks/alice/search: 404 BANK_NOT_FOUND: no bank 'alice'",
      );
    } finally {
      await stub.close();
      await store.close();
    }
  });
});
