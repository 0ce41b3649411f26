import { existsSync, readdirSync, truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { tmpDir } from '@bfe/core/testing';
import { ExactTokenIndex, flatTokenStore } from '@bfe/index';
import { rng } from '@bfe/index/testing';
import { SparseScorer } from '@bfe/scorer';
import { IvfViewIndex } from './ivf/ivf-search.js';
import { searchView } from '../search/search.js';
import { MemoryStore } from '../store.js';
import {
  storeIndexFactory,
  type StoreIndexFactory,
  type StoreIndexOptions,
} from './store-index.js';
import { fakeEmbedder } from '../testing/index.js';
import type { BankView, EncodedTexts } from '../types.js';

// The store's IVF indexes (`large: 'ivf'`) on a synthetic bank (a word-hash embedder with
// per-token noise, 32-d), the threshold lowered to 200 tokens so a few hundred memories use it.
// The reference is always the exact search of the same snapshot (`searchView` without an index).

const scorer = await SparseScorer.open({ threads: 1 });
afterAll(() => scorer.dispose());
const DIM = 32;
const embedder = fakeEmbedder(DIM, 'fake-embedder', { jitter: 0.6 });
const TOPIC_A = Array.from({ length: 150 }, (_, i) => `w${i.toString(36)}`);
const TOPIC_B = Array.from({ length: 150 }, (_, i) => `z${i.toString(36)}`);
/** 16 clusters, every one probed: the IVF path must then rank exactly as the exact search. */
const ALL_PROBED: StoreIndexOptions = {
  large: 'ivf',
  ivfMinTokens: 200,
  ivf: { centroids: 16, nprobe: 16, overFetch: 8 },
};

function texts(seed: number, n: number, words = TOPIC_A): string[] {
  const rand = rng(seed);
  return Array.from({ length: n }, () =>
    Array.from(
      { length: 4 + Math.floor(rand() * 9) },
      () => words[Math.floor(rand() * words.length)],
    ).join(' '),
  );
}

async function openStore(options: StoreIndexOptions) {
  const index = storeIndexFactory(options);
  const store = await MemoryStore.open(tmpDir(), {
    embedder,
    index,
    compactSegments: 0,
    flushBytes: 1 << 30,
  });
  return { store, index };
}

async function addTexts(store: MemoryStore, prefix: string, all: readonly string[]) {
  await store.add(all.map((text, i) => ({ id: `${prefix}${i}`, bank: 'b', text })));
}

/** A built index: memories added, a search starts the background build, settled. */
async function built(options: StoreIndexOptions, memories = 300) {
  const opened = await openStore(options);
  await addTexts(opened.store, 'a', texts(1, memories));
  await opened.store.search({ bank: 'b', query: 'w1 w2', k: 3 }); // exact; starts the build
  expect(opened.index.ivfStats()).toMatchObject({ ivfSearches: 0, exactSearches: 0 });
  await opened.index.graphsSettled();
  return opened;
}

const queriesOf = (seed: number, n: number, words = TOPIC_A) =>
  Promise.all(texts(seed, n, words).map((t) => embedder.encode([t], 'query')));
const every = (v: BankView) => Int32Array.from({ length: v.ids.length }, (_, i) => i);
const queryTokens = (q: EncodedTexts) => q.tokenVectors.subarray(0, q.tokenOffsets[1]! * DIM);

async function ivfOf(index: StoreIndexFactory, view: BankView): Promise<IvfViewIndex> {
  const got = await index(view, scorer.kernel);
  expect(got).toBeInstanceOf(IvfViewIndex);
  expect(got.backend).toBe('ivf');
  return got as IvfViewIndex;
}

/**
 * Every query searched through the bank's IVF index and exactly: the same results (ids,
 * scores, ranks) and the same per-token hits (tokens, float64 values), each search served by
 * IVF (not its exact fallback).
 */
async function expectExact(
  index: StoreIndexFactory,
  view: BankView,
  queries: readonly EncodedTexts[],
) {
  const ivf = await ivfOf(index, view);
  const exact = new ExactTokenIndex(
    {
      tokens: flatTokenStore(view.tokenVectors, DIM),
      tokenOffsets: view.tokenOffsets,
      ids: view.ids,
    },
    scorer.kernel,
  );
  const before = index.ivfStats();
  for (const q of queries) {
    const options = { k: 10, explain: false } as const;
    const got = await searchView(view, q, { ...options, index: () => ivf }, scorer);
    const want = await searchView(view, q, options, scorer);
    expect(got.map((r) => [r.id, r.score, r.sparse])).toEqual(
      want.map((r) => [r.id, r.score, r.sparse]),
    );
    const rows = q.tokenOffsets[1]!;
    const memories = every(view);
    const hits = await ivf.search(queryTokens(q), rows, 64, { memories });
    const ref = await exact.search(queryTokens(q), rows, 64, { memories });
    expect(Array.from(hits.tokens)).toEqual(Array.from(ref.tokens));
    expect(Array.from(hits.values)).toEqual(Array.from(ref.values));
  }
  const after = index.ivfStats();
  expect(after.exactSearches).toBe(before.exactSearches);
  expect(after.ivfSearches).toBe(before.ivfSearches + 2 * queries.length);
  return ivf;
}

describe("storeIndexFactory({ large: 'ivf' }): clustered indexes for large banks", () => {
  it('searches a large bank through its IVF index after the background build, as the exact search ranks', async () => {
    const { store, index } = await built(ALL_PROBED);
    const view = store.snapshot().bank('b');
    const tokens = view.tokenOffsets[view.ids.length]!;
    expect(index.ivfStats()).toMatchObject({
      builds: 1,
      failures: [],
      banks: { b: { tokens, liveTokens: tokens, versions: 300, centroids: 16, tailTokens: 0 } },
    });
    const ivf = await expectExact(index, view, await queriesOf(5, 12));
    // The proposals came from probing clusters, not from a whole-set exact scan.
    expect(ivf.bank.index.stats).toMatchObject({ wholeSet: false });
    expect(ivf.bank.index.stats!.clustersProbed).toBeGreaterThan(0);
    // The store's own searches go through it.
    const served = index.ivfStats().ivfSearches;
    const results = await store.search({ bank: 'b', query: texts(1, 1)[0]!, k: 3 });
    expect(results[0]!.id).toBe('a0');
    expect(index.ivfStats().ivfSearches).toBe(served + 1);
    await store.close();
  });

  it('scores the centroids in int8 when asked, and with every cluster probed still ranks exactly', async () => {
    const { store, index } = await built({
      ...ALL_PROBED,
      ivf: { ...ALL_PROBED.ivf, centroidProduct: 'int8' },
    });
    const view = store.snapshot().bank('b');
    const ivf = await expectExact(index, view, await queriesOf(6, 8));
    expect(ivf.bank.index.probe.centroidProduct).toBe('int8');
    await store.close();
  });

  it('probes adaptively when asked: a slack that covers every centroid probes all 16 and ranks exactly', async () => {
    const ivf = { centroids: 16, nprobe: 2, overFetch: 8, probeSlack: 5, maxProbe: 16 };
    const { store, index } = await built({ ...ALL_PROBED, ivf });
    const view = store.snapshot().bank('b');
    const got = await expectExact(index, view, await queriesOf(6, 8));
    expect(got.bank.index.probe).toMatchObject({ nprobe: 2, probeSlack: 5, maxProbe: 16 });
    await store.close();
    for (const bad of [
      { maxProbe: 16 },
      { probeSlack: 0.1, maxProbe: 8, nprobe: 16 },
      { probeSlack: -1 },
    ]) {
      expect(() => storeIndexFactory({ large: 'ivf', ivf: bad })).toThrow(/maxProbe|probeSlack/);
    }
  });

  it('finds memories added after the build through appends, without training again', async () => {
    const { store, index } = await built(ALL_PROBED);
    const stale = store.snapshot().bank('b');
    await addTexts(store, 'n', texts(7, 60));
    // Before the writes reach the index a search scores the new tokens one by one.
    await expectExact(index, store.snapshot().bank('b'), await queriesOf(8, 3));
    await index.graphsSettled();
    const view = store.snapshot().bank('b');
    const added = view.tokenOffsets[view.ids.length]! - stale.tokenOffsets[stale.ids.length]!;
    expect(index.ivfStats()).toMatchObject({
      builds: 1,
      banks: { b: { versions: 360, appendedTokens: added, tailTokens: added } },
    });
    const ivf = await expectExact(index, view, await queriesOf(9, 8));
    expect(ivf.bank.index.size).toBe(view.tokenOffsets[view.ids.length]!);
    const results = await store.search({ bank: 'b', query: texts(7, 60)[42]!, k: 3 });
    expect(results[0]!.id).toBe('n42');
    // The older snapshot is still searched as it was: later rows are never proposed.
    await expectExact(index, stale, await queriesOf(10, 4));
    await store.close();
  });

  it('never proposes deleted or superseded versions; older snapshots still see them', async () => {
    const { store, index } = await built(ALL_PROBED);
    const old = store.snapshot().bank('b');
    const gone = Array.from({ length: 40 }, (_, i) => `a${i * 7}`);
    await store.delete(gone, { bank: 'b' });
    const updated = Array.from({ length: 20 }, (_, i) => `a${i * 7 + 3}`);
    const fresh = texts(11, 20, TOPIC_B);
    await store.update(updated.map((id, i) => ({ id, bank: 'b', text: fresh[i]! })));
    await index.graphsSettled();
    const view = store.snapshot().bank('b');
    const { bank } = await ivfOf(index, view);
    expect(index.ivfStats().builds).toBe(1);
    // The index itself: no hit among the tombstoned rows, searched whole or by probing 2 clusters.
    const all = Int32Array.from({ length: bank.rows }, (_, i) => i);
    const live = new Set(bank.liveEntries().map((e) => e.row));
    expect(bank.rows - live.size).toBe(60);
    const probing = bank.index.withSearch({ nprobe: 2, threads: 1 });
    for (const text of texts(1, 300).filter((_, i) => i % 7 === 0 || i % 7 === 3)) {
      const q = await embedder.encode([text], 'query');
      const rows = q.tokenOffsets[1]!;
      for (const searched of [bank.index, probing]) {
        const hits = await searched.search(queryTokens(q), rows, 16, { memories: all });
        for (const m of hits.memories) expect(live.has(m)).toBe(true);
      }
      expect(probing.stats).toMatchObject({ wholeSet: false });
      const results = await store.search({ bank: 'b', query: text, k: 10 });
      for (const r of results) expect(gone).not.toContain(r.id);
      for (const r of results.filter((x) => updated.includes(x.id)))
        expect(r.text).toBe(fresh[updated.indexOf(r.id)]);
    }
    await expectExact(index, view, await queriesOf(15, 6));
    const hit = await store.search({ bank: 'b', query: fresh[5]!, k: 1 });
    expect(hit[0]!.id).toBe(updated[5]);
    // The snapshot from before the writes still holds the removed versions (scored one by one).
    const oldIvf = await expectExact(index, old, await queriesOf(16, 6));
    const q = await embedder.encode([texts(1, 1)[0]!], 'query'); // memory a0's text
    const oldHits = await oldIvf.search(queryTokens(q), q.tokenOffsets[1]!, 8, {
      memories: every(old),
    });
    expect(Array.from(oldHits.memories)).toContain(0); // a0, deleted since, in this snapshot
    await store.close();
  });

  it('compacts at a flush past the tombstone share, rebuilds past the dead share, re-clusters a drifted bank at store compaction', async () => {
    // A flush past `compactShare` lays the index out (no drift: same centroids).
    const a = await built(ALL_PROBED);
    await a.store.delete(
      Array.from({ length: 80 }, (_, i) => `a${i * 3}`),
      { bank: 'b' },
    );
    await a.store.flush();
    await a.index.graphsSettled();
    expect(a.index.ivfStats().banks.b).toMatchObject({ compactions: 1, reclusters: 0 });
    await expectExact(a.index, a.store.snapshot().bank('b'), await queriesOf(12, 4));
    // Updates past `rebuildDead` (dead rows > ½ of the live tokens): trained again from the
    // live rows, the old index serving until the new one caught up.
    const before = a.index.ivfStats().banks.b!;
    const rewrite = Array.from({ length: 100 }, (_, i) => `a${i * 3 + 1}`);
    const redone = texts(17, 100);
    await a.store.update(rewrite.map((id, i) => ({ id, bank: 'b', text: redone[i]! })));
    await a.store.flush();
    await a.index.graphsSettled();
    const view = a.store.snapshot().bank('b');
    const tokens = view.tokenOffsets[view.ids.length]!;
    expect(before.tokens).toBeGreaterThan(before.liveTokens);
    expect(a.index.ivfStats()).toMatchObject({
      builds: 2,
      rebuilds: 1,
      banks: { b: { tokens, liveTokens: tokens, versions: 220, tailTokens: 0 } },
    });
    await expectExact(a.index, view, await queriesOf(18, 4));
    await a.store.close();

    // Flushes never compact here (share 100): only the store's compaction does.
    // 32 clusters over 150 memories fit topic A's words closely: topic B's tokens lie far off.
    const ivf = { centroids: 32, nprobe: 32, overFetch: 8, compactShare: 100 };
    const options: StoreIndexOptions = { ...ALL_PROBED, ivf };
    for (const [words, drifted] of [
      [TOPIC_A, false],
      [TOPIC_B, true],
    ] as const) {
      const { store, index } = await built(options, 150);
      await store.flush();
      await addTexts(store, 'n', texts(13, 300, words));
      await store.flush(); // two segments: something to compact
      await index.graphsSettled();
      const before = index.ivfStats().banks.b!;
      expect(before.compactions).toBe(0);
      expect(before.drift > 1.25).toBe(drifted);
      await store.compact({ bank: 'b' });
      await index.graphsSettled();
      const after = index.ivfStats().banks.b!;
      expect(after).toMatchObject({ compactions: 1, reclusters: drifted ? 1 : 0, tailTokens: 0 });
      if (drifted) expect(after.drift).toBe(1);
      expect(index.ivfStats().builds).toBe(1);
      await expectExact(index, store.snapshot().bank('b'), await queriesOf(14, 4, words));
      await store.close();
    }
  });
});

describe('a large bank’s IVF index on disk', () => {
  it('is saved when trained and compacted, and a reopened store reads it instead of training again', async () => {
    const dir = tmpDir();
    const open = async () => {
      const index = storeIndexFactory(ALL_PROBED);
      const store = await MemoryStore.open(dir, {
        embedder,
        index,
        compactSegments: 0,
        flushBytes: 1 << 30,
      });
      return { store, index };
    };
    const first = await open();
    await addTexts(first.store, 'a', texts(1, 300));
    await first.store.search({ bank: 'b', query: 'w1 w2', k: 3 });
    await first.index.graphsSettled();
    expect(first.index.ivfStats()).toMatchObject({ builds: 1, loads: 0, saves: 1 });
    // Writes after the save: a delete and an update (tombstones), adds (tails); a flush past
    // the tombstone share compacts the index, and the compacted index is saved again.
    await first.store.delete(
      Array.from({ length: 80 }, (_, i) => `a${i * 3}`),
      { bank: 'b' },
    );
    await first.store.update([{ id: 'a1', bank: 'b', text: texts(21, 1, TOPIC_B)[0]! }]);
    await addTexts(first.store, 'n', texts(7, 40));
    await first.store.flush();
    await first.index.graphsSettled();
    expect(first.index.ivfStats()).toMatchObject({ builds: 1, saves: 2 });
    // Written after the last save: caught up from the live rows at the next open.
    await first.store.delete(['a2', 'n5'], { bank: 'b' });
    await addTexts(first.store, 'm', texts(23, 20));
    const files = readdirSync(join(dir, 'ivf')).sort();
    expect(files).toEqual([`${Buffer.from('b').toString('hex')}-000002.ivf`, '62.json']);
    await first.store.close();

    const second = await open();
    await second.store.search({ bank: 'b', query: 'w1 w2', k: 3 });
    await second.index.graphsSettled();
    expect(second.index.ivfStats()).toMatchObject({ builds: 0, loads: 1, failures: [] });
    const view = second.store.snapshot().bank('b');
    const { bank } = await ivfOf(second.index, view);
    // Every live version once, nothing deleted or superseded proposed.
    expect(bank.liveVersions).toBe(view.ids.length);
    expect(bank.liveEntry('a2')).toBeUndefined();
    expect(bank.liveEntry('a0')).toBeUndefined();
    expect(bank.liveEntry('m19')).toBeDefined();
    await expectExact(second.index, view, await queriesOf(31, 8));
    const hit = await second.store.search({ bank: 'b', query: texts(23, 20)[7]!, k: 1 });
    expect(hit[0]!.id).toBe('m7');
    await second.store.close();
  });

  it('still serves when it cannot be saved, the failure counted', async () => {
    const dir = tmpDir();
    // A file where the folder of indexes would go: every save fails.
    const index = storeIndexFactory(ALL_PROBED);
    const store = await MemoryStore.open(dir, { embedder, index, compactSegments: 0 });
    writeFileSync(join(dir, 'ivf'), 'not a folder');
    await addTexts(store, 'a', texts(1, 300));
    await store.search({ bank: 'b', query: 'w1 w2', k: 3 });
    await index.graphsSettled();
    const stats = index.ivfStats();
    expect(stats).toMatchObject({ builds: 1, saves: 0 });
    expect(stats.failures).toHaveLength(1);
    expect(stats.failures[0]).toMatch(/^b: saving the index: /);
    await expectExact(index, store.snapshot().bank('b'), await queriesOf(33, 3));
    await store.close();
  });

  it('is trained again when its file is damaged or its settings differ, and leaves no stray files', async () => {
    const dir = tmpDir();
    const open = async (options: StoreIndexOptions) => {
      const index = storeIndexFactory(options);
      const store = await MemoryStore.open(dir, { embedder, index, compactSegments: 0 });
      return { store, index };
    };
    const first = await open(ALL_PROBED);
    await addTexts(first.store, 'a', texts(1, 300));
    await first.store.search({ bank: 'b', query: 'w1 w2', k: 3 });
    await first.index.graphsSettled();
    await first.store.close();
    const ivfDir = join(dir, 'ivf');
    const [file] = readdirSync(ivfDir).filter((n) => n.endsWith('.ivf'));
    // An interrupted save's file (no meta names it) and a truncated index file.
    writeFileSync(join(ivfDir, '62-000009.ivf'), 'partial');
    truncateSync(join(ivfDir, file!), 100);
    const second = await open(ALL_PROBED);
    await second.store.search({ bank: 'b', query: 'w1 w2', k: 3 });
    await second.index.graphsSettled();
    expect(second.index.ivfStats()).toMatchObject({ builds: 1, loads: 0, saves: 1 });
    expect(existsSync(join(ivfDir, '62-000009.ivf'))).toBe(false);
    await expectExact(second.index, second.store.snapshot().bank('b'), await queriesOf(32, 4));
    await second.store.close();
    // Other centroids asked for: the saved index is not used.
    const third = await open({ ...ALL_PROBED, ivf: { ...ALL_PROBED.ivf, centroids: 8 } });
    await third.store.search({ bank: 'b', query: 'w1 w2', k: 3 });
    await third.index.graphsSettled();
    expect(third.index.ivfStats()).toMatchObject({ builds: 1, loads: 0 });
    expect(third.index.ivfStats().banks.b).toMatchObject({ centroids: 8 });
    await third.store.close();
  });
});
