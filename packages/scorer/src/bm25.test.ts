import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  BM25_PARAMS,
  Bm25Corpus,
  Bm25Index,
  bm25BuildOptions,
  bm25Meta,
  bm25Scores,
  type Bm25Params,
} from './bm25.js';
import { bm25Tokens, type Bm25Language } from './bm25-text.js';

/**
 * Textbook BM25 in float64, written out term by term: `Σ_j idf(t_j)·tf·(k1+1)/(k1·(1−b+b·|d|/avg)+tf)`
 * over the query's tokens (repeats counted), `idf = ln((N − n + 0.5)/(n + 0.5) + k)`, `N` and `n`
 * over `idfDocs` (the candidates, or the whole corpus), `avg` over the candidates.
 */
function referenceBm25(
  docs: readonly string[],
  query: string,
  language: Bm25Language,
  idfDocs: readonly string[] = docs,
  { k1, b, k }: Bm25Params = BM25_PARAMS,
): number[] {
  const tokenized = docs.map((d) => bm25Tokens(d, language));
  const idfTokenized = idfDocs.map((d) => bm25Tokens(d, language));
  const avg = tokenized.reduce((s, t) => s + t.length, 0) / docs.length;
  return tokenized.map((d) => {
    let score = 0;
    for (const t of bm25Tokens(query, language)) {
      const tf = d.filter((x) => x === t).length;
      if (tf === 0) continue;
      const nt = idfTokenized.filter((x) => x.includes(t)).length;
      const idf = Math.log((idfDocs.length - nt + 0.5) / (nt + 0.5) + k);
      score += (idf * (tf * (k1 + 1))) / (k1 * (1 - b + (b * d.length) / avg) + tf);
    }
    return score;
  });
}

/** Positions sorted by score, descending, ties by position. */
function order(scores: Float64Array): number[] {
  return [...scores.keys()].sort((a, b) => scores[b]! - scores[a]! || a - b);
}

const WORDS = [
  ...['cat', 'cats', 'dog', 'running', 'runs', 'the', 'a', "isn't", 'Café', 'cafe'],
  ...['Straße', 'кошка', 'Кошки', 'собака', '猫', '東京', 'タワー', 'قطة', 'مرحبا', '서울'],
];
const text = fc
  .array(fc.constantFrom(...WORDS), { minLength: 0, maxLength: 12 })
  .map((w) => w.join(' '));
const language = fc.constantFrom<Bm25Language>('english', 'none');

