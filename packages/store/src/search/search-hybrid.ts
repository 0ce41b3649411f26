import { ConfigError } from '@bfe/core';
import {
  fuseHybrid,
  normalizeHybridWeights,
  standardize,
  type Bm25Language,
  type HybridWeights,
  type MemoryEvidence,
  type QueryScores,
} from '@bfe/scorer';
import type { BankLexicon, Bm25TermEvidence } from '../lexical/bank-lexicon.js';
import { lexiconOfView } from '../lexical/store-lexicon.js';
import type { BankView } from '../types.js';

/**
 * The `hybrid` system's weights when a search names none: the experiments' predeclared
 * training-free weights, `{ pooled: 1, sparse: 1, bm25: 1 }` scaled onto the simplex (thirds).
 *
 * @example
 * HYBRID_DEFAULT_WEIGHTS; // { pooled: 0.333…, sparse: 0.333…, bm25: 0.333… }
 */
export const HYBRID_DEFAULT_WEIGHTS: HybridWeights = Object.freeze(
  normalizeHybridWeights({ pooled: 1, sparse: 1, bm25: 1 }),
);

/** A `hybrid` result's lexical branch: its BM25 score, how it was fused, the terms behind it. */
export interface Bm25Evidence {
  /** The fusion's weights (on the simplex): `score = pooledPart + sparsePart + part`. */
  readonly weights: HybridWeights;
  /** BM25's language: the store's setting. */
  readonly language: Bm25Language;
  /** The memory's BM25 score (IDF and average length over the bank). */
  readonly score: number;
  /** `z(bm25)` over the bank. */
  readonly z: number;
  /** `weights.bm25 · z`. */
  readonly part: number;
  /** The memory's BM25 tokens (`|d|`). */
  readonly length: number;
  /** Their mean over the bank (`avg|d|`). */
  readonly averageLength: number;
  /** Memories in the bank (`N`). */
  readonly documents: number;
  /** The query terms the memory holds; their contributions sum to `score` (float64 rounding). */
  readonly terms: readonly Bm25TermEvidence[];
}

/** One query's `hybrid` pass over a view: fused scores and the branches, per candidate. */
export interface HybridPass {
  /** `w.pooled·z(pooled) + w.sparse·z(sparse) + w.bm25·z(bm25)` (`fuseHybrid`). */
  readonly scores: Float64Array;
  readonly bm25: Float64Array;
  readonly zPooled: Float64Array;
  readonly zSparse: Float64Array;
  readonly zBm25: Float64Array;
  readonly weights: HybridWeights;
  readonly lexicon: BankLexicon;
  /** The query's BM25 tokens, in order. */
  readonly terms: readonly string[];
}

/** Postings built from a view's texts, per view and language (views without a store's). */
const ofView = new WeakMap<BankView, Map<Bm25Language, BankLexicon>>();

function postingsOf(view: BankView, language: Bm25Language | undefined): BankLexicon {
  if (view.lexicon !== undefined) {
    if (language !== undefined && language !== view.lexicon.language) {
      throw new ConfigError(
        `search options: bm25Language '${language}', but the store's lexical index is '${view.lexicon.language}' (MemoryStore.open's bm25Language)`,
      );
    }
    return view.lexicon.forView(view);
  }
  const lang = language ?? 'none';
  let byLanguage = ofView.get(view);
  if (byLanguage === undefined) ofView.set(view, (byLanguage = new Map()));
  let lex = byLanguage.get(lang);
  if (lex === undefined) byLanguage.set(lang, (lex = lexiconOfView(view, lang)));
  return lex;
}

/**
 * The `hybrid` system (METHOD.md §8, "Lexical branch") for one scored query: BM25 of the
 * query's text over the view's memories (the view's store lexicon, or postings built from its
 * texts), aligned with the scorer's candidates, fused with the pass's pooled and tail-floor
 * sparse scores by `@bfe/scorer`'s `fuseHybrid` — the experiment's `hybrid` on the same scores.
 *
 * @throws {ConfigError} without the query's text, or for a language the view's store does not
 *   index.
 */
export function hybridPass(
  view: BankView,
  s: QueryScores,
  options: {
    readonly queryText?: string | undefined;
    readonly weights?: HybridWeights | undefined;
    readonly bm25Language?: Bm25Language | undefined;
  },
): HybridPass {
  if (options.queryText === undefined) {
    throw new ConfigError(
      'search options: hybrid ranks by BM25 over the query text: pass queryText',
    );
  }
  const weights = normalizeHybridWeights(options.weights ?? HYBRID_DEFAULT_WEIGHTS);
  const lexicon = postingsOf(view, options.bm25Language);
  const terms = lexicon.queryTerms(options.queryText);
  const byRow = lexicon.scores(terms, view.ids);
  const m = s.candidates.length;
  const bm25 = new Float64Array(m);
  for (let g = 0; g < m; g++) bm25[g] = byRow[s.candidates[g]!]!;
  return {
    scores: fuseHybrid(s.systems.pooled, s.sparse, bm25, weights),
    bm25,
    zPooled: standardize(s.systems.pooled),
    zSparse: standardize(s.sparse),
    zBm25: standardize(bm25),
    weights,
    lexicon,
    terms,
  };
}

/**
 * A `hybrid` result's evidence: the token evidence of its sparse branch (`explainCandidates`,
 * tail floor) with the fused decomposition replaced by hybrid's — `alpha` the pooled weight,
 * `pooledPart = w.pooled·z(pooled)`, `sparsePart = w.sparse·z(sparse)` — and its BM25 branch,
 * so `pooledPart + sparsePart + bm25.part` is the result's score, in the same float64 steps.
 */
export function hybridEvidence(
  e: MemoryEvidence,
  pass: HybridPass,
  id: string,
): MemoryEvidence & { readonly bm25: Bm25Evidence } {
  const g = e.candidate;
  const w = pass.weights;
  const pooledPart = w.pooled * pass.zPooled[g]!;
  const sparsePart = w.sparse * pass.zSparse[g]!;
  const part = w.bm25 * pass.zBm25[g]!;
  const lex = pass.lexicon;
  return {
    ...e,
    zPooled: pass.zPooled[g]!,
    zSparse: pass.zSparse[g]!,
    alpha: w.pooled,
    pooledPart,
    sparsePart,
    score: pooledPart + sparsePart + part,
    bm25: {
      weights: w,
      language: lex.language,
      score: pass.bm25[g]!,
      z: pass.zBm25[g]! + 0,
      part: part + 0,
      length: lex.lengthOf(id) ?? 0,
      averageLength: lex.averageLength,
      documents: lex.documents,
      terms: lex.explain(pass.terms, id),
    },
  };
}
