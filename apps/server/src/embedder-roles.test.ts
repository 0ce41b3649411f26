import { describe, expect, it } from 'vitest';
import { tmpDir } from '@bfe/core/testing';
import { MemoryStore } from '@bfe/store';
import { fakeEmbedder } from '@bfe/store/testing';
import { buildServer } from './app.js';
import { byRole } from './embedder-roles.js';
import { loopbackPolicy } from './keys.js';
import { gatedEmbedder, post } from './testing/live.js';

describe('byRole: queries and passages on encoders of their own', () => {
  it('answers a search while an add is held in the passage encoder', async () => {
    const dir = tmpDir();
    const first = await MemoryStore.open(dir, { embedder: fakeEmbedder() });
    await first.add([{ id: 'a', bank: 'alice', text: 'alice adopted a grey cat' }]);
    await first.close();
    const queries = fakeEmbedder();
    const passages = gatedEmbedder('passage');
    const store = await MemoryStore.open(dir, { embedder: byRole(queries, passages) });
    const app = await buildServer({ store, access: loopbackPolicy() });
    await app.listen({ host: '127.0.0.1', port: 0 });
    const port = (app.server.address() as { port: number }).port;
    try {
      const add = post(port, '/v1/banks/alice/memories', {
        memories: [{ id: 'b', text: 'bob runs marathons' }],
      });
      await passages.started; // the add's encoding is held
      const found = await post(port, '/v1/banks/alice/search', { query: 'grey cat', k: 1 });
      expect(found.status).toBe(200);
      expect(found.json().results[0].id).toBe('a');
      expect(queries.calls).toBe(1);
      passages.release();
      expect((await add).status).toBe(200);
      expect(queries.calls).toBe(1); // the add never reached the query encoder
    } finally {
      await app.close();
      await store.close();
    }
  });

  it('refuses two different models', () => {
    expect(() => byRole(fakeEmbedder(8), fakeEmbedder(16))).toThrow(/one model/);
    const other = { ...fakeEmbedder(8), model: 'another graph' };
    expect(() => byRole(other, fakeEmbedder(8))).toThrow(/one model/);
  });

  it('takes another graph for the queries when asked, carrying the passages model', () => {
    const passages = fakeEmbedder(8);
    const both = byRole({ ...fakeEmbedder(8), model: 'query graph' }, passages, {
      queryModel: true,
    });
    expect(both.model).toBe(passages.model);
    // Another dimension is refused even then.
    expect(() => byRole(fakeEmbedder(16), passages, { queryModel: true })).toThrow(/one model/);
  });
});