describe('Bm25Index on tiny corpora', () => {
  it('ranks more occurrences first at equal length, and scores non-matching candidates 0', () => {
    const s = Bm25Index.build([
      'weather report today sunny',
      'cat dog fish bird',
      'cat cat cat mouse',
    ]).score('cat');
    expect(s).toBeInstanceOf(Float64Array);
    expect(s.length).toBe(3);
    expect(order(s)).toEqual([2, 1, 0]);
    expect(s[0]).toBe(0);
  });

  it('prefers the shorter document at equal term frequency (b = 0.75)', () => {
    const s = Bm25Index.build(['cat dog fish bird bee', 'rain', 'cat']).score('cat');
    expect(order(s)).toEqual([2, 0, 1]);
  });

  it('weighs a rare term above a common one (IDF)', () => {
    const s = Bm25Index.build(['cat fish', 'dog fish', 'cat bird', 'cat tree']).score('cat dog');
    expect(order(s)[0]).toBe(1);
    expect(s[0]).toBe(s[2]);
  });

  it('scores one or two candidates with the same formula (no special case)', () => {
    const s = Bm25Index.build(['I adopted a cat', 'We hiked on Tam']).score('Where is the cat?');
    // N = 2, n = 1: idf = ln(1.5/1.5 + 1) = ln 2; tf = 1, |d| = avg|d| = 4: weight = idf.
    expect(s[0]).toBeCloseTo(Math.log(2), 12);
    expect(s[1]).toBe(0);
    const one = Bm25Index.build(['only one memory here']);
    expect(one.score('memory')[0]).toBeCloseTo(Math.log(0.5 / 1.5 + 1), 12);
    expect(one.score('nothing')[0]).toBe(0);
  });

  it('English stemming and stop words on, or off', () => {
    const docs = ['she runs daily', 'he sleeps', 'they sing the songs'];
    const english = Bm25Index.build(docs, { language: 'english' });
    expect(order(english.score('running'))[0]).toBe(0);
    expect([...english.score('the of zebra')]).toEqual([0, 0, 0]);
    expect(order(english.score('song'))[0]).toBe(2);
    const none = Bm25Index.build(docs, { language: 'none' });
    expect([...none.score('running')]).toEqual([0, 0, 0]);
    expect([...none.score('song')]).toEqual([0, 0, 0]);
    expect(order(none.score('the'))[0]).toBe(2);
  });

  it('matches words of every script, across case and normalisation', () => {
    const docs = ['Мы пили кофе в кафе', 'Café au lait', '我喜欢猫', 'القطة نائمة', 'Die Straße'];
    const index = Bm25Index.build(docs);
    expect(order(index.score('КАФЕ'))[0]).toBe(0);
    expect(order(index.score('cafe\u0301'))[0]).toBe(1);
    expect(order(index.score('猫是动物'))[0]).toBe(2);
    expect(order(index.score('نائمة'))[0]).toBe(3);
    expect(order(index.score('STRASSE'))[0]).toBe(4);
    for (const q of ['КАФЕ', 'café', '猫', 'نائمة', 'strasse']) {
      expect(index.score(q).filter((x) => x > 0).length).toBe(1);
    }
  });

  it('corpus IDF counts N and n_t over the corpus, the average length over the candidates', () => {
    const corpus = Bm25Corpus.build(['apple', 'apple pie', 'apple tart', 'banana', 'kiwi'], 'none');
    expect(corpus.size).toBe(5);
    expect(corpus.documentFrequency('apple')).toBe(3);
    expect(corpus.documentFrequency('durian')).toBe(0);
    const candidates = ['apple', 'banana'];
    const perSet = Bm25Index.build(candidates).score('apple banana');
    const global = Bm25Index.build(candidates, { corpus }).score('apple banana');
    // Over the candidates both words are equally rare: equal scores.
    expect(perSet[0]).toBe(perSet[1]);
    // Over the corpus: idf(apple) = ln(2.5/3.5 + 1), idf(banana) = ln(4.5/1.5 + 1); |d| = avg.
    expect(global[0]).toBeCloseTo(Math.log(2.5 / 3.5 + 1), 12);
    expect(global[1]).toBeCloseTo(Math.log(4.5 / 1.5 + 1), 12);
  });

  it('refuses an empty set, bad parameters, and a corpus of another language or without the candidates', () => {
    expect(() => Bm25Index.build([])).toThrow(/no candidate texts/);
    expect(() => Bm25Index.build(['x'], { params: { k1: 1.2, b: 2, k: 1 } })).toThrow(
      /out of range/,
    );
    const corpus = Bm25Corpus.build(['a cat'], 'none');
    expect(() => Bm25Index.build(['a cat'], { corpus, language: 'english' })).toThrow(/corpus/);
    expect(() => Bm25Index.build(['a dog'], { corpus })).toThrow(/does not hold/);
  });

  it('takes another tokenizer for memories and queries alike, never with a corpus', () => {
    const bySpace = (t: string) => t.split(' ');
    const index = Bm25Index.build(['Cat-Dog x', 'cat y'], { tokenizer: bySpace });
    expect(order(index.score('Cat-Dog'))).toEqual([0, 1]);
    expect(index.score('Cat-Dog')[1]).toBe(0);
    expect([...index.score('cat')]).toEqual([0, Math.log(1.5 / 1.5 + 1)]);
    const corpus = Bm25Corpus.build(['a'], 'none');
    expect(() => Bm25Index.build(['a'], { corpus, tokenizer: bySpace })).toThrow(/tokenizer/);
  });

  it('bm25Scores gives one aligned Float64Array per query; bm25BuildOptions builds the corpus', () => {
    const [a, b] = bm25Scores(['a cat', 'a dog', 'a cat and a dog'], ['cat', 'dog']);
    expect(order(a!)).toEqual([0, 2, 1]);
    expect(order(b!)).toEqual([1, 2, 0]);
    expect(bm25BuildOptions({ language: 'english', idf: 'candidates' }, ['x'])).toEqual({
      language: 'english',
    });
    const built = bm25BuildOptions({ language: 'none', idf: 'corpus' }, ['a b', 'b']);
    expect(built.corpus?.size).toBe(2);
    expect(built.corpus?.documentFrequency('b')).toBe(2);
  });

  it('bm25Meta states tokenisation, stop words, stemming and IDF', () => {
    const english = bm25Meta({ language: 'english', idf: 'candidates' });
    expect(english).toMatchObject({ language: 'english', k1: 1.2, b: 0.75, k: 1 });
    expect(english.stemming).toMatch(/Porter2/);
    expect(english.idf).toMatch(/^candidates/);
    const none = bm25Meta({ language: 'none', idf: 'corpus' });
    expect(none).toMatchObject({ stopWords: 'none', stemming: 'none' });
    expect(none.idf).toMatch(/^corpus/);
    expect(none.tokenisation).toMatch(/NFKC/);
  });
});

