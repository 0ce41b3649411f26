import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError } from '@bfe/core';
import { tmpDir } from '@bfe/core/testing';
import { rng } from '@bfe/index/testing';
import { SparseScorer, groupByCandidates, rankSystems } from '@bfe/scorer';
import { MemoryStore } from '../store.js';
import { fakeEmbedder } from '../testing/index.js';
import { randomQuery, randomView } from '../testing/random-view.js';
import type { BankView } from '../types.js';
import { renderEvidence } from './render.js';
import { searchView } from './search.js';

const scorer = await SparseScorer.open({ kernel: 'js' });
afterAll(() => scorer.dispose());

const DIM = 12;
const WORDS = ['grey', 'cats', 'cat', 'running', 'sofa', 'porto', 'nurse', 'the', 'autumn'];
const QUERY_TEXT = 'the grey cat running in porto';

/** A random view whose memories are 1–8 random words. */
function wordyView(seed: number, rows: number): BankView {
  const random = rng(seed + 1);
  const texts = Array.from({ length: rows }, () =>
    Array.from(
      { length: 1 + Math.floor(random() * 8) },
      () => WORDS[Math.floor(random() * 9)],
    ).join(' '),
  );
  return { ...randomView(seed, { rows, maxTokens: 6, dim: DIM, versioned: true }), texts };
}

/** The view without its store's lexical index: searched from postings of its own texts. */
function withoutLexicon(view: BankView): BankView {
  const { lexicon, ...rest } = view;
  expect(lexicon).toBeDefined();
  return rest;
}

