import { bm25Tokens, type Bm25Language } from './bm25-text.js';

/**
 * The BM25 baseline of METHOD.md §6 and the lexical branch of §8, computed here directly over
 * one candidate set at a time (LoCoMo: a conversation's turns; LongMemEval: a query's haystack).
 *
 * A document `d` scores, for the query's tokens `t_1..t_n` (repeats counted, in query order;
 * a token no candidate holds adds nothing),
 * `Σ_j idf(t_j) · tf(t_j,d)·(k1 + 1) / (k1·(1 − b + b·|d|/avg|d|) + tf(t_j,d))` with
 * `idf(t) = ln((N − n_t + 0.5) / (n_t + 0.5) + k)` ({@link BM25_PARAMS}: `k1 = 1.2`, `b = 0.75`,
 * `k = 1`, the formula and parameters of `wink-bm25-text-search`, which computed it before),
 * `|d|` the document's tokens ({@link bm25Tokens}) and `avg|d|` their mean over the candidates.
 * `N` and `n_t` are, by default (`idf: 'candidates'`), the candidates and those holding `t`, so
 * IDF is that of the set the query is ranked among, as every other system sees it; with
 * `idf: 'corpus'` they are every memory of the benchmark ({@link Bm25Corpus}) and those holding
 * `t`, the average length staying the candidates'. Scores are float64 sums in a fixed order:
 * the same inputs give the same scores bit for bit. Nothing is padded: an empty document
 * counts in `N` and in the average length, and scores 0.
 */

/** The BM25 parameters of the baseline (stated). */
export interface Bm25Params {
  /** Term-frequency saturation. */
  readonly k1: number;
  /** Length normalisation. */
  readonly b: number;
  /** Added inside the IDF logarithm, `ln(… + k)`, so IDF stays positive. */
  readonly k: number;
}

/**
 * `k1 = 1.2`, `b = 0.75`, `k = 1`.
 *
 * @example
 * BM25_PARAMS.k1; // 1.2
 */
export const BM25_PARAMS: Bm25Params = Object.freeze({ k1: 1.2, b: 0.75, k: 1 });

/** Where IDF's `N` and `n_t` are counted: the query's candidates, or every memory. */
export type Bm25Idf = 'candidates' | 'corpus';

/** How BM25 prepares text and counts IDF. */
export interface Bm25Options {
  /** `english`: English elisions, stop words and Porter2 stems; `none`: words as they are. */
  readonly language: Bm25Language;
  readonly idf: Bm25Idf;
}

/**
 * The scorer's BM25 options when a caller names none: no language assumed, IDF over the
 * candidates. A run picks its options from its dataset ({@link resolveBm25Options}).
 *
 * @example
 * BM25_DEFAULTS; // { language: 'none', idf: 'candidates' }
 */
export const BM25_DEFAULTS: Bm25Options = Object.freeze({ language: 'none', idf: 'candidates' });

/**
 * The one place BM25's defaults are decided, for `bfe run`, `bfe score` and the benches alike
 * (METHOD.md §8, "BM25"): the language is the chosen one (an experiment's `scorer.bm25`, a
 * flag) when given, else `english` exactly when the dataset is declared English (`@bfe/datasets`'
 * `datasetLanguage`: LoCoMo, LongMemEval, COVID-QA), else `none` (an `lmeb:` folder declares no
 * language); IDF is over the query's candidates unless `corpus` is chosen.
 *
 * @example
 * resolveBm25Options(undefined, 'english'); // { language: 'english', idf: 'candidates' }
 * resolveBm25Options({ idf: 'corpus' }, 'undeclared'); // { language: 'none', idf: 'corpus' }
 */
export function resolveBm25Options(
  chosen:
    | { readonly language?: Bm25Language | undefined; readonly idf?: Bm25Idf | undefined }
    | undefined,
  declared: 'english' | 'undeclared',
): Bm25Options {
  return {
    language: chosen?.language ?? (declared === 'english' ? 'english' : 'none'),
    idf: chosen?.idf ?? 'candidates',
  };
}

/**
 * Document frequencies over a whole collection (every memory of a benchmark), for
 * `idf: 'corpus'`.
 *
 * @example
 * const corpus = Bm25Corpus.build(['a cat', 'a dog', 'the cat sat'], 'none');
 * corpus.size;                       // 3
 * corpus.documentFrequency('cat');   // 2
 */
export class Bm25Corpus {
  /** Documents counted (`N`). */
  readonly size: number;
  readonly language: Bm25Language;
  private readonly df: ReadonlyMap<string, number>;

  private constructor(size: number, language: Bm25Language, df: ReadonlyMap<string, number>) {
    this.size = size;
    this.language = language;
    this.df = df;
  }

