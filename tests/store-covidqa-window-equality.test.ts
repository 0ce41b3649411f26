import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { benchmarkHash, type Benchmark } from '@bfe/core';
import { suiteTmpDir } from '@bfe/core/testing';
import { datasetLanguage, fetchDataset, loadDataset } from '@bfe/datasets';
import { encodeBenchmark, openBank, openEncoder, type BankSide } from '@bfe/encoder';
import { loadModelManifest, resolveModelDir } from '@bfe/models';
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
  searchView,
  type SearchSystem,
} from '@bfe/store';
import { readExperiment } from '../apps/runner/src/experiment/config.ts';
import { groupByCandidates, type ScoreBank } from '../apps/runner/src/score/pipeline.ts';
import { maxAbsDelta, queryOf, viewOf } from './bank-views.ts';
import { mirror, repoRoot, requireData, requireModel } from './helpers.ts';

// A store created with the window of configs/experiments/covidqa-minilm-windowed.yaml holds
// exactly the experiment's windowed bank, and ranks exactly as the experiment does.
//
// The articles: the first BFE_COVIDQA_ARTICLES (default 6) of COVID-QA's 98 by article id in
// string order, every paragraph and question of each ('all': every article). The experiment's
// bank: its encode stage (`openEncoder` with the preset's maxLength and window, then
// `encodeBenchmark`, as apps/runner's runEncodeStage runs them) over those articles, or with
// BFE_COVIDQA_BANK=DIR the bank of a `bfe run` of the preset (its encode artifact's `bank/`,
// checked to be of this dataset, model and window). The whole set once, with the experiment's
// cached bank (encoding all 5,269 paragraphs again takes about 25 minutes on 2 cores):
//   BFE_DATA_MIRROR=../shared/data BFE_COVIDQA_ARTICLES=all BFE_COVIDQA_BANK=<…>/bank \
//     node_modules/.bin/vitest run --config configs/vitest.config.ts tests/store-covidqa-window-equality.test.ts

const PRESET = join(repoRoot, 'configs/experiments/covidqa-minilm-windowed.yaml');
const ARTICLES = process.env.BFE_COVIDQA_ARTICLES ?? '6';
const BANK = process.env.BFE_COVIDQA_BANK;
const modelDir = resolveModelDir('all-minilm-l6-v2');
const hasModel = existsSync(join(modelDir, 'bfe-model.json'));

/** The first `count` articles by id (string order), or every one: their memories and queries. */
function firstArticles(benchmark: Benchmark, count: string): Benchmark {
  const ids = [...new Set(benchmark.memories.map((m) => m.bankId!))].sort();
  const kept = new Set(count === 'all' ? ids : ids.slice(0, Number(count)));
  return {
    ...benchmark,
    memories: benchmark.memories.filter((m) => kept.has(m.bankId!)),
    queries: benchmark.queries.filter((q) => kept.has(q.candidateBankIds![0]!)),
  };
}

