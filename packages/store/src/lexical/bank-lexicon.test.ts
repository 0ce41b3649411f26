import { describe, expect, it } from 'vitest';
import { tmpDir } from '@bfe/core/testing';
import { rng } from '@bfe/index/testing';
import { Bm25Index } from '@bfe/scorer';
import { MemoryStore } from '../store.js';
import { fakeEmbedder } from '../testing/index.js';
import { BankLexicon } from './bank-lexicon.js';

// BM25 by hand (k1 1.2, b 0.75, k 1; METHOD.md §8): idf = ln((N − n + 0.5)/(n + 0.5) + 1),
// term = idf·tf·2.2 / (1.2·(0.25 + 0.75·|d|/avg) + tf).
const term = (N: number, n: number, tf: number, len: number, avg: number): number =>
  (Math.log((N - n + 0.5) / (n + 0.5) + 1) * tf * 2.2) / (1.2 * (0.25 + (0.75 * len) / avg) + tf);

describe('BankLexicon: incremental BM25 postings, by hand', () => {
  it('adds, updates and deletes memories, postings and scores following by hand', () => {
    const lex = new BankLexicon('none');
    lex.put('m1', 1, 'cat sat mat');
    lex.put('m2', 2, 'Cat, cat: dog!');
    lex.put('m3', 3, 'dog');
    // N 3, Σ|d| 7: cat in m1 (tf 1) and m2 (tf 2), dog in m2 and m3.
    expect([lex.documents, lex.tokens, lex.terms, lex.postings]).toEqual([3, 7, 4, 6]);
    expect([lex.documentFrequency('cat'), lex.termFrequency('cat', 'm2')]).toEqual([2, 2]);
    const ids = ['m1', 'm2', 'm3'];
    let s = lex.scores(lex.queryTerms('cat'), ids);
    expect(s[0]).toBeCloseTo(term(3, 2, 1, 3, 7 / 3), 14);
    expect(s[1]).toBeCloseTo(term(3, 2, 2, 3, 7 / 3), 14);
    expect(s[2]).toBe(0);
    // A repeated query word counts twice.
    s = lex.scores(lex.queryTerms('dog cat dog'), ids);
    expect(s[2]).toBeCloseTo(2 * term(3, 2, 1, 1, 7 / 3), 14);

    // An update replaces m2's terms: N 3, Σ|d| 6, cat only in m1.
    lex.put('m2', 4, 'dog bird');
    expect([lex.documents, lex.tokens, lex.seqOf('m2')]).toEqual([3, 6, 4]);
    expect([lex.documentFrequency('cat'), lex.termFrequency('cat', 'm2')]).toEqual([1, 0]);
    s = lex.scores(lex.queryTerms('cat'), ids);
    expect(Array.from(s, (x) => x.toFixed(12))).toEqual(
      [term(3, 1, 1, 3, 2), 0, 0].map((x) => x.toFixed(12)),
    );

    // A delete: N 2, Σ|d| 3; no memory holds cat.
    expect(lex.delete('m1')).toBe(true);
    expect(lex.delete('m1')).toBe(false);
    expect([lex.documents, lex.tokens, lex.documentFrequency('cat')]).toEqual([2, 3, 0]);
    s = lex.scores(lex.queryTerms('cat dog'), ['m2', 'm3']);
    expect(s[0]).toBeCloseTo(term(2, 2, 1, 2, 1.5), 14);
    expect(s[1]).toBeCloseTo(term(2, 2, 1, 1, 1.5), 14);
    const [dog] = lex.explain(lex.queryTerms('cat dog dog'), 'm3');
    expect(lex.explain(lex.queryTerms('cat dog dog'), 'm3')).toHaveLength(1);
    expect(dog).toMatchObject({ term: 'dog', queryCount: 2, tf: 1, df: 2 });
    expect(dog!.contribution).toBeCloseTo(2 * term(2, 2, 1, 1, 1.5), 14);
  });

  it('holds a view only with the same ids at the same write sequences', () => {
    const lex = new BankLexicon('none');
    lex.put('a', 5, 'x');
    lex.put('b', 6, 'y');
    const ids = ['b', 'a'];
    expect(lex.holds(ids, Float64Array.of(6, 5))).toBe(true);
    expect(lex.holds(ids, Float64Array.of(6, 4))).toBe(false);
    expect(lex.holds(ids, undefined)).toBe(false);
    expect(lex.holds(['a'], Float64Array.of(5))).toBe(false);
    lex.put('a', 7, 'x z');
    expect(lex.holds(ids, Float64Array.of(6, 5))).toBe(false);
  });

  it('scores as the experiment’s Bm25Index over the live texts, bit for bit, through random writes', () => {
    const words = [
      'grey',
      'cats',
      'cat',
      'running',
      'ran',
      'the',
      'sofa',
      'Porto',
      'isn’t',
      '東京',
    ];
    for (const language of ['english', 'none'] as const) {
      const random = rng(language === 'english' ? 31 : 32);
      const text = () =>
        Array.from(
          { length: 1 + Math.floor(random() * 9) },
          () => words[Math.floor(random() * 10)],
        ).join(' ');
      const lex = new BankLexicon(language);
      const live = new Map<string, string>();
      for (let op = 0; op < 300; op++) {
        const id = `m${Math.floor(random() * 40)}`;
        if (random() < 0.25) {
          lex.delete(id);
          live.delete(id);
        } else {
          const t = text();
          lex.put(id, op, t);
          live.delete(id);
          live.set(id, t);
        }
        if (op % 25 !== 24 || live.size === 0) continue;
        const ids = [...live.keys()];
        const index = Bm25Index.build([...live.values()], { language });
        for (let q = 0; q < 4; q++) {
          const query = text();
          const got = lex.scores(lex.queryTerms(query), ids);
          const want = index.score(query);
          expect(Array.from(got, (x, i) => Object.is(x, want[i]))).not.toContain(false);
        }
      }
    }
  });
});

