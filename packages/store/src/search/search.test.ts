import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError } from '@bfe/core';
import { suiteTmpDir } from '@bfe/core/testing';
import { randomBank, rng } from '@bfe/index/testing';
import { milvusLiteForTests, startMilvusLite, type MilvusLite } from '@bfe/index-milvus/testing';
import { SparseScorer, groupByCandidates, normalizeHybridWeights, rankSystems } from '@bfe/scorer';
import { milvusIndexFactory, type MilvusIndexFactory } from '../index/milvus-index.js';
import { renderEvidence } from './render.js';
import {
  SEARCH_SYSTEMS,
  parseSearchOptions,
  searchView as search,
  type SearchOptions,
  type SearchResult,
} from './search.js';
import type { BankView, EncodedTexts } from '../types.js';

const scorer = await SparseScorer.open({ kernel: 'js' });
afterAll(() => scorer.dispose());

// The same searches through the default (exact) path and through Milvus Lite (FLAT): results
// must be identical. Milvus runs when its venv can be set up (always in CI).
const python = await milvusLiteForTests();
const INDEXES = python === undefined ? (['exact'] as const) : (['exact', 'milvus'] as const);

const DIM = 12;
/** The memories' words (texts of 1–8 of them, seeded) and the query's text, for BM25. */
const WORDS = ['grey', 'cat', 'sofa', 'marathon', 'autumn', 'nurse', 'porto', 'lisbon', 'bob'];
const QUERY_TEXT = 'grey cat on the grey sofa in porto';
/** The experiments' predeclared hybrid weights, `{1, 1, 1}` scaled onto the simplex. */
const THIRDS = normalizeHybridWeights({ pooled: 1, sparse: 1, bm25: 1 });

function view(seed: number, rows: number): BankView {
  const random = rng(seed);
  const bank = randomBank(rows, 8, DIM, random, 1);
  const tokens = bank.tokenOffsets[rows]!;
  return {
    bank: 'b',
    model: 'test-model',
    dim: DIM,
    ids: Array.from({ length: rows }, (_, i) => `m${i}`),
    texts: Array.from({ length: rows }, () =>
      Array.from(
        { length: 1 + Math.floor(random() * 8) },
        () => WORDS[Math.floor(random() * 9)],
      ).join(' '),
    ),
    metas: Array.from({ length: rows }, (_, i) => (i % 2 === 0 ? { i } : undefined)),
    pooled: bank.pooled,
    tokenOffsets: bank.tokenOffsets,
    tokenVectors: bank.tokenVectors,
    tokenIds: Int32Array.from({ length: tokens }, (_, t) => 1000 + (t % 50)),
    tokenPositions: Int32Array.from({ length: tokens }, (_, t) => 1 + (t % 8)),
    // As a store's view: one write per memory (unique per seed, so views never share writes).
    seqs: Float64Array.from({ length: rows }, (_, i) => seed * 1000 + i),
    version: seed * 1000 + rows,
  };
}

function query(seed: number, tokens: number): EncodedTexts {
  const random = rng(seed);
  const bank = randomBank(1, tokens, DIM, random, tokens);
  return {
    count: 1,
    dim: DIM,
    pooled: bank.pooled,
    tokenOffsets: bank.tokenOffsets,
    tokenVectors: bank.tokenVectors,
    tokenIds: Int32Array.from({ length: tokens }, (_, t) => 2000 + t),
    tokenPositions: Int32Array.from({ length: tokens }, (_, t) => 1 + t),
    truncated: new Uint8Array(1),
  };
}

const tokenText = (id: number): string => `tok${id}`;