describe.skipIf((mirror === undefined && !requireData) || (!hasModel && !requireModel))(
  'a windowed store holds and ranks COVID-QA exactly as the windowed experiment (needs BFE_DATA_MIRROR and the MiniLM model)',
  () => {
    const suiteDir = suiteTmpDir('bfe-store-window-eq-');
    let benchmark: Benchmark;
    let scorer: SparseScorer;
    let bank: ScoreBank & { memories: BankSide };
    let model: string;
    let window: { size: number; stride: number };
    let experiment: ReadonlyMap<string, Rankings>;
    /** Article → its memory rows in the experiment's bank and its queries' rows. */
    const articles = new Map<string, { rows: number[]; queries: number[] }>();
    const memoryRow = new Map<string, number>();

    beforeAll(async () => {
      const e = await readExperiment(PRESET);
      expect(e.dataset.name).toBe('covidqa');
      window = e.model.window!;
      const location = { dataDir: join(suiteDir(), 'data'), mirror };
      await fetchDataset('covidqa', location);
      const loaded = (await loadDataset('covidqa', { location })).benchmark;
      benchmark = firstArticles(loaded, ARTICLES);
      let dir: string;
      if (BANK === undefined) {
        dir = join(suiteDir(), 'bank');
        const encoder = await openEncoder(modelDir, await loadModelManifest(modelDir), {
          executionProvider: e.model.executionProvider,
          ...(e.model.maxLength === undefined ? {} : { maxLength: e.model.maxLength }),
          window,
        });
        try {
          await encodeBenchmark(benchmark, encoder, dir, {
            dtype: e.model.dtype,
            executionProvider: e.model.executionProvider,
          });
        } finally {
          await encoder.dispose();
        }
      } else dir = BANK;
      // openBank refuses a bank of another window; the hash names the dataset it encoded.
      bank = (await openBank(dir, { verifyHashes: false, window })) as ScoreBank & {
        memories: BankSide;
      };
      expect(bank.manifest.benchmarkHash).toBe(
        benchmarkHash(BANK === undefined ? benchmark : loaded),
      );
      expect(bank.manifest.maxLength).toBe(e.model.maxLength);
      model = bank.manifest.model.sha256;
      scorer = await SparseScorer.open({ spin: false });
      const groups = groupByCandidates(bank, benchmark, undefined);
      const memoryText = new Map(loaded.memories.map((m) => [m.id, m.text]));
      const ranked = await rankSystems(scorer, {
        memories: { ...bank.memories, dim: bank.dim, model },
        queries: { ...bank.queries, dim: bank.dim, model },
        groups,
        systems: SEARCH_SYSTEMS,
        k: e.scorer.k,
        alpha: e.scorer.alpha,
        top: Math.max(...groups.map((g) => g.rows.length)),
        hybrid: { weights: normalizeHybridWeights({ pooled: 1, sparse: 1, bm25: 1 }) },
        bm25: resolveBm25Options(undefined, datasetLanguage('covidqa')),
        memoryTexts: bank.memories.ids.map((id) => memoryText.get(id)!),
      });
      experiment = ranked.systems;
      const queryRow = new Map(bank.queries.ids.map((id, r) => [id, r]));
      const kept = new Set(benchmark.memories.map((m) => m.id));
      bank.memories.ids.forEach((id, r) => {
        if (!kept.has(id)) return;
        memoryRow.set(id, r);
        const a = articles.get(bank.memories.bankIds![r]!) ?? { rows: [], queries: [] };
        a.rows.push(r);
        articles.set(bank.memories.bankIds![r]!, a);
      });
      for (const q of benchmark.queries)
        articles.get(q.candidateBankIds![0]!)!.queries.push(queryRow.get(q.id)!);
    }, 3_600_000);

    afterAll(async () => {
      await scorer?.dispose();
    });

    it('through a MemoryStore with the preset’s window: every vector, id and position, every ranking', async () => {
      const e = await readExperiment(PRESET);
      const textOf = new Map(benchmark.memories.map((m) => [m.id, m.text]));
      const queryText = new Map(benchmark.queries.map((q) => [q.id, q.text]));
      const differing = new Map<SearchSystem, number>(SEARCH_SYSTEMS.map((s) => [s, 0]));
      const embedder = await openEmbedder({ model: { dir: modelDir } });
      const store = await MemoryStore.open(join(suiteDir(), 'store'), {
        embedder,
        codec: 'fp32', // the experiment's bank is fp32: equal bit for bit
        scorer,
        window,
        bm25Language: resolveBm25Options(undefined, datasetLanguage('covidqa')).language,
      });
      const figures = { articles: articles.size, memories: 0, windowed: 0, queries: 0 };
      let maxPosition = 0;
      let maxVectorDelta = 0;
      try {
        // Each article a bank, its paragraphs added in reverse order in batches of 64; the
        // first half flushed to segments, the rest left in the WAL's memtable.
        for (const half of [0, 1]) {
          for (const [name, a] of articles) {
            const rows = a.rows.slice().reverse();
            const mid = Math.ceil(rows.length / 2);
            const part = half === 0 ? rows.slice(0, mid) : rows.slice(mid);
            for (let i = 0; i < part.length; i += 64) {
              const ids = part.slice(i, i + 64).map((r) => bank.memories.ids[r]!);
              await store.add(ids.map((id) => ({ id, bank: name, text: textOf.get(id)! })));
            }
          }
          if (half === 0) await store.flush();
        }
        const snapshot = store.snapshot();
        try {
          for (const [name, a] of articles) {
            const view = snapshot.bank(name);
            const rows = view.ids.map((id) => memoryRow.get(id)!);
            const same = viewOf(name, rows, bank.memories, view.texts, bank.dim, model);
            expect(Array.from(view.tokenOffsets)).toEqual(Array.from(same.tokenOffsets));
            expect(Array.from(view.tokenIds)).toEqual(Array.from(same.tokenIds));
            expect(Array.from(view.tokenPositions)).toEqual(Array.from(same.tokenPositions));
            maxVectorDelta = Math.max(
              maxVectorDelta,
              maxAbsDelta(view.tokenVectors, same.tokenVectors),
              maxAbsDelta(view.pooled, same.pooled),
            );
            for (let m = 0; m < view.ids.length; m++) {
              const from = view.tokenOffsets[m]!;
              const to = view.tokenOffsets[m + 1]!;
              // Content tokens at positions 1…n of the untruncated input ([CLS] at 0): the
              // experiment's meaning, so a memory longer than one window reaches past it.
              const last = to > from ? view.tokenPositions[to - 1]! : 0;
              if (last + 2 > window.size) figures.windowed += 1;
              maxPosition = Math.max(maxPosition, last);
            }
            figures.memories += view.ids.length;
            for (const r of a.queries) {
              const id = bank.queries.ids[r]!;
              const text = queryText.get(id)!;
              const query = await embedder.encode([text], 'query');
              const reference = queryOf(bank.queries, r, bank.dim);
              expect(Array.from(query.tokenIds)).toEqual(Array.from(reference.tokenIds));
              maxVectorDelta = Math.max(
                maxVectorDelta,
                maxAbsDelta(query.tokenVectors, reference.tokenVectors),
                maxAbsDelta(query.pooled, reference.pooled),
              );
              for (const system of SEARCH_SYSTEMS) {
                const options = { k: rows.length, system, explain: false, queryText: text };
                const got = await searchView(view, query, options, scorer);
                const expected = experiment.get(system)!.get(id)!;
                expect(expected).toHaveLength(rows.length);
                if (got.map((x) => x.id).join('\n') !== expected.join('\n'))
                  differing.set(system, differing.get(system)! + 1);
              }
              // The store's own search (query text in, the default system), every 8th query.
              if (figures.queries++ % 8 === 0) {
                const got = await store.search({ bank: name, query: text, k: rows.length });
                expect(got.map((x) => x.id)).toEqual(experiment.get('sparse-fusion')!.get(id));
              }
            }
          }
        } finally {
          await snapshot.release();
        }
        console.log(
          `store-covidqa-window-equality: ${JSON.stringify({
            ...figures,
            maxPosition,
            maxVectorDelta,
            differing: Object.fromEntries(differing),
            k: e.scorer.k,
            alpha: e.scorer.alpha,
          })}`,
        );
        expect(figures.memories).toBe(benchmark.memories.length);
        expect(figures.queries).toBe(benchmark.queries.length);
        // The articles hold memories longer than one window (the bank's own count of them).
        expect(figures.windowed).toBeGreaterThan(0);
        if (BANK === undefined || ARTICLES === 'all')
          expect(figures.windowed).toBe(bank.manifest.window!.windowedMemories);
        expect(maxPosition).toBeGreaterThanOrEqual(window.size);
        expect(maxVectorDelta, 'largest |Δ| of a store vector from the experiment’s').toBe(0);
        for (const [system, n] of differing) expect(n, system).toBe(0);
      } finally {
        await store.close();
        await embedder.dispose();
      }
    }, 3_600_000);
  },
);