describe('hybrid search', () => {
  const v = wordyView(3, 50);
  const q = randomQuery(4, 5, DIM);

  it('ranks by BM25 alone at weights (0, 0, 1), by pooled alone at (1, 0, 0), as the experiment', async () => {
    const ranked = await rankSystems(scorer, {
      memories: { ...v, ids: v.ids },
      queries: { ...q, ids: ['query'] },
      groups: groupByCandidates({ ids: v.ids }, [
        { id: 'query', candidateIds: v.ids, text: QUERY_TEXT },
      ]),
      systems: ['bm25', 'pooled'],
      k: 64,
      alpha: 0.5,
      top: v.ids.length,
      memoryTexts: v.texts,
      bm25: { language: 'english', idf: 'candidates' },
    });
    const ids = async (weights: { pooled: number; sparse: number; bm25: number }) =>
      (
        await searchView(
          v,
          q,
          { k: 50, system: 'hybrid', weights, queryText: QUERY_TEXT, bm25Language: 'english' },
          scorer,
        )
      ).map((r) => r.id);
    expect(await ids({ pooled: 0, sparse: 0, bm25: 2 })).toEqual(
      ranked.systems.get('bm25')!.get('query'),
    );
    expect(await ids({ pooled: 1, sparse: 0, bm25: 0 })).toEqual(
      ranked.systems.get('pooled')!.get('query'),
    );
  });

  it('explains the BM25 branch: terms summing to its score, the bank’s N and average length', async () => {
    const results = await searchView(
      v,
      q,
      { k: 50, system: 'hybrid', queryText: QUERY_TEXT, bm25Language: 'english' },
      scorer,
    );
    const lengths = v.texts.map((t) => t.split(' ').filter((w) => w !== 'the').length);
    let matched = 0;
    for (const r of results) {
      const b = r.evidence!.bm25!;
      expect(b.weights).toEqual({ pooled: 1 / 3, sparse: 1 / 3, bm25: 1 / 3 });
      expect(b.documents).toBe(50);
      expect(b.averageLength).toBeCloseTo(lengths.reduce((a, x) => a + x, 0) / 50, 12);
      expect(b.length).toBe(lengths[v.ids.indexOf(r.id)]);
      const sum = b.terms.reduce((a, t) => a + t.contribution, 0);
      expect(Math.abs(sum - b.score)).toBeLessThanOrEqual(1e-12);
      // The query's stems (English: `the` is a stop word; `cats` and `cat` meet).
      for (const t of b.terms) expect(['grey', 'cat', 'run', 'porto']).toContain(t.term);
      if (b.terms.length > 0) matched += 1;
    }
    expect(matched).toBeGreaterThan(10);
    // The terminal rendering names the three parts and the matched terms.
    const text = renderEvidence(results.slice(0, 1));
    expect(text).toMatch(
      /^#1 m\d+ {2}score -?\d\.\d{3} = 0\.33·z\(pooled\) .* \+ 0\.33·z\(bm25\) /,
    );
    expect(text.split('\n')[1]).toMatch(/^ {2}bm25 \d\.\d{3}: (grey|cat|run|porto)×\d tf \d idf /);
  });

  it('refuses hybrid without the query text, weights for another system, a foreign language', async () => {
    await expect(searchView(v, q, { system: 'hybrid' }, scorer)).rejects.toThrow(/queryText/);
    const weights = { pooled: 1, sparse: 1, bm25: 1 };
    await expect(searchView(v, q, { weights }, scorer)).rejects.toThrow(ConfigError);
    const zero = { pooled: 0, sparse: 0, bm25: 0 };
    await expect(
      searchView(v, q, { system: 'hybrid', weights: zero, queryText: 'x' }, scorer),
    ).rejects.toThrow(/not all be 0/);

    const store = await MemoryStore.open(tmpDir('bfe-hybrid-'), {
      embedder: fakeEmbedder(8),
      bm25Language: 'english',
    });
    try {
      await store.add([{ id: 'm', bank: 'b', text: 'a grey cat' }]);
      const request = { bank: 'b', query: 'cat', system: 'hybrid' } as const;
      expect(await store.search({ ...request, bm25Language: 'english' })).toHaveLength(1);
      await expect(store.search({ ...request, bm25Language: 'none' })).rejects.toThrow(
        /store's lexical index is 'english'/,
      );
    } finally {
      await store.close();
    }
  });

  it('scores a view older than the last write from its own texts, as a view without the store’s', async () => {
    const store = await MemoryStore.open(tmpDir('bfe-hybrid-'), {
      embedder: fakeEmbedder(8),
      bm25Language: 'english',
    });
    const embedder = fakeEmbedder(8);
    try {
      const random = rng(7);
      const text = () =>
        Array.from(
          { length: 2 + Math.floor(random() * 6) },
          () => WORDS[Math.floor(random() * 9)],
        ).join(' ');
      await store.add(
        Array.from({ length: 30 }, (_, i) => ({ id: `m${i}`, bank: 'b', text: text() })),
      );
      const query = await embedder.encode([QUERY_TEXT], 'query');
      const options = { k: 30, system: 'hybrid', queryText: QUERY_TEXT } as const;
      const old = store.snapshot();
      const oldView = old.bank('b');
      const before = await searchView(oldView, query, options, scorer);
      await store.update([{ id: 'm3', bank: 'b', text: 'grey grey cat porto' }]);
      await store.delete(['m4'], { bank: 'b' });
      const stats = store.lexicalStats();
      expect(stats).toMatchObject({ indexed: 1, fromView: 0 });
      // The kept postings moved on: the old view is scored from postings of its own texts.
      const again = await searchView(oldView, query, options, scorer);
      expect(store.lexicalStats()).toMatchObject({ indexed: 1, fromView: 1 });
      expect(again).toEqual(before);
      const plain = withoutLexicon(oldView);
      expect(
        await searchView(plain, query, { ...options, bm25Language: 'english' }, scorer),
      ).toEqual(before);
      await old.release();
      // The current view is scored from the kept postings, updated by the two writes.
      const now = store.snapshot();
      const current = await searchView(now.bank('b'), query, options, scorer);
      expect(store.lexicalStats()).toMatchObject({ indexed: 2, fromView: 1, built: 1 });
      const fresh = withoutLexicon(now.bank('b'));
      expect(
        await searchView(fresh, query, { ...options, bm25Language: 'english' }, scorer),
      ).toEqual(current);
      expect(current.map((r) => r.id)).not.toContain('m4');
      await now.release();
    } finally {
      await store.close();
    }
  });
});
