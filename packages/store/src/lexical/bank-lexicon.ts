import {
  BM25_PARAMS,
  bm25Idf,
  bm25TermWeight,
  bm25Tokens,
  type Bm25Language,
  type Bm25Params,
} from '@bfe/scorer';

/** One memory version in a {@link BankLexicon}: its write sequence, length and distinct terms. */
interface LexicalDoc {
  readonly seq: number;
  /** BM25 tokens of its text (`|d|`). */
  readonly length: number;
  /** Its distinct tokens, for removing its postings. */
  readonly terms: readonly string[];
}

/** One query term a memory holds, and what it adds to the memory's BM25 score. */
export interface Bm25TermEvidence {
  /** The BM25 token (folded; with `english`, stemmed). */
  readonly term: string;
  /** Times the query holds it (each adds `weight`). */
  readonly queryCount: number;
  /** Times the memory holds it. */
  readonly tf: number;
  /** Memories of the bank that hold it (`n_t`). */
  readonly df: number;
  readonly idf: number;
  /** `idf · tf·(k1 + 1) / (k1·(1 − b + b·|d|/avg|d|) + tf)`. */
  readonly weight: number;
  /** `weight · queryCount`: the term's part of the memory's BM25 score. */
  readonly contribution: number;
}

/** Per ids array (a view's, immutable): id → row. */
const rowsOf = new WeakMap<readonly string[], ReadonlyMap<string, number>>();

/**
 * The row of each id of a view (cached per ids array, which views never change).
 *
 * @example
 * rowsById(['m1', 'm2']).get('m2'); // 1
 */
export function rowsById(ids: readonly string[]): ReadonlyMap<string, number> {
  let rows = rowsOf.get(ids);
  if (rows === undefined) {
    rows = new Map(ids.map((id, r) => [id, r]));
    rowsOf.set(ids, rows);
  }
  return rows;
}

/**
 * The BM25 postings of one bank's live memories, kept incrementally (METHOD.md §8, "BM25"; the
 * formula, parameters and tokens of `@bfe/scorer`'s `Bm25Index`, IDF over the bank): `put`
 * indexes a memory version (replacing the id's previous one), `delete` removes one. Scores
 * equal `Bm25Index.build(texts)` over the same memories bit for bit, whatever the order of
 * writes: `N`, `n_t`, `|d|` and `Σ|d|` are integers, each term weight is the same float64
 * expression, and a memory's terms are summed in query order.
 *
 * @example
 * const lex = new BankLexicon('none');
 * lex.put('m1', 0, 'a grey cat');
 * lex.put('m2', 1, 'a dog');
 * lex.documentFrequency('a'); // 2
 * lex.scores(lex.queryTerms('cat'), ['m1', 'm2']); // Float64Array [0.64072…, 0]
 */
export class BankLexicon {
  readonly language: Bm25Language;
  readonly params: Bm25Params;
  readonly #docs = new Map<string, LexicalDoc>();
  /** term → id → tf. */
  readonly #postings = new Map<string, Map<string, number>>();
  #tokens = 0;
  #postingCount = 0;
  #generation = 0;
  /** Views (by their write sequences) found to hold exactly its versions, at which generation. */
  readonly #verified = new WeakMap<
    Float64Array,
    { readonly ids: readonly string[]; readonly generation: number }
  >();

  constructor(language: Bm25Language, params: Bm25Params = BM25_PARAMS) {
    this.language = language;
    this.params = params;
  }

  /** Memories indexed (`N`). */
  get documents(): number {
    return this.#docs.size;
  }

  /** Their BM25 tokens in all (`Σ|d|`). */
  get tokens(): number {
    return this.#tokens;
  }

  /** Distinct terms. */
  get terms(): number {
    return this.#postings.size;
  }

  /** (term, memory) pairs. */
  get postings(): number {
    return this.#postingCount;
  }

  /** `Σ|d| / N` (0 for an empty bank). */
  get averageLength(): number {
    return this.#docs.size === 0 ? 0 : this.#tokens / this.#docs.size;
  }

