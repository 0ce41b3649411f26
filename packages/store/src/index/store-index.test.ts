import { cpSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { tmpDir } from '@bfe/core/testing';
import { ExactTokenIndex, flatTokenStore, type TokenHits } from '@bfe/index';
import { rng } from '@bfe/index/testing';
import { SparseScorer } from '@bfe/scorer';
import { BankGraph } from './graph/bank-graph.js';
import { GRAPHS_DIR } from './graph/graph-files.js';
import { GraphTokenIndex } from './graph/graph-search.js';
import { searchView } from '../search/search.js';
import { MemoryStore } from '../store.js';
import { storeIndexFactory, type StoreIndexOptions } from './store-index.js';
import { fakeEmbedder } from '../testing/index.js';
import type { BankView, EncodedTexts } from '../types.js';

// The store's HNSW graphs on a synthetic bank (a word-hash embedder with per-token noise, 32-d),
// with the graph threshold lowered to 200 tokens so a few hundred memories exercise it.

const scorer = await SparseScorer.open({ threads: 1 });
afterAll(() => scorer.dispose());
const DIM = 32;
const embedder = fakeEmbedder(DIM, 'fake-embedder', { jitter: 0.6 });
const WORDS = Array.from({ length: 300 }, (_, i) => `w${i.toString(36)}`);
const GRAPH: StoreIndexOptions = { hnswMinTokens: 200 };

function texts(seed: number, n: number): string[] {
  const rand = rng(seed);
  return Array.from({ length: n }, () =>
    Array.from({ length: 4 + Math.floor(rand() * 9) }, () => WORDS[Math.floor(rand() * 300)]).join(
      ' ',
    ),
  );
}

async function openStore(dir: string, options: StoreIndexOptions = GRAPH) {
  const index = storeIndexFactory(options);
  const store = await MemoryStore.open(dir, {
    embedder,
    index,
    compactSegments: 0,
    flushBytes: 64 * 1024,
  });
  return { store, index };
}

const every = (v: BankView) => Int32Array.from({ length: v.ids.length }, (_, i) => i);
const exactOf = (v: BankView) =>
  new ExactTokenIndex(
    { tokens: flatTokenStore(v.tokenVectors, DIM), tokenOffsets: v.tokenOffsets, ids: v.ids },
    scorer.kernel,
  );

function tokenRecall(got: TokenHits, want: TokenHits): number {
  let hit = 0;
  for (let r = 0; r < want.rows; r++) {
    const mine = new Set(got.tokens.subarray(r * got.k, (r + 1) * got.k));
    for (let h = 0; h < want.k; h++) if (mine.has(want.tokens[r * want.k + h]!)) hit++;
  }
  return hit / want.tokens.length;
}

const queryTokens = (q: EncodedTexts) => q.tokenVectors.subarray(0, q.tokenOffsets[1]! * DIM);

/** Mean share of exact's top 10 memories that the graph's search also returns. */
async function memoryAgreement(view: BankView, queries: EncodedTexts[], graph: GraphTokenIndex) {
  let sum = 0;
  for (const q of queries) {
    const got = await searchView(view, q, { k: 10, explain: false, index: () => graph }, scorer);
    const want = await searchView(view, q, { k: 10, explain: false }, scorer);
    const mine = new Set(got.map((r) => r.id));
    sum += want.filter((r) => mine.has(r.id)).length / want.length;
  }
  return sum / queries.length;
}

/** Adds 400 memories in batches of 20 with updates and deletes between them. */
async function churn(store: MemoryStore, seed: number, prefix = 'm', bank = 'b'): Promise<void> {
  const all = texts(seed, 400);
  const rand = rng(seed + 1);
  const ids: string[] = [];
  for (let b = 0; b < 20; b++) {
    const batch = all.slice(b * 20, b * 20 + 20).map((text, i) => ({
      id: `${prefix}${b * 20 + i}`,
      bank,
      text,
    }));
    await store.add(batch);
    ids.push(...batch.map((m) => m.id));
    if (b % 3 === 2) {
      const upd = [
        ...new Set(Array.from({ length: 5 }, () => ids[Math.floor(rand() * ids.length)]!)),
      ];
      await store.update(upd.map((id, i) => ({ id, bank, text: texts(seed + b * 7 + i, 1)[0]! })));
      const gone = ids.splice(Math.floor(rand() * (ids.length - 5)), 4);
      await store.delete(gone, { bank });
    }
  }
}

describe('storeIndexFactory: HNSW graphs for large banks', () => {
  it('maintains a graph through adds, updates and deletes that matches a fresh build and the exact search', async () => {
    const { store, index } = await openStore(tmpDir());
    await store.add(texts(1, 60).map((text, i) => ({ id: `first${i}`, bank: 'b', text })));
    await store.search({ bank: 'b', query: 'w1 w2', k: 3 }); // starts the build
    await index.graphsSettled();
    const built = index.graphStats().toppedUpTokens;
    expect(built).toBeGreaterThan(200);
    await churn(store, 2);
    await index.graphsSettled(); // writes reach the graph after their acknowledgement
    const snap = store.snapshot();
    const view = snap.bank('b');
    const tokens = view.tokenOffsets[view.ids.length]!;
    // Writes were applied to the graph one by one: no rebuild, no top-up since the build.
    expect(index.graphStats()).toMatchObject({
      banks: { b: { versions: view.ids.length, tokens } },
      toppedUpTokens: built,
      failures: [],
    });
    const queries = await Promise.all(texts(3, 20).map((t) => embedder.encode([t], 'query')));
    const maintained = (await index(view, scorer.kernel)) as GraphTokenIndex;
    expect(maintained).toBeInstanceOf(GraphTokenIndex);
    const fresh = await BankGraph.create('b', DIM, maintained.graph.params);
    await fresh.addRows({ ...view, seqs: view.seqs! }, 0, view.ids.length);
    const freshIndex = new GraphTokenIndex(view, fresh, exactOf(view), {
      maxMissing: 0,
      maxForeign: 0,
    });
    let recallMaintained = 0;
    let recallFresh = 0;
    for (const q of queries) {
      const qt = queryTokens(q);
      const rows = q.tokenOffsets[1]!;
      const want = await exactOf(view).search(qt, rows, 64, { memories: every(view) });
      recallMaintained += tokenRecall(
        await maintained.search(qt, rows, 64, { memories: every(view) }),
        want,
      );
      recallFresh += tokenRecall(
        await freshIndex.search(qt, rows, 64, { memories: every(view) }),
        want,
      );
    }
    recallMaintained /= queries.length;
    recallFresh /= queries.length;
    expect(recallMaintained).toBeGreaterThanOrEqual(0.95);
    expect(recallMaintained).toBeGreaterThanOrEqual(recallFresh - 0.02);
    expect(await memoryAgreement(view, queries, maintained)).toBeGreaterThanOrEqual(0.9);
    // The store's own search goes through the graph.
    const before = index.graphStats().graphSearches;
    await store.search({ bank: 'b', query: 'w3 w4 w5', k: 5 });
    expect(index.graphStats().graphSearches).toBe(before + 1);
    fresh.dispose();
    await snap.release();
    await store.close();
  });

  it('gives each snapshot exactly its own memories while writes change the graph', async () => {
    const { store, index } = await openStore(tmpDir());
    const base = texts(10, 300);
    await store.add(base.map((text, i) => ({ id: `m${i}`, bank: 'b', text })));
    await store.search({ bank: 'b', query: 'w1', k: 1 });
    await index.graphsSettled();
    const snap = store.snapshot();
    const old = snap.bank('b');
    const gone = old.ids.slice(0, 20);
    const changed = old.ids.slice(20, 40);
    const probes = [...gone.slice(0, 5), ...changed.slice(0, 5)].map((id) => old.ids.indexOf(id));
    const queries = await Promise.all(probes.map((r) => embedder.encode([old.texts[r]!], 'query')));
    const newcomers = texts(11, 5);
    const search = (v: BankView, q: EncodedTexts) => searchView(v, q, { k: 5, index }, scorer);
    // Writes and searches of the old snapshot interleave.
    const writes = (async () => {
      await store.delete(gone, { bank: 'b' });
      await store.update(changed.map((id, i) => ({ id, bank: 'b', text: texts(20 + i, 1)[0]! })));
      // Copies of the probes' texts under new ids: they would rank first if they leaked in.
      await store.add(probes.map((r, i) => ({ id: `copy${i}`, bank: 'b', text: old.texts[r]! })));
      await store.add(newcomers.map((text, i) => ({ id: `new${i}`, bank: 'b', text })));
    })();
    const during = Promise.all(queries.map((q) => search(old, q)));
    await writes;
    const after = await Promise.all(queries.map((q) => search(old, q)));
    for (const results of [await during, after])
      results.forEach((res, i) => {
        const r = probes[i]!;
        expect(res[0]!.id).toBe(old.ids[r]); // the probe itself, as the snapshot holds it
        expect(res[0]!.text).toBe(old.texts[r]);
        for (const x of res) expect(old.ids).toContain(x.id);
      });
    // Every one of them through the graph (removed and foreign versions reconciled), none exact.
    expect(index.graphStats()).toMatchObject({ graphSearches: 20, exactSearches: 0 });
    // The current state sees the writes: no deleted memory, the copies present.
    const now = store.snapshot();
    const current = now.bank('b');
    for (const [i, q] of queries.entries()) {
      const res = await search(current, q);
      for (const x of res) expect(gone).not.toContain(x.id);
      const probe = old.ids[probes[i]!]!;
      expect(res.map((x) => x.id)).toContain(`copy${i}`);
      if (gone.includes(probe)) expect(res[0]!.id).toBe(`copy${i}`);
    }
    await index.graphsSettled(); // the graph catches up with the writes
    expect(index.graphStats().banks.b!.versions).toBe(current.ids.length);
    await now.release();
    await snap.release();
    await store.close();
  });

  it('reopens with the saved graph, tops up only what it lacks, and survives compaction', async () => {
    const dir = tmpDir();
    let { store, index } = await openStore(dir);
    await store.add(texts(30, 200).map((text, i) => ({ id: `m${i}`, bank: 'b', text })));
    await store.search({ bank: 'b', query: 'w1', k: 1 });
    await index.graphsSettled();
    await churn(store, 31, 'c');
    await store.flush();
    await store.compact();
    await index.graphsSettled(); // the graph has applied every write (the same graph below)
    const q = await embedder.encode(['w5 w6 w7 w8'], 'query');
    const snap = store.snapshot();
    const before = await searchView(snap.bank('b'), q, { k: 10, index }, scorer);
    await snap.release();
    await store.close();
    const saved = readdirSync(join(dir, GRAPHS_DIR)).sort();
    expect(saved).toHaveLength(2); // one meta, one usearch file: older generations are gone
    const keep = saved.map((f) => [f, readFileSync(join(dir, GRAPHS_DIR, f))] as const);

    ({ store, index } = await openStore(dir));
    await index.graphsSettled();
    expect(index.graphStats()).toMatchObject({ opened: { b: 'loaded' }, toppedUpTokens: 0 });
    const again = store.snapshot();
    const after = await searchView(again.bank('b'), q, { k: 10, index }, scorer);
    expect(after).toEqual(before); // the same graph: the same proposals, the same ranking
    await again.release();
    // More writes, then the older graph files come back (as after a crash before a save).
    await store.add(texts(32, 30).map((text, i) => ({ id: `late${i}`, bank: 'b', text })));
    await store.delete(['m1', 'late0'], { bank: 'b' });
    await store.close();
    rmSync(join(dir, GRAPHS_DIR), { recursive: true });
    mkdirSync(join(dir, GRAPHS_DIR));
    for (const [f, bytes] of keep) writeFileSync(join(dir, GRAPHS_DIR, f), bytes);
    ({ store, index } = await openStore(dir));
    await index.graphsSettled();
    const late = await embedder.encode(texts(32, 30).slice(1), 'passage');
    const stats = index.graphStats();
    expect(stats.opened).toEqual({ b: 'loaded' });
    expect(stats.toppedUpTokens).toBe(late.tokenOffsets[29]);
    const s3 = store.snapshot();
    expect(stats.banks.b!.versions).toBe(s3.bank('b').ids.length);
    await s3.release();
    await store.close();
  });

  it('rebuilds a graph whose files do not match: changed bytes, other settings, another store', async () => {
    const dir = tmpDir();
    let { store, index } = await openStore(dir);
    await store.add(texts(40, 150).map((text, i) => ({ id: `m${i}`, bank: 'b', text })));
    await store.search({ bank: 'b', query: 'w1', k: 1 });
    await index.graphsSettled();
    await store.close();
    const file = readdirSync(join(dir, GRAPHS_DIR)).find((f) => f.endsWith('.usearch'))!;
    const path = join(dir, GRAPHS_DIR, file);
    const bytes = readFileSync(path);
    const at = Math.floor(bytes.length / 2);
    bytes[at] = bytes[at]! ^ 0xff;
    writeFileSync(path, bytes);
    const reopen = async (options: StoreIndexOptions) => {
      ({ store, index } = await openStore(dir, options));
      await index.graphsSettled();
      const opened = index.graphStats().opened.b;
      const snap = store.snapshot();
      expect(index.graphStats().banks.b!.versions).toBe(snap.bank('b').ids.length);
      await snap.release();
      await store.close();
      return opened;
    };
    expect(await reopen(GRAPH)).toBe('built (graph file checksum differs)');
    expect(await reopen(GRAPH)).toBe('loaded');
    expect(await reopen({ ...GRAPH, hnsw: { efConstruction: 64 } })).toBe(
      'built (settings differ)',
    );
    expect(await reopen(GRAPH)).toBe('built (settings differ)');
    // Another store's graph under the same bank name: its versions are not these.
    const other = tmpDir();
    ({ store, index } = await openStore(other));
    await store.add(texts(41, 150).map((text, i) => ({ id: `m${i}`, bank: 'b', text })));
    await store.close();
    rmSync(join(other, GRAPHS_DIR), { recursive: true, force: true });
    cpSync(join(dir, GRAPHS_DIR), join(other, GRAPHS_DIR), { recursive: true });
    ({ store, index } = await openStore(other));
    await index.graphsSettled();
    expect(index.graphStats().opened.b).toBe('built (mostly stale)');
    await store.close();
  });

  it('rebuilds a graph that removed many tokens from the live rows; an older reading runs exactly', async () => {
    const index = storeIndexFactory({ ...GRAPH, compactRemoved: 0.3 });
    // No flush before the one below (a flush is when a graph is checked for removed tokens).
    const store = await MemoryStore.open(tmpDir(), { embedder, index, flushBytes: 2 ** 30 });
    await store.add(texts(60, 150).map((text, i) => ({ id: `m${i}`, bank: 'b', text })));
    await store.search({ bank: 'b', query: 'w1 w2', k: 3 }); // starts the build
    await index.graphsSettled();
    const early = store.snapshot();
    const earlyIndex = (await index(early.bank('b'), scorer.kernel)) as GraphTokenIndex;
    expect(earlyIndex).toBeInstanceOf(GraphTokenIndex);
    const updates = texts(61, 100).map((text, i) => ({ id: `m${i}`, bank: 'b', text }));
    for (let i = 0; i < 100; i += 10) await store.update(updates.slice(i, i + 10));
    await index.graphsSettled();
    const removed = index.graphStats().banks.b!.removed;
    expect(removed).toBeGreaterThan(0.3 * index.graphStats().banks.b!.tokens);
    expect(index.graphStats().compactions).toBe(0);
    await store.flush(); // a flush starts the rebuild
    await index.graphsSettled();
    const snap = store.snapshot();
    const view = snap.bank('b');
    const tokens = view.tokenOffsets[view.ids.length]!;
    expect(index.graphStats()).toMatchObject({
      banks: { b: { versions: view.ids.length, tokens, removed: 0 } },
      compactions: 1,
      failures: [],
    });
    const queries = await Promise.all(texts(62, 20).map((t) => embedder.encode([t], 'query')));
    const rebuilt = (await index(view, scorer.kernel)) as GraphTokenIndex;
    expect(rebuilt.graph).not.toBe(earlyIndex.graph);
    let recall = 0;
    for (const q of queries) {
      const rows = q.tokenOffsets[1]!;
      const options = { memories: every(view) };
      const want = await exactOf(view).search(queryTokens(q), rows, 64, options);
      recall += tokenRecall(await rebuilt.search(queryTokens(q), rows, 64, options), want);
    }
    expect(recall / queries.length).toBeGreaterThanOrEqual(0.95);
    expect(await memoryAgreement(view, queries, rebuilt)).toBeGreaterThanOrEqual(0.9);
    // The index made for the older snapshot held the replaced graph: it searches exactly now.
    const old = early.bank('b');
    const q = queries[0]!;
    const exactBefore = index.graphStats().exactSearches;
    const got = await earlyIndex.search(queryTokens(q), q.tokenOffsets[1]!, 10, {
      memories: every(old),
    });
    const want = await exactOf(old).search(queryTokens(q), q.tokenOffsets[1]!, 10, {
      memories: every(old),
    });
    expect(index.graphStats().exactSearches).toBe(exactBefore + 1);
    expect(Array.from(got.tokens)).toEqual(Array.from(want.tokens));
    await early.release();
    await snap.release();
    await store.close();
  });

  it('keeps small banks and the exact policy on the exact search, with identical results', async () => {
    const dirs = [tmpDir(), tmpDir()];
    const a = await openStore(dirs[0]!, {}); // default threshold: 65,536 tokens
    const b = await openStore(dirs[1]!, { exact: true, hnswMinTokens: 0 });
    for (const { store } of [a, b])
      await store.add(texts(50, 300).map((text, i) => ({ id: `m${i}`, bank: 'b', text })));
    for (const query of texts(51, 5)) {
      const ra = await a.store.search({ bank: 'b', query, k: 10 });
      const rb = await b.store.search({ bank: 'b', query, k: 10 });
      expect(ra).toEqual(rb);
    }
    // A factory serves one open store at a time; after it closes, another may attach.
    const third = tmpDir();
    await expect(MemoryStore.open(third, { embedder, index: a.index })).rejects.toThrow(
      /still open/,
    );
    for (const { store, index } of [a, b]) {
      await index.graphsSettled();
      expect(index.graphStats()).toMatchObject({ banks: {}, graphSearches: 0, exactSearches: 0 });
      await store.close();
    }
    expect(readdirSync(dirs[1]!)).not.toContain(GRAPHS_DIR);
    const reattached = await MemoryStore.open(third, { embedder, index: a.index });
    await reattached.close();
  });
});