  /** Counts, for every token, the texts holding it. */
  static build(texts: Iterable<string>, language: Bm25Language): Bm25Corpus {
    const df = new Map<string, number>();
    let size = 0;
    for (const text of texts) {
      size += 1;
      for (const t of new Set(bm25Tokens(text, language))) df.set(t, (df.get(t) ?? 0) + 1);
    }
    return new Bm25Corpus(size, language, df);
  }

  /** Texts holding `token` (0 for a token none holds). */
  documentFrequency(token: string): number {
    return this.df.get(token) ?? 0;
  }
}

/**
 * A token's IDF, `ln((N − n_t + 0.5) / (n_t + 0.5) + k)`, for `N` documents of which `n_t` hold
 * it: the one expression every BM25 of bfe computes, so indexes built at once
 * ({@link Bm25Index}) and kept incrementally (the store's) give the same float64 bits.
 *
 * @example
 * bm25Idf(3, 1); // ln(2.5 / 1.5 + 1) = 0.98083…
 */
export function bm25Idf(
  documents: number,
  holding: number,
  params: Bm25Params = BM25_PARAMS,
): number {
  return Math.log((documents - holding + 0.5) / (holding + 0.5) + params.k);
}

/**
 * One token's term of a document's score: `idf · tf·(k1 + 1) / (k1·(1 − b + b·|d|/avg|d|) + tf)`,
 * with `tf` its count in the document of `length` tokens and `average` the mean length.
 *
 * @example
 * bm25TermWeight(bm25Idf(3, 1), 1, 2, 2); // 0.98083… (tf 1 in a document of average length: the IDF)
 */
export function bm25TermWeight(
  idf: number,
  tf: number,
  length: number,
  average: number,
  params: Bm25Params = BM25_PARAMS,
): number {
  const { k1, b } = params;
  return (idf * (tf * (k1 + 1))) / (k1 * (1 - b + (b * length) / average) + tf);
}

/** Options of {@link Bm25Index.build}. */
export interface Bm25BuildOptions {
  /** Default `'none'`. */
  readonly language?: Bm25Language;
  /** Default {@link BM25_PARAMS}. */
  readonly params?: Bm25Params;
  /** Count IDF over this collection (which holds the candidates) instead of the candidates. */
  readonly corpus?: Bm25Corpus;
  /**
   * Replaces the preparation ({@link bm25Tokens} in `language`) for memories and queries
   * alike: for comparing another tokeniser under the same formula (the benches' former one).
   */
  readonly tokenizer?: (text: string) => string[];
}

/** One token's postings: the candidates holding it and their per-term weights. */
interface Postings {
  readonly docs: Int32Array;
  readonly weights: Float64Array;
}

/**
 * A BM25 index over one candidate set. Scores come back as a `Float64Array` aligned with the
 * texts the index was built from; a candidate with no query token scores 0.
 *
 * @example
 * const index = Bm25Index.build(['I adopted a cat.', 'We hiked on Sunday.', 'The cat sleeps.'], { language: 'english' });
 * index.score('cats'); // Float64Array [3]: [0.47…, 0, 0.47…]
 */
export class Bm25Index {
  /** Candidates indexed. */
  readonly size: number;
  readonly language: Bm25Language;
  readonly params: Bm25Params;
  private readonly postings: ReadonlyMap<string, Postings>;
  private readonly tokenize: (text: string) => string[];

  private constructor(
    size: number,
    language: Bm25Language,
    params: Bm25Params,
    postings: ReadonlyMap<string, Postings>,
    tokenize: (text: string) => string[],
  ) {
    this.size = size;
    this.language = language;
    this.params = params;
    this.postings = postings;
    this.tokenize = tokenize;
  }