  /** Indexes version `seq` of memory `id` (its previous version, if any, is removed first). */
  put(id: string, seq: number, text: string): void {
    this.delete(id);
    const tokens = bm25Tokens(text, this.language);
    const tf = new Map<string, number>();
    for (const t of tokens) tf.set(t, (tf.get(t) ?? 0) + 1);
    for (const [t, f] of tf) {
      let list = this.#postings.get(t);
      if (list === undefined) this.#postings.set(t, (list = new Map()));
      list.set(id, f);
    }
    this.#docs.set(id, { seq, length: tokens.length, terms: [...tf.keys()] });
    this.#tokens += tokens.length;
    this.#postingCount += tf.size;
    this.#generation++;
  }

  /** Removes memory `id`; false when it holds none. */
  delete(id: string): boolean {
    const doc = this.#docs.get(id);
    if (doc === undefined) return false;
    for (const t of doc.terms) {
      const list = this.#postings.get(t)!;
      list.delete(id);
      if (list.size === 0) this.#postings.delete(t);
    }
    this.#docs.delete(id);
    this.#tokens -= doc.length;
    this.#postingCount -= doc.terms.length;
    this.#generation++;
    return true;
  }

  /** The write sequence of the version of `id` it holds, or undefined. */
  seqOf(id: string): number | undefined {
    return this.#docs.get(id)?.seq;
  }

  /** `|d|` of memory `id` (undefined when not held). */
  lengthOf(id: string): number | undefined {
    return this.#docs.get(id)?.length;
  }

  /** Memories holding `term` (`n_t`). */
  documentFrequency(term: string): number {
    return this.#postings.get(term)?.size ?? 0;
  }

  /** Times memory `id` holds `term` (0 when it does not). */
  termFrequency(term: string, id: string): number {
    return this.#postings.get(term)?.get(id) ?? 0;
  }

  /** A query text's BM25 tokens, in order, repeats kept (the same preparation as memories). */
  queryTerms(query: string): string[] {
    return bm25Tokens(query, this.language);
  }

  /**
   * Whether it holds exactly the memory versions of a view: the same ids, each at the same
   * write sequence (`seqs`, which a store's views carry). Remembered per view until it changes.
   */
  holds(ids: readonly string[], seqs: Float64Array | undefined): boolean {
    if (seqs === undefined || ids.length !== this.#docs.size) return false;
    const seen = this.#verified.get(seqs);
    if (seen?.ids === ids && seen.generation === this.#generation) return true;
    for (let r = 0; r < ids.length; r++) {
      if (this.#docs.get(ids[r]!)?.seq !== seqs[r]) return false;
    }
    this.#verified.set(seqs, { ids, generation: this.#generation });
    return true;
  }

  /**
   * BM25 scores of the memories `ids` (every memory held, e.g. a view's rows that
   * {@link holds}), aligned with `ids`: for each query term in order, its weight added to each
   * memory holding it. Unheld ids score 0.
   */
  scores(terms: readonly string[], ids: readonly string[]): Float64Array {
    const out = new Float64Array(ids.length);
    const rows = rowsById(ids);
    const n = this.#docs.size;
    const avg = this.averageLength;
    for (const t of terms) {
      const list = this.#postings.get(t);
      if (list === undefined) continue;
      const idf = bm25Idf(n, list.size, this.params);
      for (const [id, f] of list) {
        const r = rows.get(id);
        if (r === undefined) continue;
        const w = bm25TermWeight(idf, f, this.#docs.get(id)!.length, avg, this.params);
        out[r] = out[r]! + w;
      }
    }
    return out;
  }

  /** The query terms memory `id` holds, in the query's order of first occurrence. */
  explain(terms: readonly string[], id: string): Bm25TermEvidence[] {
    const doc = this.#docs.get(id);
    if (doc === undefined) return [];
    const counts = new Map<string, number>();
    for (const t of terms) counts.set(t, (counts.get(t) ?? 0) + 1);
    const out: Bm25TermEvidence[] = [];
    for (const [term, queryCount] of counts) {
      const list = this.#postings.get(term);
      const tf = list?.get(id);
      if (list === undefined || tf === undefined) continue;
      const idf = bm25Idf(this.#docs.size, list.size, this.params);
      const weight = bm25TermWeight(idf, tf, doc.length, this.averageLength, this.params);
      out.push({
        term,
        queryCount,
        tf,
        df: list.size,
        idf,
        weight,
        contribution: weight * queryCount,
      });
    }
    return out;
  }
}
