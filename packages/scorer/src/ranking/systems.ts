import type { QueryScores, SystemName } from '../scorer.js';

/** The training-free systems of METHOD.md §6, in table order. */
export const SCORE_SYSTEMS = [
  'pooled',
  'maxsim',
  'bm25',
  'sparse-fusion',
  'zero-floor',
  'no-fusion',
  'maxsim-fusion',
] as const;

/** The systems of the adapter's scorer pass (METHOD.md §4), ranked given adapted query tokens. */
export const ADAPTED_SYSTEMS = ['adapted', 'adapted-zero-floor'] as const;

/**
 * The lexical-branch systems (METHOD.md §8, bfe's extension): `hybrid` at the experiment's
 * predeclared weights, `hybrid-selected` at the weights chosen on validation NDCG@10.
 */
export const HYBRID_SYSTEMS = ['hybrid', 'hybrid-selected'] as const;

/**
 * A system that ranks: those of {@link SCORE_SYSTEMS}, plus {@link ADAPTED_SYSTEMS} and
 * {@link HYBRID_SYSTEMS}.
 */
export type RankingSystem =
  | (typeof SCORE_SYSTEMS)[number]
  | (typeof ADAPTED_SYSTEMS)[number]
  | (typeof HYBRID_SYSTEMS)[number];

/** The systems of the k sweep: the ones whose scores depend on k. */
export const SWEEP_SYSTEMS = ['sparse-fusion', 'zero-floor', 'no-fusion'] as const;

/** A system of {@link SWEEP_SYSTEMS}. */
export type SweepSystem = (typeof SWEEP_SYSTEMS)[number];

/** Where a system's scores come from. */
export type SystemSource =
  /** One `SparseScorer.score` pass over the bank's own query tokens. */
  | 'scorer'
  /** Scorer passes at the main k with an adapter's query tokens, each system at its own α. */
  | 'adapted'
  /** BM25 over the candidates' texts (`bm25Scores`). */
  | 'bm25'
  /** The main-k scorer pass's pooled and sparse scores with BM25, fused by `fuseHybrid`. */
  | 'hybrid';

/** What ranking needs to know about one system. */
export interface SystemDescriptor {
  readonly name: RankingSystem;
  readonly source: SystemSource;
  /** The entry of `QueryScores.systems` it ranks by (scorer passes only). */
  readonly scores: SystemName | undefined;
  /** Its scores depend on the top-k of each query token: ranked at every k of a sweep. */
  readonly sweepsK: boolean;
  /** Its scores depend on α. */
  readonly usesAlpha: boolean;
  /** METHOD.md's definition in one line. */
  readonly summary: string;
}

/**
 * Every system as data (METHOD.md §2–3, §6). `rankSystems` reads this table to decide which
 * scorer pass, which scores and which k each system needs.
 *
 * @example
 * SYSTEMS['zero-floor']; // { source: 'scorer', scores: 'zero-floor', sweepsK: true, … }
 */
export const SYSTEMS: Readonly<Record<RankingSystem, SystemDescriptor>> = Object.freeze({
  pooled: {
    name: 'pooled',
    source: 'scorer',
    scores: 'pooled',
    sweepsK: false,
    usesAlpha: false,
    summary: 'pooled cosine p_q·p_m of the original embeddings',
  },
  maxsim: {
    name: 'maxsim',
    source: 'scorer',
    scores: 'maxsim',
    sweepsK: false,
    usesAlpha: false,
    summary: 'exhaustive token MaxSim (1/n_q) Σ_i max_j h_{q,i}·h_{m,j}',
  },
  bm25: {
    name: 'bm25',
    source: 'bm25',
    scores: undefined,
    sweepsK: false,
    usesAlpha: false,
    summary: 'BM25 over the memory texts (k1 = 1.2, b = 0.75; language and IDF: meta.bm25)',
  },
  'sparse-fusion': {
    name: 'sparse-fusion',
    source: 'scorer',
    scores: 'sparse-fusion',
    sweepsK: true,
    usesAlpha: true,
    summary: 'α·z(pooled) + (1 − α)·z(sparse) with the tail floor t_i',
  },
  'zero-floor': {
    name: 'zero-floor',
    source: 'scorer',
    scores: 'zero-floor',
    sweepsK: true,
    usesAlpha: true,
    summary: 'training-free sparse fusion with t_i = 0 (ablation; original query tokens)',
  },
  'no-fusion': {
    name: 'no-fusion',
    source: 'scorer',
    scores: 'no-fusion',
    sweepsK: true,
    usesAlpha: false,
    summary: 'z(sparse) alone, α = 0 (ablation)',
  },
  'maxsim-fusion': {
    name: 'maxsim-fusion',
    source: 'scorer',
    scores: 'maxsim-fusion',
    sweepsK: false,
    usesAlpha: true,
    summary: 'α·z(pooled) + (1 − α)·z(exhaustive MaxSim): sparse matching replaced (ablation)',
  },
  adapted: {
    name: 'adapted',
    source: 'adapted',
    scores: 'sparse-fusion',
    sweepsK: false,
    usesAlpha: true,
    summary: 'sparse fusion at the selected α with the adapter’s query tokens (METHOD.md §4)',
  },
  'adapted-zero-floor': {
    name: 'adapted-zero-floor',
    source: 'adapted',
    scores: 'zero-floor',
    sweepsK: false,
    usesAlpha: true,
    summary:
      'the adapted system with t_i = 0, at the main k, its own validation-selected epoch and α (ablation)',
  },
  hybrid: {
    name: 'hybrid',
    source: 'hybrid',
    scores: undefined,
    sweepsK: false,
    usesAlpha: false,
    summary:
      'w_pool·z(pooled) + w_sparse·z(sparse) + w_bm25·z(BM25), predeclared weights (extension)',
  },
  'hybrid-selected': {
    name: 'hybrid-selected',
    source: 'hybrid',
    scores: undefined,
    sweepsK: false,
    usesAlpha: false,
    summary: 'hybrid at the simplex-grid weights chosen on validation NDCG@10 (extension)',
  },
});

/** The scores of `system` in one scorer pass's result. */
export function scoresOf(system: SystemDescriptor, s: QueryScores): Float64Array {
  const name = system.scores;
  const scores = name === undefined ? undefined : s.systems[name];
  if (scores === undefined) {
    throw new Error(`rankSystems: the scorer returned no '${String(name)}' scores`);
  }
  return scores;
}