  /**
   * Indexes one candidate set's texts, in order.
   *
   * @throws Error when there is no text, a parameter is out of range, or the corpus is of
   *   another language (or comes with a `tokenizer`) or does not hold the candidates
   *   (programmer errors).
   */
  static build(texts: readonly string[], options: Bm25BuildOptions = {}): Bm25Index {
    const params = options.params ?? BM25_PARAMS;
    const language = options.language ?? 'none';
    const { corpus } = options;
    if (texts.length === 0) throw new Error('Bm25Index.build: no candidate texts');
    checkParams(params);
    if (corpus !== undefined && (corpus.language !== language || options.tokenizer)) {
      throw new Error(
        `Bm25Index.build: a '${corpus.language}' corpus for a '${language}' index${options.tokenizer ? ' with its own tokenizer' : ''}: the tokens differ`,
      );
    }
    const tokenize = options.tokenizer ?? ((text: string) => bm25Tokens(text, language));
    const n = texts.length;
    const tfs: Array<Map<string, number>> = [];
    const lengths = new Float64Array(n);
    let total = 0;
    for (let d = 0; d < n; d++) {
      const tokens = tokenize(texts[d]!);
      const tf = new Map<string, number>();
      for (const t of tokens) tf.set(t, (tf.get(t) ?? 0) + 1);
      tfs.push(tf);
      lengths[d] = tokens.length;
      total += tokens.length;
    }
    const avg = total / n;
    const docsOf = new Map<string, number[]>();
    for (let d = 0; d < n; d++) {
      for (const t of tfs[d]!.keys()) {
        const list = docsOf.get(t);
        if (list === undefined) docsOf.set(t, [d]);
        else list.push(d);
      }
    }
    const bigN = corpus?.size ?? n;
    const postings = new Map<string, Postings>();
    for (const [t, docs] of docsOf) {
      const nt = corpus === undefined ? docs.length : corpus.documentFrequency(t);
      if (nt < docs.length || bigN < n) {
        throw new Error(`Bm25Index.build: the corpus does not hold the candidates (token '${t}')`);
      }
      const idf = bm25Idf(bigN, nt, params);
      const weights = new Float64Array(docs.length);
      for (let i = 0; i < docs.length; i++) {
        const d = docs[i]!;
        weights[i] = bm25TermWeight(idf, tfs[d]!.get(t)!, lengths[d]!, avg, params);
      }
      postings.set(t, { docs: Int32Array.from(docs), weights });
    }
    return new Bm25Index(n, language, params, postings, tokenize);
  }

  /** Scores every candidate for one query text, aligned with the indexed texts. */
  score(query: string): Float64Array {
    const out = new Float64Array(this.size);
    for (const t of this.tokenize(query)) {
      const p = this.postings.get(t);
      if (p === undefined) continue;
      const { docs, weights } = p;
      for (let i = 0; i < docs.length; i++) {
        const d = docs[i]!;
        out[d] = out[d]! + weights[i]!;
      }
    }
    return out;
  }
}

/**
 * BM25 scores of several queries against one candidate set: one index, one search per query.
 *
 * @example
 * const [a, b] = bm25Scores(['a cat', 'a dog', 'a cat and a dog'], ['cat', 'dog']);
 * // a: Float64Array [3], b: Float64Array [3], aligned with the candidate texts
 */
export function bm25Scores(
  candidateTexts: readonly string[],
  queryTexts: readonly string[],
  options: Bm25BuildOptions = {},
): Float64Array[] {
  const index = Bm25Index.build(candidateTexts, options);
  return queryTexts.map((q) => index.score(q));
}

/**
 * The index options of a run's {@link Bm25Options}: its language and, for `idf: 'corpus'`, the
 * document frequencies of every memory text (`memoryTexts`, counted once here).
 *
 * @example
 * const build = bm25BuildOptions({ language: 'english', idf: 'corpus' }, memoryTexts);
 * Bm25Index.build(candidateTexts, build); // IDF over every memory
 */
export function bm25BuildOptions(
  options: Bm25Options,
  memoryTexts: readonly string[],
): Bm25BuildOptions {
  if (options.idf === 'candidates') return { language: options.language };
  return { language: options.language, corpus: Bm25Corpus.build(memoryTexts, options.language) };
}

/**
 * What `results.json` records of a BM25 run, so every BM25 row states its tokenisation,
 * stop words, stemming and IDF.
 *
 * @example
 * bm25Meta({ language: 'none', idf: 'candidates' }).idf; // 'candidates: N and n_t over the query’s candidate set'
 */
export function bm25Meta(
  options: Bm25Options,
  params: Bm25Params = BM25_PARAMS,
): Record<string, string | number> {
  const english = options.language === 'english';
  return {
    implementation: '@bfe/scorer Bm25Index (direct; wink-bm25-text-search’s formula)',
    ...params,
    language: options.language,
    tokenisation:
      'NFKC, upper- then lower-case (case folding), NFKC; words: runs of \\p{L}\\p{N}\\p{M}, any script; each Han/Hiragana/Katakana character a word',
    elisions: english
      ? 'wink-nlp-utils@2.1.0 English (n’t → not, ’d ’m ’ll ’ve ’re removed)'
      : 'none',
    stopWords: english ? 'wink-nlp-utils@2.1.0 English (153 words)' : 'none',
    stemming: english ? 'Porter2 (wink-nlp-utils@2.1.0)' : 'none',
    idf:
      options.idf === 'candidates'
        ? 'candidates: N and n_t over the query’s candidate set'
        : 'corpus: N and n_t over every memory of the benchmark (average length: the candidates’)',
  };
}

function checkParams(p: Bm25Params): void {
  if (!(p.k1 >= 0) || !(p.b >= 0 && p.b <= 1) || !(p.k >= 0)) {
    throw new Error(
      `BM25 parameters out of range: k1 = ${p.k1} (≥ 0), b = ${p.b} (in [0, 1]), k = ${p.k} (≥ 0)`,
    );
  }
}
