import { createRequire } from 'node:module';

/**
 * The BM25 baseline of METHOD.md §6, computed by a maintained library,
 * `wink-bm25-text-search` 3.1.2, over one candidate set at a time (LoCoMo: a conversation's
 * turns; LongMemEval: a query's haystack), so IDF and the average document length are those of
 * the candidates the query is ranked among, as every other system sees them.
 *
 * - Text preparation (`wink-nlp-utils` 2.1.0), the same for memories and queries, in order:
 *   `string.lowerCase`; `string.tokenize0` (split on non-word characters, so tokens are runs of
 *   `[A-Za-z0-9_]`; elisions removed, `n't` amplified to `not`); `tokens.removeWords` with
 *   wink's default English stop-word list; `tokens.stem`, Porter stemming version 2 (Snowball
 *   English).
 * - Parameters ({@link BM25_PARAMS}): `k1 = 1.2`, `b = 0.75`, `k = 1`, one field of weight 1.
 *   wink scores a document `d` for query tokens `t_1..t_n` (repeats counted, tokens unknown to
 *   the candidates ignored) as `Σ_j w(t_j, d)` with
 *   `w(t, d) = idf(t) · tf(t,d)·(k1 + 1) / (k1·(1 − b + b·|d|/avg|d|) + tf(t,d))` and
 *   `idf(t) = ln((N − n_t + 0.5) / (n_t + 0.5) + k)`, `N` the candidates, `n_t` those holding `t`,
 *   `|d|` the document's prepared tokens. wink stores each `w` rounded to a fixed number of
 *   decimals: we ask for its maximum, 9.
 * - wink refuses to consolidate fewer than 3 documents. For a candidate set of 1 or 2 memories
 *   {@link Bm25Index} computes the same formula itself (`engine: 'direct'`), with the same
 *   preparation and the same 9-decimal rounding in the same order, so its scores equal wink's
 *   bit for bit wherever both can run (tested on random corpora of ≥ 3 documents). Nothing is
 *   padded: an empty document would change `N`, every IDF and the average length.
 */

/** The BM25 parameters of the baseline (wink's defaults, stated). */
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

/** Decimals wink keeps of each per-term weight (its maximum; the default is 4). */
export const BM25_WEIGHT_DECIMALS = 9;

/** The smallest collection wink consolidates. */
const WINK_MIN_DOCS = 3;

/** The parts of wink-bm25-text-search's engine used here (the package ships no types). */
interface WinkEngine {
  defineConfig(config: { fldWeights: Record<string, number>; bm25Params: Bm25Params }): boolean;
  definePrepTasks(tasks: Array<(input: never) => unknown>, field?: string): number;
  addDoc(doc: Record<string, string>, id: string): number;
  consolidate(fp?: number): boolean;
  search(text: string, limit?: number): Array<[string, number]>;
}

interface WinkNlpUtils {
  string: { lowerCase(s: string): string; tokenize0(s: string): string[] };
  tokens: { removeWords(tokens: string[]): string[]; stem(tokens: string[]): string[] };
}

// Both packages are CommonJS without type declarations: load them through `require` and give
// them the narrow interfaces above.
const require = createRequire(import.meta.url);
const winkBm25 = require('wink-bm25-text-search') as () => WinkEngine;
const nlp = require('wink-nlp-utils') as WinkNlpUtils;

/**
 * The preparation pipeline shared by memories and queries: lower case, tokenize0, stop words
 * removed, Porter2 stems.
 *
 * @example
 * bm25Tokens("Caroline isn't running to the LGBTQ support group!");
 * // ['carolin', 'not', 'run', 'lgbtq', 'support', 'group']
 */
export function bm25Tokens(text: string): string[] {
  return nlp.tokens.stem(nlp.tokens.removeWords(nlp.string.tokenize0(nlp.string.lowerCase(text))));
}

const PREP_TASKS = [
  nlp.string.lowerCase,
  nlp.string.tokenize0,
  nlp.tokens.removeWords,
  nlp.tokens.stem,
] as Array<(input: never) => unknown>;

/** How an index computes its scores. */
export type Bm25Engine = 'wink' | 'direct';

/** Options of {@link Bm25Index.build}. */
export interface Bm25BuildOptions {
  readonly params?: Bm25Params;
  /**
   * Default: `'wink'` for 3 or more texts, `'direct'` below. Forcing `'direct'` on a larger set
   * is for checking it against wink; forcing `'wink'` on fewer than 3 texts throws.
   */
  readonly engine?: Bm25Engine;
}

/**
 * A BM25 index over one candidate set. Scores come back as a `Float64Array` aligned with the
 * texts the index was built from; a candidate the search does not return (no query token in
 * common) scores 0.
 *
 * @example
 * const index = Bm25Index.build(['I adopted a cat.', 'We hiked on Sunday.', 'The cat sleeps.']);
 * index.engine;             // 'wink' (3 or more texts)
 * index.score('cats');      // Float64Array [3]: [0.47…, 0, 0.47…]
 */
