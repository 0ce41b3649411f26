import { afterEach, describe, expect, it } from 'vitest';
import { relevance, shippedCalibrations } from '@bfe/store';
import { fakeEmbedder } from '@bfe/store/testing';
import { body, harness, type Harness } from './testing/harness.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const MEMORIES = [
  { id: 'm1', text: 'grey cat on the sofa' },
  { id: 'm2', text: 'marathon in autumn' },
  { id: 'm3', text: 'nurse from porto' },
  { id: 'm4', text: 'grey sofa in lisbon' },
];

async function withMemories(model?: string): Promise<Harness> {
  h = await harness(model === undefined ? {} : { embedder: fakeEmbedder(8, model) });
  const res = await h.app.inject({
    method: 'POST',
    url: '/v1/banks/alice/memories',
    payload: { memories: MEMORIES },
  });
  expect(res.statusCode).toBe(200);
  return h;
}

const search = (s: Harness, payload: Record<string, unknown>) =>
  s.app.inject({ method: 'POST', url: '/v1/banks/alice/search', payload });

describe('relevance and minScore over HTTP', () => {
  // A store whose encoder identifies as the shipped calibration's model gets its relevance.
  const [calibration] = shippedCalibrations();

  it('answers each result with its calibrated relevance, and minScore keeps those at or above', async () => {
    const s = await withMemories(calibration!.model.sha256);
    const all = body(await search(s, { query: 'grey cat', k: 4, explain: false }))
      .results as Array<{
      id: string;
      pooled: number;
      sparse: number;
      relevance: number;
    }>;
    expect(all).toHaveLength(4);
    for (const r of all)
      expect(r.relevance).toBeCloseTo(relevance(calibration!, r.pooled, r.sparse), 12);
    const values = all.map((r) => r.relevance).sort((a, b) => a - b);
    const minScore = (values[1]! + values[2]!) / 2;
    const kept = await search(s, { query: 'grey cat', k: 4, explain: false, minScore });
    expect(kept.statusCode).toBe(200);
    expect(body(kept).results.map((r: { id: string }) => r.id)).toEqual(
      all.filter((r) => r.relevance >= minScore).map((r) => r.id),
    );
  });

  it('refuses minScore with 400 when no calibration fits the encoder, and omits relevance', async () => {
    const s = await withMemories();
    const plain = body(await search(s, { query: 'grey cat', k: 2 }));
    expect(plain.results[0]).not.toHaveProperty('relevance');
    const res = await search(s, { query: 'grey cat', minScore: 0.5 });
    expect(res.statusCode).toBe(400);
    expect(body(res).error.message).toMatch(/no relevance calibration/);
    const bad = await search(s, { query: 'grey cat', minScore: 2 });
    expect(bad.statusCode).toBe(400);
  });

  it('documents minScore and relevance in /openapi.json', async () => {
    const s = await withMemories();
    const doc = body(await s.app.inject({ method: 'GET', url: '/openapi.json' }));
    const text = JSON.stringify(doc);
    const result = doc.components.schemas.SearchResult.properties;
    expect(result.relevance).toMatchObject({ type: 'number', minimum: 0, maximum: 1 });
    expect(text).toContain('"minScore"');
  });
});
