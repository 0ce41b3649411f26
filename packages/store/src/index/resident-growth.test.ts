import { describe, expect, it } from 'vitest';
import { tmpDir } from '@bfe/core/testing';
import { MemoryStore } from '../store.js';
import { fakeEmbedder } from '../testing/index.js';
import { residentIndexFactory } from './resident-index.js';

// A store's bank searched between adds: each add makes a new view grown from the last, which the
// resident kernel of the view it grew from serves at once (no packing per write), with the
// results of a store that never packs a bank. A flush re-encodes the memtable's rows in the
// store's codec (sq8: other values at the same versions): the views after it are not grown from
// the resident one, and still rank as the other store does.

const embedder = fakeEmbedder();
const text = (i: number): string =>
  `memory ${i} about ${['cats', 'dogs', 'mats', 'hats'][i % 4]} and ${['red', 'blue'][i % 2]} things`;

describe('resident kernels under adds', () => {
  it('grown views are searched on the kernel packed before the adds, with the same results', async () => {
    const index = residentIndexFactory();
    const open = (i: typeof index) =>
      MemoryStore.open(tmpDir('bfe-resident-growth-'), { embedder, codec: 'sq8', index: i });
    const store = await open(index);
    const never = residentIndexFactory({ maxResidentTokens: 0 });
    const plain = await open(never);
    try {
      const items = Array.from({ length: 80 }, (_, i) => ({
        id: `m${i}`,
        bank: 'b',
        text: text(i),
      }));
      for (const s of [store, plain]) await s.add(items);
      const ask = { bank: 'b', query: 'blue cats', k: 5 } as const;
      await store.search(ask);
      await store.search(ask);
      await index.settled();
      expect(index.resident()).toBe(1);
      for (let i = 80; i < 85; i++) {
        for (const s of [store, plain]) await s.add([{ id: `m${i}`, bank: 'b', text: text(i) }]);
        // Twice: a view not grown from the resident one is packed at its second search.
        for (const query of ['blue cats', `memory ${i} hats`]) {
          const q = { bank: 'b', query, k: 5 } as const;
          expect(await store.search(q)).toEqual(await plain.search(q));
        }
        await index.settled();
        expect(index.resident(), `after add ${i}`).toBe(1);
      }
      for (const s of [store, plain]) await s.flush();
      for (let i = 85; i < 88; i++) {
        for (const s of [store, plain]) await s.add([{ id: `m${i}`, bank: 'b', text: text(i) }]);
        for (const query of ['blue cats', `memory ${i} hats`, 'red dogs']) {
          const q = { bank: 'b', query, k: 5 } as const;
          expect(await store.search(q), `after the flush, add ${i}: ${query}`).toEqual(
            await plain.search(q),
          );
        }
        await index.settled();
      }
      expect(never.resident()).toBe(0);
    } finally {
      await store.close();
      await plain.close();
      await index.dispose();
      await never.dispose();
    }
  });
});
