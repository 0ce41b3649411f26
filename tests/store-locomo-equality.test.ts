import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Benchmark } from '@bfe/core';
import { suiteTmpDir } from '@bfe/core/testing';
import { datasetLanguage, fetchDataset, loadDataset } from '@bfe/datasets';
import { openBank, type BankSide } from '@bfe/encoder';
import { resolveModelDir } from '@bfe/models';
import {
  SparseScorer,
  normalizeHybridWeights,
  rankSystems,
  resolveBm25Options,
  type Rankings,
} from '@bfe/scorer';
import {
  MemoryStore,
  SEARCH_SYSTEMS,
  openEmbedder,
  residentIndexFactory,
  searchView,
  type SearchSystem,
} from '@bfe/store';
import { groupByCandidates, type ScoreBank } from '../apps/runner/src/score/pipeline.ts';
import { mirror, requireData, requireModel } from './helpers.ts';
import { maxAbsDelta, queryOf, viewOf } from './bank-views.ts';
import { keepingLastSearches } from './last-search.ts';
import { sharedLocomoBank } from './shared-locomo-bank.ts';

const modelDir = resolveModelDir('all-minilm-l6-v2');
const hasModel = existsSync(join(modelDir, 'bfe-model.json'));
const K = 64;
const ALPHA = 0.5;

