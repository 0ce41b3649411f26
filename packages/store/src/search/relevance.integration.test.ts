import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { tmpDir } from '@bfe/core/testing';
import { resolveModelDir } from '@bfe/models';
import { MemoryStore } from '../store.js';
import { shippedCalibrations } from './relevance.js';

const hasModel = existsSync(join(resolveModelDir('all-minilm-l6-v2'), 'bfe-model.json'));
/** CI sets BFE_REQUIRE_MODEL=1: a missing model then fails instead of skipping. */
const required = process.env.BFE_REQUIRE_MODEL === '1';

const MEMORIES = [
  { id: 'hike', text: 'Caroline went hiking with her friends in the mountains last weekend.' },
  { id: 'paint', text: 'Melanie painted a sunrise over the lake and hung it in the kitchen.' },
  { id: 'group', text: 'The support group meets every Tuesday evening at the library.' },
  { id: 'pottery', text: 'Melanie signed up for a pottery class in July.' },
];

describe.skipIf(!hasModel && !required)('relevance on MiniLM (the shipped calibration)', () => {
  it('scores the memory that answers above unrelated ones, and minScore keeps only it', async () => {
    const store = await MemoryStore.open(tmpDir(), { model: 'all-minilm-l6-v2' });
    try {
      await store.add(MEMORIES.map((m) => ({ ...m, bank: 'b' })));
      const [calibration] = shippedCalibrations();
      const query = 'When did Caroline go hiking in the mountains?';
      const results = await store.search({ bank: 'b', query, k: 4, explain: false });
      expect(results[0]!.id).toBe('hike');
      const byId = new Map(results.map((r) => [r.id, r.relevance!]));
      for (const r of results) {
        expect(r.relevance).toBeGreaterThan(0);
        expect(r.relevance).toBeLessThan(1);
      }
      for (const other of ['paint', 'group', 'pottery']) {
        expect(byId.get('hike')!).toBeGreaterThan(byId.get(other)!);
      }
      const minScore =
        (byId.get('hike')! +
          Math.max(byId.get('paint')!, byId.get('group')!, byId.get('pottery')!)) /
        2;
      const kept = await store.search({ bank: 'b', query, k: 4, minScore, explain: false });
      expect(kept.map((r) => r.id)).toEqual(['hike']);
      // A query nothing in the bank answers: at the shipped threshold, no result.
      const none = await store.search({
        bank: 'b',
        query: 'What is the boiling point of liquid nitrogen in kelvin?',
        k: 4,
        minScore: calibration!.threshold,
      });
      expect(none).toEqual([]);
    } finally {
      await store.close();
    }
  });
});