describe.each(INDEXES)('searchView (index: %s)', (backend) => {
  const dataDir = suiteTmpDir('bfe-store-milvus-');
  let lite: MilvusLite | undefined;
  let index: MilvusIndexFactory | undefined;
  beforeAll(async () => {
    if (backend !== 'milvus') return;
    lite = await startMilvusLite({ dataDir: dataDir(), python: python! });
    index = milvusIndexFactory({ address: lite.address, collection: 'search_test' });
  });
  afterAll(async () => {
    await index?.dispose();
    await lite?.stop();
  });
  /** `searchView` through the backend under test. */
  const searchView = (
    view: BankView,
    query: EncodedTexts,
    options: SearchOptions,
    s: SparseScorer,
  ): Promise<SearchResult[]> =>
    search(
      view,
      query,
      { queryText: QUERY_TEXT, ...options, ...(index === undefined ? {} : { index }) },
      s,
    );

  const v = view(1, 40);
  const q = query(2, 5);

  it('ranks every system exactly as the experiment’s rankSystems does', async () => {
    const memories = { ...v, ids: v.ids };
    const queries = { ...q, ids: ['query'] };
    const groups = groupByCandidates({ ids: v.ids }, [
      { id: 'query', candidateIds: v.ids, text: QUERY_TEXT },
    ]);
    for (const tokenK of [3, 64]) {
      const ranked = await rankSystems(scorer, {
        memories,
        queries,
        groups,
        systems: SEARCH_SYSTEMS,
        k: tokenK,
        alpha: 0.5,
        top: v.ids.length,
        memoryTexts: v.texts,
        hybrid: { weights: THIRDS },
      });
      for (const system of SEARCH_SYSTEMS) {
        const results = await searchView(v, q, { k: 40, system, tokenK, tokenText }, scorer);
        expect(
          results.map((r) => r.id),
          `${system} at token k ${tokenK}`,
        ).toEqual(ranked.systems.get(system)!.get('query'));
        expect(results.map((r) => r.rank)).toEqual(results.map((_, i) => i + 1));
      }
    }
    // Milvus: the view was written once, then every search read it there (none fell back).
    if (index !== undefined) {
      const counts = { syncs: 1, rows: v.tokenOffsets[40], deletes: 0, fallbacks: 0 };
      expect(index.counts()).toEqual(counts);
    }
  });

  it('gives each result its pooled rank over the whole bank, beyond the top 1000 and through ties', async () => {
    const big = view(3, 1200);
    const pooled = big.pooled.slice();
    // Ties: rows 0–99 share row 100's pooled vector, so the tie order decides among them.
    for (let r = 0; r < 100; r++) pooled.copyWithin(r * DIM, 100 * DIM, 101 * DIM);
    const tied = { ...big, pooled };
    const byPooled = await searchView(
      tied,
      q,
      { k: 1200, system: 'pooled', explain: false },
      scorer,
    );
    const pooledRank = new Map(byPooled.map((r) => [r.id, r.rank]));
    expect(byPooled.every((r) => r.pooledRank === r.rank)).toBe(true);
    for (const system of SEARCH_SYSTEMS) {
      const all = await searchView(tied, q, { k: 1200, system, explain: false }, scorer);
      expect(
        all.map((r) => r.pooledRank),
        system,
      ).toEqual(all.map((r) => pooledRank.get(r.id)));
      const top = await searchView(tied, q, { k: 5, system, tokenK: 3 }, scorer);
      expect(
        top.map((r) => r.pooledRank),
        system,
      ).toEqual(top.map((r) => pooledRank.get(r.id)));
    }
    // Deep ranks are reported, not capped.
    expect(Math.max(...byPooled.map((r) => r.pooledRank))).toBe(1200);
  });

  it('explains each result with terms that sum to its sparse score and parts to its score', async () => {
    let floored = 0;
    for (const system of SEARCH_SYSTEMS) {
      const results = await searchView(v, q, { k: 40, system, tokenK: 4, tokenText }, scorer);
      for (const r of results) {
        const e = r.evidence!;
        expect(e.system).toBe(system);
        expect(e.bm25 === undefined).toBe(system !== 'hybrid');
        // hybrid's parts are summed in fuseHybrid's order: its score exactly.
        if (e.bm25 !== undefined) expect(e.pooledPart + e.sparsePart + e.bm25.part).toBe(r.score);
        else expect(Math.abs(e.pooledPart + e.sparsePart - r.score)).toBeLessThanOrEqual(1e-12);
        if (system === 'pooled') {
          expect(e.tokens).toEqual([]);
          expect(r.score).toBe(r.pooled);
          continue;
        }
        const sum = e.tokens.reduce((s, t) => s + t.contribution, 0);
        expect(Math.abs(sum - r.sparse)).toBeLessThanOrEqual(1e-12);
        for (const t of e.tokens) {
          expect(t.queryPiece).toBe(`tok${2000 + t.queryToken}`);
          if (t.floored) {
            floored += 1;
            expect(t.memoryPiece).toBeUndefined();
          } else expect(t.memoryPiece).toMatch(/^tok10\d\d$/);
        }
      }
    }
    expect(floored).toBeGreaterThan(0);
  });

  it('returns the top k with texts and metas, and no evidence when not asked', async () => {
    const results = await searchView(v, q, { k: 3, explain: false }, scorer);
    expect(results).toHaveLength(3);
    for (const r of results) {
      const row = v.ids.indexOf(r.id);
      expect(r.text).toBe(v.texts[row]);
      expect(r.meta).toEqual(v.metas[row]);
      expect(r.evidence).toBeUndefined();
    }
    expect(await searchView({ ...v, ids: [], texts: [], metas: [] }, q, {}, scorer)).toEqual([]);
  });

  it('ranks a query without content tokens by its pooled score, for every system', async () => {
    const empty: EncodedTexts = {
      ...q,
      tokenOffsets: Int32Array.of(0, 0),
      tokenVectors: new Float32Array(0),
      tokenIds: new Int32Array(0),
      tokenPositions: new Int32Array(0),
    };
    const pooled = await searchView(v, empty, { k: 40, system: 'pooled' }, scorer);
    // Except hybrid, whose BM25 branch still reads the query's text (checked below).
    for (const system of SEARCH_SYSTEMS.filter((x) => x !== 'hybrid')) {
      const results = await searchView(v, empty, { k: 40, system }, scorer);
      expect(results.map((r) => r.id)).toEqual(pooled.map((r) => r.id));
      for (const r of results) {
        expect(r.score).toBe(r.pooled);
        expect(r.evidence!.tokens).toEqual([]);
      }
    }
    expect(renderEvidence(pooled.slice(0, 1))).toMatch(/no content tokens/);
    // hybrid: z(sparse) is 0 for every memory, pooled and BM25 decide, as in the experiment.
    const ranked = await rankSystems(scorer, {
      memories: { ...v, ids: v.ids },
      queries: { ...empty, ids: ['query'] },
      groups: groupByCandidates({ ids: v.ids }, [
        { id: 'query', candidateIds: v.ids, text: QUERY_TEXT },
      ]),
      systems: ['hybrid'],
      k: 64,
      alpha: 0.5,
      top: 40,
      memoryTexts: v.texts,
      hybrid: { weights: THIRDS },
    });
    const hybrid = await searchView(v, empty, { k: 40, system: 'hybrid' }, scorer);
    expect(hybrid.map((r) => r.id)).toEqual(ranked.systems.get('hybrid')!.get('query'));
    expect(hybrid.map((r) => r.id)).not.toEqual(pooled.map((r) => r.id));
    for (const r of hybrid) expect([r.evidence!.tokens, r.evidence!.sparsePart]).toEqual([[], 0]);
  });

  it('applies an adapter to the query tokens only: the pooled side is unchanged', async () => {
    const random = rng(9);
    const rank = 2;
    const adapter = {
      dim: DIM,
      rank,
      a: Float32Array.from({ length: rank * DIM }, () => random() - 0.5),
      b: Float32Array.from({ length: DIM * rank }, () => random() - 0.5),
    };
    const plain = await searchView(v, q, { k: 40 }, scorer);
    const adapted = await searchView(v, q, { k: 40, adapter }, scorer);
    const byId = new Map(plain.map((r) => [r.id, r]));
    let sparseChanged = 0;
    for (const r of adapted) {
      const p = byId.get(r.id)!;
      expect(r.pooled).toBe(p.pooled);
      expect(r.evidence!.pooled).toBe(p.evidence!.pooled);
      if (r.sparse !== p.sparse) sparseChanged += 1;
    }
    expect(sparseChanged).toBeGreaterThan(0);
    // Its query tokens are never changed in place.
    expect(await searchView(v, q, { k: 40 }, scorer)).toEqual(plain);
  });

  it('renders the evidence as a compact table per result', async () => {
    const results: SearchResult[] = await searchView(v, q, { k: 2, tokenK: 4, tokenText }, scorer);
    const text = renderEvidence(results);
    const lines = text.split('\n');
    expect(lines[0]).toMatch(/^#1 m\d+ {2}score -?\d\.\d{3} = 0\.50·z\(pooled\)/);
    expect(lines.filter((l) => l.startsWith('  tok20'))).toHaveLength(2 * 5);
    expect(text).toContain('→');
  });

  it('refuses a batch of queries and a query from another encoder', async () => {
    await expect(searchView(v, { ...q, count: 2 }, {}, scorer)).rejects.toThrow(/one query/);
    const other = { ...q, dim: 6, pooled: new Float32Array(6) };
    await expect(searchView(v, other, {}, scorer)).rejects.toThrow(/dimension/);
  });
});

describe('parseSearchOptions', () => {
  it('fills the experiment’s defaults', () => {
    expect(parseSearchOptions({})).toEqual({
      k: 10,
      system: 'sparse-fusion',
      alpha: 0.5,
      tokenK: 64,
      explain: true,
    });
  });

  it.each([
    [{ k: 0 }, /k/],
    [{ k: 1.5 }, /k/],
    [{ alpha: 1.5 }, /alpha/],
    [{ tokenK: 0 }, /tokenK/],
    [{ system: 'bm25' }, /system/],
    [{ explain: 'yes' }, /explain/],
    [{ tokenText: 'x' }, /tokenText/],
    [{ index: {} }, /index/],
    [{ adapter: { dim: 3 } }, /adapter/],
    [{ limit: 5 }, /limit/],
  ])('refuses %j', (options, field) => {
    const error = (() => {
      try {
        parseSearchOptions(options);
      } catch (e) {
        return e;
      }
      return undefined;
    })();
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as Error).message).toMatch(field);
  });

  it('refuses an adapter with a system it cannot change', () => {
    const adapter = { dim: 2, rank: 1, a: new Float32Array(2), b: new Float32Array(2) };
    expect(() => parseSearchOptions({ adapter, system: 'pooled' })).toThrow(/sparse systems/);
    expect(parseSearchOptions({ adapter, system: 'zero-floor' }).adapter).toBe(adapter);
  });
});
