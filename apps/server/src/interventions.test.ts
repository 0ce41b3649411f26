import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { body, harness, type Harness } from './testing/harness.js';
import { searchResponseSchema } from './schemas.js';

let h: Harness;
beforeEach(async () => {
  h = await harness();
  const res = await h.app.inject({
    method: 'POST',
    url: '/v1/banks/alice/memories',
    payload: {
      memories: [
        { id: 'm1', text: 'alice adopted a grey cat called miso' },
        { id: 'm2', text: 'alice runs a marathon every autumn' },
        { id: 'm3', text: 'bob is allergic to cats' },
        { id: 'm4', text: 'the grey cat sleeps on the sofa' },
      ],
    },
  });
  expect(res.statusCode).toBe(200);
});
afterEach(async () => {
  await h.close();
});

const search = (payload: Record<string, unknown>) =>
  h.app.inject({
    method: 'POST',
    url: '/v1/banks/alice/search',
    payload: { query: 'which grey cat did alice adopt', k: 2, ...payload },
  });

describe('search with token interventions', () => {
  it('returns the top result’s per-token excess and its rank after each removal, as the store does', async () => {
    const res = await search({ interventions: { tokens: ['grey'] } });
    expect(res.statusCode).toBe(200);
    const got = body(res);
    expect(searchResponseSchema.parse(got)).toEqual(got);
    const iv = got.interventions;
    expect([iv.id, iv.rank]).toEqual([got.results[0].id, 1]);
    expect(iv.tokens.map((t: { queryPiece: string }) => t.queryPiece)).toEqual([
      'which',
      'grey',
      'cat',
      'did',
      'alice',
      'adopt',
    ]);
    expect(iv.removals.map((r: { label: string }) => r.label)).toEqual([
      'top 1',
      'top 2',
      'top 3',
      'top 4',
      'top 5',
      'top 6',
      "'grey'",
    ]);
    expect(iv.removals[6].removed).toEqual([1]);
    const direct = await h.store.searchWithInterventions({
      bank: 'alice',
      query: 'which grey cat did alice adopt',
      k: 2,
      interventions: { tokens: ['grey'] },
    });
    expect(iv.removals.map((r: { rank: number }) => r.rank)).toEqual(
      direct.interventions!.removals.map((r) => r.rank),
    );
    expect(iv.score).toBe(direct.interventions!.score);
    // A floored token has no similarity on the wire (null), never NaN.
    for (const t of iv.tokens) expect(t.similarity === null).toBe(t.floored);
  });

  it('analyses a named memory below the returned results, and answers nothing extra without the option', async () => {
    const res = await search({
      k: 1,
      system: 'zero-floor',
      interventions: { memory: 'm2', removeTop: 2 },
    });
    expect(res.statusCode).toBe(200);
    const got = body(res);
    expect(got.results).toHaveLength(1);
    expect(got.interventions.id).toBe('m2');
    expect(got.interventions.rank).toBeGreaterThan(1);
    expect(got.interventions.removals).toHaveLength(2);
    const plain = body(await search({}));
    expect(plain.interventions).toBeUndefined();
  });

  it('refuses unknown memories and tokens, systems it cannot edit and removeTop over 6 with a 400', async () => {
    for (const interventions of [{ memory: 'nope' }, { tokens: ['zebra'] }, { removeTop: 7 }]) {
      const res = await search({ interventions });
      expect(res.statusCode).toBe(400);
    }
    const pooled = await search({ system: 'pooled', interventions: {} });
    expect(pooled.statusCode).toBe(400);
    expect(body(pooled).error.message).toMatch(/interventions/);
  });

  it('answers over a real socket on 127.0.0.1', async () => {
    const address = await h.app.listen({ host: '127.0.0.1', port: 0 });
    const res = await fetch(`${address}/v1/banks/alice/search`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ query: 'grey cat', interventions: { removeTop: 1 } }),
    });
    expect(res.status).toBe(200);
    const got = (await res.json()) as { interventions: { removals: unknown[] } };
    expect(got.interventions.removals).toHaveLength(1);
  });
});