describe('a store’s lexical index', () => {
  it('is kept through adds, updates and deletes, and derived again at reopen', async () => {
    const dir = tmpDir('bfe-lexicon-');
    const open = () =>
      MemoryStore.open(dir, {
        embedder: fakeEmbedder(8),
        bm25Language: 'none',
        compactSegments: 0,
      });
    const bm25Of = async (store: MemoryStore) => {
      const results = await store.search({ bank: 'b', query: 'cat dog', system: 'hybrid', k: 9 });
      return new Map(results.map((r) => [r.id, r.evidence!.bm25!.score]));
    };
    let store = await open();
    await store.add([
      { id: 'm1', bank: 'b', text: 'cat sat mat' },
      { id: 'm2', bank: 'b', text: 'cat cat dog' },
      { id: 'm3', bank: 'b', text: 'dog' },
    ]);
    const first = await bm25Of(store); // derives the bank's postings from its memories
    expect(first.get('m2')).toBeCloseTo(term(3, 2, 2, 3, 7 / 3) + term(3, 2, 1, 3, 7 / 3), 14);
    await store.update([{ id: 'm2', bank: 'b', text: 'dog bird' }]);
    await store.flush();
    await store.delete(['m1'], { bank: 'b' });
    await store.add([{ id: 'm4', bank: 'b', text: 'bird' }]);
    // N 3 (m2, m3, m4), Σ|d| 4: dog in m2 and m3.
    const kept = await bm25Of(store);
    expect(kept.get('m2')).toBeCloseTo(term(3, 2, 1, 2, 4 / 3), 14);
    expect(kept.get('m3')).toBeCloseTo(term(3, 2, 1, 1, 4 / 3), 14);
    expect(kept.get('m4')).toBe(0);
    const stats = store.lexicalStats();
    expect(stats).toMatchObject({ built: 1, indexed: 2, fromView: 0 });
    expect(stats.banks.b).toEqual({ documents: 3, terms: 2, postings: 4, tokens: 4 });
    await store.close({ flush: false }); // the last writes stay in the WAL

    store = await open();
    try {
      expect(store.lexicalStats().banks).toEqual({}); // nothing kept until a hybrid search
      expect(await bm25Of(store)).toEqual(kept);
      expect(store.lexicalStats()).toMatchObject({ built: 1, indexed: 1, fromView: 0 });
      expect(store.lexicalStats().banks.b).toEqual(stats.banks.b);
    } finally {
      await store.close();
    }
  });
});