describe('Bm25Index against the reference (random multilingual corpora)', () => {
  it('equals the textbook formula, per-set IDF', () => {
    fc.assert(
      fc.property(
        fc.array(text, { minLength: 1, maxLength: 8 }),
        text,
        language,
        (docs, q, lang) => {
          const got = Bm25Index.build(docs, { language: lang }).score(q);
          const want = referenceBm25(docs, q, lang);
          for (let i = 0; i < docs.length; i++) {
            expect(Math.abs(got[i]! - want[i]!)).toBeLessThanOrEqual(1e-12 * (1 + want[i]!));
          }
        },
      ),
      { numRuns: 300, seed: 42 },
    );
  });

  it('equals the textbook formula, corpus IDF', () => {
    fc.assert(
      fc.property(
        fc.array(text, { minLength: 1, maxLength: 12 }),
        fc.integer({ min: 1, max: 12 }),
        text,
        language,
        (all, cut, q, lang) => {
          const docs = all.slice(0, Math.min(cut, all.length));
          const corpus = Bm25Corpus.build(all, lang);
          const got = Bm25Index.build(docs, { language: lang, corpus }).score(q);
          const want = referenceBm25(docs, q, lang, all);
          for (let i = 0; i < docs.length; i++) {
            expect(Math.abs(got[i]! - want[i]!)).toBeLessThanOrEqual(1e-12 * (1 + want[i]!));
          }
        },
      ),
      { numRuns: 300, seed: 43 },
    );
  });

  it('permuting the candidates permutes the scores, bit for bit', () => {
    fc.assert(
      fc.property(
        fc
          .array(text, { minLength: 1, maxLength: 8 })
          .chain((docs) =>
            fc.tuple(
              fc.constant(docs),
              fc.shuffledSubarray([...docs.keys()], { minLength: docs.length }),
            ),
          ),
        text,
        language,
        ([docs, perm], query, lang) => {
          const s = Bm25Index.build(docs, { language: lang }).score(query);
          const p = Bm25Index.build(
            perm.map((i) => docs[i]!),
            { language: lang },
          ).score(query);
          perm.forEach((from, to) => expect(p[to]).toBe(s[from]));
        },
      ),
      { numRuns: 100, seed: 44 },
    );
  });
});