describe.skipIf((mirror === undefined && !requireData) || (!hasModel && !requireModel))(
  'the store’s search ranks LoCoMo exactly as bfe score does (needs BFE_DATA_MIRROR and the MiniLM model)',
  () => {
    const suiteDir = suiteTmpDir('bfe-store-eq-');
    let benchmark: Benchmark;
    let scorer: SparseScorer;
    let bank: ScoreBank & { memories: BankSide };
    let model: string;
    /** The experiment's full rankings per system: query id → every memory id of its conversation. */
    let experiment: ReadonlyMap<string, Rankings>;
    /** Conversation → its memory rows in the experiment's bank and its queries' rows. */
    const conversations = new Map<string, { rows: number[]; queries: number[] }>();
    /** Memory id → its row in the experiment's bank. */
    const memoryRow = new Map<string, number>();

    beforeAll(async () => {
      const dir = suiteDir();
      const location = { dataDir: join(dir, 'data'), mirror };
      await fetchDataset('locomo', location);
      ({ benchmark } = await loadDataset('locomo', { location }));
      // Idle onnxruntime threads sleep instead of spinning: ~11,000 one-query searches follow,
      // and between them a spinning thread takes a core from the JavaScript that ranks (and from
      // the test file beside this one). The arithmetic, and so every ranking, is the same.
      scorer = await SparseScorer.open({ spin: false });
      // The experiment: `bfe encode`'s pass over the whole benchmark (the command itself, run
      // once in this vitest run and shared with tests/encode.test.ts), then `bfe score`'s
      // grouping and ranking (runScore's rankSystems call, every system, rankings uncut).
      const encoded = await sharedLocomoBank();
      expect(encoded.result.code, encoded.result.stderr).toBe(0);
      bank = (await openBank(encoded.out)) as ScoreBank & { memories: BankSide };
      model = bank.manifest.model.sha256;
      const groups = groupByCandidates(bank, benchmark, undefined);
      const memoryText = new Map(benchmark.memories.map((m) => [m.id, m.text]));
      const ranked = await rankSystems(scorer, {
        memories: { ...bank.memories, dim: bank.dim, model },
        queries: { ...bank.queries, dim: bank.dim, model },
        groups,
        systems: SEARCH_SYSTEMS,
        k: K,
        alpha: ALPHA,
        top: Math.max(...groups.map((g) => g.rows.length)),
        // hybrid as an experiment file asks for it (METHOD.md §8): the predeclared weights
        // {1, 1, 1}, BM25 over each memory's whole text in LoCoMo's language, IDF over the
        // candidates (a conversation: the store's bank).
        hybrid: { weights: normalizeHybridWeights({ pooled: 1, sparse: 1, bm25: 1 }) },
        bm25: resolveBm25Options(undefined, datasetLanguage('locomo')),
        memoryTexts: bank.memories.ids.map((id) => memoryText.get(id)!),
      });
      experiment = ranked.systems;
      const queryRow = new Map(bank.queries.ids.map((id, r) => [id, r]));
      bank.memories.ids.forEach((id, r) => memoryRow.set(id, r));
      bank.memories.bankIds!.forEach((b, r) => {
        const c = conversations.get(b) ?? { rows: [], queries: [] };
        c.rows.push(r);
        conversations.set(b, c);
      });
      for (const q of benchmark.queries) {
        conversations.get(q.candidateBankIds![0]!)!.queries.push(queryRow.get(q.id)!);
      }
    }, 1_800_000);

    afterAll(async () => {
      await scorer?.dispose();
    });

    it('has ten conversations and every query in one', () => {
      expect(conversations.size).toBe(10);
      const queries = [...conversations.values()].reduce((s, c) => s + c.queries.length, 0);
      expect(queries).toBe(benchmark.queries.length);
      expect(benchmark.queries.every((q) => q.candidateBankIds?.length === 1)).toBe(true);
    });

    it('through a MemoryStore: every query, every system, the full ranking', async () => {
      const textOf = new Map(benchmark.memories.map((m) => [m.id, m.text]));
      const queryText = new Map(benchmark.queries.map((q) => [q.id, q.text]));
      const stats = new Map<SearchSystem, { differing: number }>(
        SEARCH_SYSTEMS.map((s) => [s, { differing: 0 }]),
      );
      const embedder = await openEmbedder({ model: { dir: modelDir } });
      const store = await MemoryStore.open(join(suiteDir(), 'store'), {
        embedder,
        codec: 'fp32', // the experiment's bank is fp32: equal bit for bit
        scorer,
        bm25Language: 'english',
      });
      try {
        // Each conversation a bank, its memories added out of bank order (a store's row order
        // must not matter) in batches of 64; the first half of the reversed rows flushed to
        // segments, the rest left in the memtable (the WAL), so views read both. Within a half,
        // longest first (the bank's token counts; ties in reverse order): a batch holds texts of
        // like length, so the store's encoder pads little (a pass over 64 texts of every length
        // costs it ~1.3× as much).
        const tokens = (r: number): number =>
          bank.memories.tokenOffsets[r + 1]! - bank.memories.tokenOffsets[r]!;
        for (const half of [0, 1]) {
          for (const [name, c] of conversations) {
            const rows = c.rows.slice().reverse();
            const mid = Math.ceil(rows.length / 2);
            const part = (half === 0 ? rows.slice(0, mid) : rows.slice(mid)).sort(
              (a, b) => tokens(b) - tokens(a),
            );
            for (let i = 0; i < part.length; i += 64) {
              await store.add(
                part.slice(i, i + 64).map((r) => {
                  const id = bank.memories.ids[r]!;
                  return { id, bank: name, text: textOf.get(id)! };
                }),
              );
            }
          }
          if (half === 0) await store.flush();
          // hybrid's BM25 postings are kept from the first half on: the second half updates them.
          for (const name of half === 0 ? conversations.keys() : []) {
            await store.search({ bank: name, query: 'a', system: 'hybrid', explain: false });
          }
        }
        let maxVectorDelta = 0;
        let queries = 0;
        let storeSearches = 0;
        // Each view's 7 × queries searches share one resident session (the store's index for a
        // bank this size), packed once instead of per call; resident and per-call exact search
        // rank and score alike (packages/store/src/index/resident-index.test.ts), and the first
        // searches of each view run before the session is ready. A query's seven systems ask it
        // two distinct token searches; each is run once (tests/last-search.ts).
        const resident = residentIndexFactory();
        const index = keepingLastSearches(resident);
        const snapshot = store.snapshot();
        try {
          for (const [name, c] of conversations) {
            const view = snapshot.bank(name);
            const rows = view.ids.map((id) => memoryRow.get(id)!);
            // The experiment's vectors of the same memories in the view's order.
            const same = viewOf(name, rows, bank.memories, view.texts, bank.dim, model);
            expect(Array.from(view.tokenOffsets)).toEqual(Array.from(same.tokenOffsets));
            expect(Array.from(view.tokenIds)).toEqual(Array.from(same.tokenIds));
            maxVectorDelta = Math.max(
              maxVectorDelta,
              maxAbsDelta(view.tokenVectors, same.tokenVectors),
              maxAbsDelta(view.pooled, same.pooled),
            );
            for (const r of c.queries) {
              const id = bank.queries.ids[r]!;
              const text = queryText.get(id)!;
              const query = await embedder.encode([text], 'query');
              const reference = queryOf(bank.queries, r, bank.dim);
              maxVectorDelta = Math.max(
                maxVectorDelta,
                maxAbsDelta(query.tokenVectors, reference.tokenVectors),
                maxAbsDelta(query.pooled, reference.pooled),
              );
              queries += 1;
              for (const system of SEARCH_SYSTEMS) {
                const options = { k: rows.length, system, explain: false, queryText: text, index };
                const got = await searchView(view, query, options, scorer);
                const expected = experiment.get(system)!.get(id)!;
                expect(expected).toHaveLength(rows.length);
                const s = stats.get(system)!;
                if (got.map((x) => x.id).join('\n') !== expected.join('\n')) s.differing += 1;
              }
              // And the store's own search (query text in, default system), every 8th query.
              if (queries % 8 === 1) {
                const got = await store.search({
                  bank: name,
                  query: queryText.get(id)!,
                  k: rows.length,
                  explain: false,
                });
                storeSearches += 1;
                expect(got.map((x) => x.id)).toEqual(experiment.get('sparse-fusion')!.get(id));
              }
            }
          }
        } finally {
          await snapshot.release();
          await resident.dispose();
        }
        const figures = {
          queries,
          storeSearches,
          maxVectorDelta,
          systems: Object.fromEntries(stats),
        };
        // The figures go to the result notes; the claims are the equality of the vectors (bit
        // for bit: packages/store/README.md) and of the rankings.
        console.log(`store-locomo-equality: ${JSON.stringify(figures)}`);
        expect(queries).toBe(benchmark.queries.length);
        expect(maxVectorDelta, 'largest |Δ| of a store vector from the experiment’s').toBe(0);
        for (const [system, s] of stats) expect(s.differing, system).toBe(0);
        // Every hybrid search read the kept postings, none built again for a view.
        expect(store.lexicalStats()).toMatchObject({ built: 10, fromView: 0 });
      } finally {
        await store.close();
        await embedder.dispose();
      }
    }, 1_800_000);
  },
);

