import { expect, it } from 'vitest';
import { tmpDir } from '@bfe/core/testing';
import { rng } from '@bfe/index/testing';
import { TokenCollection } from '@bfe/index-milvus';
import type { SparseScorer } from '@bfe/scorer';
import { milvusIndexFactory } from './milvus-index.js';
import { SEARCH_SYSTEMS, searchView } from '../search/search.js';
import { MemoryStore } from '../store.js';
import { fakeEmbedder } from '../testing/index.js';
import type { MemoryInput } from '../input.js';

// A small vocabulary: words repeat across memories, so equal token vectors (ties) are common.
const WORDS = 'cat dog hiking paris tuesday coffee music book river garden sister job'.split(' ');
export function text(random: () => number): string {
  const n = 2 + Math.floor(random() * 6);
  return Array.from({ length: n }, () => WORDS[Math.floor(random() * WORDS.length)]!).join(' ');
}
const QUERIES = ['cat hiking', 'paris coffee tuesday', 'sister book river'];

/** Every query × system on every bank: the Milvus store ranks, scores and explains as exact. */
export async function same(ref: MemoryStore, mil: MemoryStore): Promise<void> {
  for (const bank of ref.banks()) {
    for (const query of QUERIES) {
      for (const system of SEARCH_SYSTEMS) {
        // Token k 4: a top-k that cuts through ties (repeated words), and floors.
        for (const tokenK of [4]) {
          const request = { bank, query, system, tokenK, k: 50 };
          const want = await ref.search(request);
          expect(await mil.search(request), `${bank} '${query}' ${system} ${tokenK}`).toEqual(want);
        }
      }
    }
  }
}

/**
 * The store cases every Milvus server passes (Milvus Lite and the standalone server): ranks as
 * the exact store through every kind of write and a reopen, converges after an interrupted sync,
 * and takes a `milvus://` URL as its index. `server()` gives the address and token; a token for
 * the URL case comes from `BFE_MILVUS_TOKEN`. `storeDir()` makes each store's directory (default
 * {@link tmpDir}, removed when the test ends; a file running these beside other tests at once
 * passes its own, since vitest ties a global `onTestFinished` to no one test then).
 */