export class Bm25Index {
  /** Candidates indexed. */
  readonly size: number;
  /** `'wink'` for 3 or more candidates, `'direct'` (the same formula, in this file) below. */
  readonly engine: Bm25Engine;
  readonly params: Bm25Params;
  private readonly wink: WinkEngine | undefined;
  private readonly direct: DirectBm25 | undefined;

  private constructor(
    size: number,
    params: Bm25Params,
    wink: WinkEngine | undefined,
    direct: DirectBm25 | undefined,
  ) {
    this.size = size;
    this.params = params;
    this.engine = wink === undefined ? 'direct' : 'wink';
    this.wink = wink;
    this.direct = direct;
  }

  /**
   * Indexes one candidate set's texts, in order.
   *
   * @throws Error when there is no text, a parameter is out of range, or wink is forced on
   *   fewer than 3 texts (programmer errors).
   */
  static build(texts: readonly string[], options: Bm25BuildOptions = {}): Bm25Index {
    const params = options.params ?? BM25_PARAMS;
    if (texts.length === 0) throw new Error('Bm25Index.build: no candidate texts');
    checkParams(params);
    const engineName = options.engine ?? (texts.length < WINK_MIN_DOCS ? 'direct' : 'wink');
    if (engineName === 'direct') {
      return new Bm25Index(texts.length, params, undefined, new DirectBm25(texts, params));
    }
    if (texts.length < WINK_MIN_DOCS) {
      throw new Error(
        `Bm25Index.build: wink needs at least ${WINK_MIN_DOCS} documents, got ${texts.length}`,
      );
    }
    const engine = winkBm25();
    engine.defineConfig({ fldWeights: { text: 1 }, bm25Params: { ...params } });
    engine.definePrepTasks(PREP_TASKS);
    for (let i = 0; i < texts.length; i++) engine.addDoc({ text: texts[i]! }, String(i));
    engine.consolidate(BM25_WEIGHT_DECIMALS);
    return new Bm25Index(texts.length, params, engine, undefined);
  }

  /** Scores every candidate for one query text, aligned with the indexed texts. */
  score(query: string): Float64Array {
    if (this.direct !== undefined) return this.direct.score(query);
    const out = new Float64Array(this.size);
    for (const [id, s] of this.wink!.search(query, this.size)) out[Number(id)] = s;
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
  params: Bm25Params = BM25_PARAMS,
): Float64Array[] {
  const index = Bm25Index.build(candidateTexts, { params });
  return queryTexts.map((q) => index.score(q));
}

function checkParams(p: Bm25Params): void {
  // wink silently replaces out-of-range values by its defaults; refuse them instead.
  if (!(p.k1 >= 0) || !(p.b >= 0 && p.b <= 1) || !(p.k >= 0)) {
    throw new Error(
      `BM25 parameters out of range: k1 = ${p.k1} (≥ 0), b = ${p.b} (in [0, 1]), k = ${p.k} (≥ 0)`,
    );
  }
}

/**
 * wink's computation for collections it refuses (1 or 2 documents), step for step: per-term
 * weights rounded with `toFixed(9)` at indexing, summed over the query's known tokens in query
 * order at search.
 */
class DirectBm25 {
  private readonly n: number;
  /** Term → (document → rounded weight). */
  private readonly weights = new Map<string, Map<number, number>>();

  constructor(texts: readonly string[], params: Bm25Params) {
    const { k1, b, k } = params;
    this.n = texts.length;
    const tfs: Array<Map<string, number>> = [];
    const lengths: number[] = [];
    let total = 0;
    for (const text of texts) {
      const tokens = bm25Tokens(text);
      const tf = new Map<string, number>();
      for (const t of tokens) tf.set(t, (tf.get(t) ?? 0) + 1);
      tfs.push(tf);
      lengths.push(tokens.length);
      total += tokens.length;
    }
    const avg = total / this.n;
    const df = new Map<string, number>();
    for (const tf of tfs) for (const t of tf.keys()) df.set(t, (df.get(t) ?? 0) + 1);
    for (let d = 0; d < this.n; d++) {
      const norm = 1 - b + b * (lengths[d]! / avg);
      for (const [t, f] of tfs[d]!) {
        const nt = df.get(t)!;
        const idf = Math.log((this.n - nt + 0.5) / (nt + 0.5) + k);
        const w =
          Math.sign(f) *
          Number((Math.abs((f * (k1 + 1)) / (k1 * norm + f)) * idf).toFixed(BM25_WEIGHT_DECIMALS));
        let byDoc = this.weights.get(t);
        if (byDoc === undefined) {
          byDoc = new Map();
          this.weights.set(t, byDoc);
        }
        byDoc.set(d, w);
      }
    }
  }

  score(query: string): Float64Array {
    const out = new Float64Array(this.n);
    for (const t of bm25Tokens(query)) {
      const byDoc = this.weights.get(t);
      if (byDoc === undefined) continue;
      for (const [d, w] of byDoc) out[d] = w + out[d]!;
    }
    return out;
  }
}