describe('maxAbsDelta: the vector equality asserted above', () => {
  const a = Float32Array.from({ length: 384 * 7 }, (_, i) => Math.sin(i * 0.37) / 19.6);
  const perturbed = (at: number, value: (x: number) => number) => {
    const b = a.slice();
    b[at] = value(b[at]!);
    return b;
  };

  it('is 0 for a copy, and not 0 when one float of one vector differs by one ulp', () => {
    expect(maxAbsDelta(a, a.slice())).toBe(0);
    const oneUlp = perturbed(384 * 3 + 5, (x) => {
      const bits = new Uint32Array(Float32Array.of(x).buffer);
      bits[0]! += 1;
      return new Float32Array(bits.buffer)[0]!;
    });
    expect(oneUlp[384 * 3 + 5]).not.toBe(a[384 * 3 + 5]);
    expect(maxAbsDelta(a, oneUlp)).toBeGreaterThan(0);
    expect(maxAbsDelta(a, oneUlp)).toBeLessThan(1e-8);
    // The same assertion the LoCoMo suite makes fails on the perturbed vector.
    expect(() => expect(maxAbsDelta(a, oneUlp)).toBe(0)).toThrow(/to be \+0/);
  });

  it('counts −0 against +0 and NaN as differences', () => {
    const zero = Float32Array.of(0, 1);
    expect(maxAbsDelta(zero, Float32Array.of(-0, 1))).toBe(Infinity);
    expect(maxAbsDelta(zero, Float32Array.of(0, Number.NaN))).toBe(Infinity);
  });
});
