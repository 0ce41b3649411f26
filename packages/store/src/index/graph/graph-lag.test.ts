import { afterAll, describe, expect, it } from 'vitest';
import { tmpDir } from '@bfe/core/testing';
import { ExactTokenIndex, flatTokenStore } from '@bfe/index';
import { rng } from '@bfe/index/testing';
import { SparseScorer } from '@bfe/scorer';
import { searchView } from '../../search/search.js';
import { MemoryStore } from '../../store.js';
import { fakeEmbedder } from '../../testing/index.js';
import type { BankView, EncodedTexts } from '../../types.js';
import { storeIndexFactory, type StoreIndexFactory } from '../store-index.js';
import { graphWorkerHost, type GraphHnsw, type GraphHnswMaker } from './graph-hnsw.js';

// A graph that lags behind the writes (its insertions held at a gate, on the worker thread):
// every write is acknowledged meanwhile, and every search equals the exact search of its
// snapshot — the graph's proposals for the versions it holds, the rest scored one by one.

const scorer = await SparseScorer.open({ threads: 1 });
afterAll(() => scorer.dispose());
const DIM = 32;
const embedder = fakeEmbedder(DIM, 'fake-embedder', { jitter: 0.6 });
const WORDS = Array.from({ length: 300 }, (_, i) => `w${i.toString(36)}`);

function texts(seed: number, n: number): string[] {
  const rand = rng(seed);
  return Array.from({ length: n }, () =>
    Array.from({ length: 4 + Math.floor(rand() * 9) }, () => WORDS[Math.floor(rand() * 300)]).join(
      ' ',
    ),
  );
}

/** Graph indexes whose adds and removals wait at a gate while it is held. */
function gated(inner: GraphHnswMaker) {
  let held = false;
  const waiting: (() => void)[] = [];
  let arrived: (() => void) | undefined;
  const pass = (): Promise<void> => {
    if (!held) return Promise.resolve();
    const p = new Promise<void>((resolve) => waiting.push(resolve));
    arrived?.();
    return p;
  };
  const wrap = (h: GraphHnsw): GraphHnsw => ({
    add: async (first, vectors, count, applied) => {
      await pass();
      return h.add(first, vectors, count, applied);
    },
    remove: async (first, count, applied) => {
      await pass();
      return h.remove(first, count, applied);
    },
    search: (queries, rows, fetch, read) => h.search(queries, rows, fetch, read),
    save: (path) => h.save(path),
    dispose: () => h.dispose(),
  });
  const maker: GraphHnswMaker = {
    create: async (dim, params) => wrap(await inner.create(dim, params)),
    load: async (path, dim, params) => {
      const got = await inner.load(path, dim, params);
      return { ...got, hnsw: wrap(got.hnsw) };
    },
    close: () => inner.close(),
  };
  return {
    maker,
    hold: () => void (held = true),
    /** Resolves when a change waits at the gate. */
    arrival: (): Promise<void> =>
      waiting.length > 0 ? Promise.resolve() : new Promise((resolve) => (arrived = resolve)),
    /** Lets the first waiting change through. */
    releaseOne: () => waiting.shift()?.(),
    releaseAll: () => {
      held = false;
      for (const go of waiting.splice(0)) go();
    },
  };
}

/** The exact search over every live token (float64 similarities, as the graph's rescoring). */
const exactOf = (v: BankView) =>
  new ExactTokenIndex(
    { tokens: flatTokenStore(v.tokenVectors, DIM), tokenOffsets: v.tokenOffsets, ids: v.ids },
    scorer.kernel,
  );

async function expectExact(
  store: MemoryStore,
  queries: readonly EncodedTexts[],
  index: StoreIndexFactory,
): Promise<void> {
  const snap = store.snapshot();
  const view = snap.bank('b');
  for (const q of queries) {
    const got = await searchView(view, q, { k: 10, index }, scorer);
    const want = await searchView(view, q, { k: 10, index: () => exactOf(view) }, scorer);
    expect(got).toEqual(want);
  }
  await snap.release();
}

describe('a graph behind its writes', () => {
  it('acknowledges writes without it, searches exactly what is live, and catches up', async () => {
    const gate = gated(graphWorkerHost());
    // A search wide enough that the graph's proposals are the exact ones on a bank this small:
    // what is tested is how a search joins them with the versions the graph lacks or holds too.
    const index = storeIndexFactory(
      { hnswMinTokens: 200, hnsw: { efSearch: 1024 } },
      { graphs: () => gate.maker },
    );
    const store = await MemoryStore.open(tmpDir(), { embedder, index, compactSegments: 0 });
    await store.add(texts(1, 200).map((text, i) => ({ id: `m${i}`, bank: 'b', text })));
    await store.search({ bank: 'b', query: 'w1 w2', k: 3 }); // starts the build
    await index.graphsSettled();
    const queries = await Promise.all(texts(2, 8).map((t) => embedder.encode([t], 'query')));
    // Copies of the queries' texts come in later: they rank first once live.
    const copies = texts(2, 8);
    await expectExact(store, queries, index);

    gate.hold();
    const rand = rng(3);
    const ids = Array.from({ length: 200 }, (_, i) => `m${i}`);
    for (let b = 0; b < 8; b++) {
      const batch = texts(10 + b, 10).map((text, i) => ({ id: `n${b}-${i}`, bank: 'b', text }));
      batch.push({ id: `copy${b}`, bank: 'b', text: copies[b]! });
      await store.add(batch); // acknowledged while the graph's insertions wait
      ids.push(...batch.map((m) => m.id));
      const upd = [...new Set(Array.from({ length: 3 }, () => ids[Math.floor(rand() * 150)]!))];
      await store.update(
        upd.map((id, i) => ({ id, bank: 'b', text: texts(40 + b * 5 + i, 1)[0]! })),
      );
      await store.delete(ids.splice(Math.floor(rand() * (ids.length - 3)), 3), { bank: 'b' });
      await expectExact(store, queries, index);
    }
    const live = store.snapshot();
    // Behind: it holds the 200 first versions, some of them deleted or updated since.
    expect(index.graphStats().banks.b!.versions).toBe(200);
    expect(live.bank('b').ids.length).toBe(200 + 8 * 11 - 8 * 3);
    await live.release();
    expect(index.graphStats().graphSearches).toBeGreaterThan(0); // the graph served, behind

    // It catches up one change at a time; every intermediate state searches exactly.
    let settled = false;
    const settling = index.graphsSettled().then(() => (settled = true));
    for (let step = 0; ; step++) {
      await Promise.race([gate.arrival(), settling]);
      if (settled) break;
      gate.releaseOne();
      if (step % 4 === 0) await expectExact(store, queries, index);
    }
    const snap = store.snapshot();
    const view = snap.bank('b');
    expect(index.graphStats().banks.b).toMatchObject({
      versions: view.ids.length,
      tokens: view.tokenOffsets[view.ids.length],
    });
    expect(index.graphStats().failures).toEqual([]);
    await snap.release();
    const before = index.graphStats().graphSearches;
    await expectExact(store, queries, index);
    expect(index.graphStats().graphSearches).toBe(before + queries.length);
    const top = await store.search({ bank: 'b', query: copies[0]!, k: 1 });
    expect(top[0]!.id).toBe('copy0');
    gate.releaseAll();
    await store.close();
  });
});
