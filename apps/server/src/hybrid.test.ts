import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { searchResultToJson } from '@bfe/store';
import { body, harness, type Harness } from './testing/harness.js';

let h: Harness;
beforeEach(async () => {
  h = await harness();
});
afterEach(async () => {
  await h.close();
});

const search = (payload: Record<string, unknown>) =>
  h.app.inject({ method: 'POST', url: '/v1/banks/alice/search', payload });

describe('hybrid search over HTTP', () => {
  it('answers the store’s hybrid results, with the weights asked and the BM25 evidence', async () => {
    await h.app.inject({
      method: 'POST',
      url: '/v1/banks/alice/memories',
      payload: {
        memories: [
          { id: 'm1', text: 'alice adopted a grey cat called miso' },
          { id: 'm2', text: 'alice runs a marathon every autumn' },
          { id: 'm3', text: 'the grey cat sleeps on the grey sofa' },
        ],
      },
    });
    const weights = { pooled: 1, sparse: 1, bm25: 2 };
    const res = await search({ query: 'grey sofa', k: 3, system: 'hybrid', weights });
    expect(res.statusCode).toBe(200);
    const direct = await h.store.search({
      bank: 'alice',
      query: 'grey sofa',
      k: 3,
      system: 'hybrid',
      weights,
    });
    expect(body(res).results).toEqual(direct.map(searchResultToJson));
    const top = body(res).results[0];
    expect(top.id).toBe('m3');
    expect(top.evidence.system).toBe('hybrid');
    expect(top.evidence.bm25.weights).toEqual({ pooled: 0.25, sparse: 0.25, bm25: 0.5 });
    expect(top.evidence.bm25.terms.map((t: { term: string }) => t.term)).toEqual(['grey', 'sofa']);
    expect(top.evidence.pooledPart + top.evidence.sparsePart + top.evidence.bm25.part).toBe(
      top.score,
    );
  });

  it('refuses weights for another system and weights that are all 0', async () => {
    await h.store.add([{ id: 'm1', bank: 'alice', text: 'a grey cat' }]);
    const weights = { pooled: 1, sparse: 1, bm25: 1 };
    const other = await search({ query: 'cat', system: 'pooled', weights });
    expect([other.statusCode, body(other).error.code]).toEqual([400, 'BAD_REQUEST']);
    const zero = await search({
      query: 'cat',
      system: 'hybrid',
      weights: { ...weights, pooled: 0, sparse: 0, bm25: 0 },
    });
    expect(zero.statusCode).toBe(400);
    expect(body(zero).error.message).toMatch(/weights/);
  });
});