export function storeCases(
  server: () => { address: string; token?: string },
  scorer: Promise<SparseScorer>,
  storeDir: () => string = () => tmpDir(),
): void {
  it('ranks as the exact store through adds, updates, deletes, flushes, compaction and reopen', async () => {
    const options = { ...server(), collection: 'store_a' };
    // One embedder for every store: its vocabulary (token pieces in the evidence) is shared.
    const embedder = fakeEmbedder();
    // fp32: the Milvus store and the exact one are compared bit for bit, flushed at other times.
    const scorerOption = { scorer: await scorer, embedder, codec: 'fp32' as const };
    const ref = await MemoryStore.open(storeDir(), scorerOption);
    const dir = storeDir();
    let index = milvusIndexFactory(options);
    let mil = await MemoryStore.open(dir, { index, ...scorerOption });
    const random = rng(7);
    const write = async (fn: (s: MemoryStore) => Promise<unknown>): Promise<void> => {
      await fn(ref);
      await fn(mil);
    };
    const batch = (from: number, to: number): MemoryInput[] =>
      Array.from({ length: to - from }, (_, i) => ({
        id: `m${from + i}`,
        bank: (from + i) % 3 === 0 ? 'bob' : 'alice',
        text: text(random),
      }));
    const first = batch(0, 40);
    await write((s) => s.add(first));
    await same(ref, mil);
    expect(index.counts()).toMatchObject({ syncs: 2, deletes: 0 });

    // An older snapshot of alice, before the writes below.
    const old = mil.snapshot();
    const oldView = old.bank('alice');

    const updates = [1, 2, 4].map((i) => ({ ...first[i]!, text: text(random) }));
    await write((s) => s.update(updates));
    await write((s) => s.delete(['m5', 'm7', 'm9'], { bank: 'alice' })); // m9 is bob's: unknown
    await write((s) => s.delete(['m3'], { bank: 'bob' }));
    const second = batch(40, 60);
    await write((s) => s.add(second));
    await write((s) => s.flush());
    await same(ref, mil);
    expect(index.counts().deletes).toBe(3 + 2 + 1); // the updated and deleted memories

    // The older view: Milvus has moved on, so it is searched exactly — same results as exact.
    for (const system of SEARCH_SYSTEMS) {
      const q = await embedder.encode(['cat garden music'], 'query');
      const options = { k: 50, system, queryText: 'cat garden music' };
      const exact = await searchView(oldView, q, options, await scorer);
      expect(await searchView(oldView, q, { ...options, index }, await scorer)).toEqual(exact);
    }
    await old.release();

    await write((s) => s.compact());
    await same(ref, mil);

    // Reopen with a new factory: the rows are read back from Milvus, nothing is rewritten.
    await mil.close();
    await index.dispose();
    index = milvusIndexFactory(options);
    mil = await MemoryStore.open(dir, { index, ...scorerOption });
    await same(ref, mil);
    expect(index.counts()).toEqual({ syncs: 0, rows: 0, deletes: 0, fallbacks: 0 });

    // Milvus holds exactly the store's tokens.
    const c = await TokenCollection.open(options, 8);
    expect(await c.count()).toBe((await mil.stats()).tokens);
    await c.close();
    await mil.close();
    await index.dispose();
    await ref.close();
  });

  it('converges after rows left by an interrupted sync, and writes nothing when in step', async () => {
    const options = { ...server(), collection: 'store_b' };
    const dir = storeDir();
    const index = milvusIndexFactory(options);
    const store = await MemoryStore.open(dir, {
      embedder: fakeEmbedder(),
      index,
      scorer: await scorer,
    });
    const random = rng(11);
    await store.add(
      Array.from({ length: 12 }, (_, i) => ({ id: `n${i}`, bank: 'carol', text: text(random) })),
    );
    // Rows of a write the store never acknowledged (a crash mid-sync), and a deleted memory's.
    const c = await TokenCollection.open(options, 8);
    const stray = new Float32Array(3 * 8).fill(0.5);
    await c.insert('carol', [
      { id: 'n1', seq: 999, vectors: stray },
      { id: 'gone', seq: 3, vectors: stray },
    ]);
    const results = await store.search({ bank: 'carol', query: 'dog river', k: 12 });
    expect(index.counts().deletes).toBe(2); // n1 (two writes) and gone
    expect(await c.memories('carol')).toEqual(
      new Map(store.list('carol').items.map((m) => [m.id, [expect.any(Number)]])),
    );
    expect(await c.count()).toBe((await store.stats()).tokens);
    const syncs = index.counts().syncs;
    expect(await store.search({ bank: 'carol', query: 'dog river', k: 12 })).toEqual(results);
    expect(index.counts().syncs).toBe(syncs);
    await c.close();
    await store.close();
    await index.dispose();
  });

  it('takes a milvus:// address as the index option, owns the connection and closes it', async () => {
    const embedder = fakeEmbedder();
    const random = rng(13);
    const items = Array.from({ length: 15 }, (_, i) => ({
      id: `p${i}`,
      bank: 'dave',
      text: text(random),
    }));
    const options = { embedder, scorer: await scorer, codec: 'fp32' as const };
    const ref = await MemoryStore.open(storeDir(), options);
    const mil = await MemoryStore.open(storeDir(), {
      ...options,
      index: `milvus://${server().address}`,
    });
    await ref.add(items);
    await mil.add(items);
    await same(ref, mil);
    await mil.close();
    await ref.close();
    // The rows are in the default collection.
    const c = await TokenCollection.open({ ...server(), address: server().address }, 8);
    expect(c.name).toBe('bfe_tokens');
    expect([...(await c.memories('dave')).keys()].sort()).toEqual(items.map((m) => m.id).sort());
    await c.close();
  });
}
