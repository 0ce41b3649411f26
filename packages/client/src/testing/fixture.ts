import { tmpDir } from '@bfe/core/testing';
import { MemoryStore } from '@bfe/store';
import { fakeEmbedder } from '@bfe/store/testing';

/** The fixture's memories: two banks, metadata on some, one key that shadows a search field. */
export const FIXTURE_MEMORIES = [
  {
    id: 'a1',
    bank: 'alice',
    text: 'alice adopted a grey cat called miso',
    meta: { topic: 'pets' },
  },
  { id: 'a2', bank: 'alice', text: 'alice runs a half marathon every autumn' },
  { id: 'a3', bank: 'alice', text: 'her brother bob is allergic to cats', meta: { who: 'bob' } },
  { id: 'a4', bank: 'alice', text: 'the grey cat sleeps on the sofa', meta: { score: 'spoof' } },
  { id: 'a5', bank: 'alice', text: 'alice works as a nurse in porto' },
  { id: 'b1', bank: 'bob', text: 'bob moved to lisbon last year' },
] as const;

/**
 * A store with {@link FIXTURE_MEMORIES} in a temporary directory of the running test (removed
 * when it ends), encoded by `fakeEmbedder` (fast; word-hash vectors, no model). Call it inside
 * a test; close the store at its end.
 * @example
 * const store = await openFixtureStore();
 * await store.search({ bank: 'alice', query: 'grey cat', k: 2 });
 */
export async function openFixtureStore(): Promise<MemoryStore> {
  const store = await MemoryStore.open(tmpDir('bfe-retriever-'), {
    embedder: fakeEmbedder(16),
    compactSegments: 0,
  });
  await store.add(FIXTURE_MEMORIES.map((m) => ({ ...m })));
  return store;
}
