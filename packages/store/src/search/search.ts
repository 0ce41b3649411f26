import { z } from 'zod';
import { ConfigError } from '@bfe/core';
import { adapterQueryTransform, type AdapterParams } from '@bfe/adapter';
import {
  ScorerInputError,
  tieOrder,
  type SimilarityKernel,
  type TokenIndex,
  type TieOrder,
} from '@bfe/index';
import {
  SYSTEMS,
  explainCandidates,
  groupByCandidates,
  parseScoreOptions,
  rankCandidates,
  type EvidenceMatching,
  type SparseScorer,
  type SystemName,
} from '@bfe/scorer';
import { hybridEvidence, hybridPass } from './search-hybrid.js';
import { withPieces, type SearchEvidence } from './evidence-pieces.js';

export type { EvidenceToken, SearchEvidence } from './evidence-pieces.js';
import { calibrationFor, relevance, relevanceCalibrationSchema } from './relevance.js';
import { remoteBests } from './search-bests.js';
import {
  candidateRanks,
  interventionsOptionSchema,
  searchInterventions,
  type SearchInterventions,
} from './search-interventions.js';
import type { BankView, EncodedTexts, MemoryMeta } from '../types.js';
import { viewTokens } from '../view-tokens.js';

import { SEARCH_SYSTEMS, type SearchSystem } from './systems.js';

export { SEARCH_SYSTEMS, type SearchSystem };

/** Opens a token index over a view's memory tokens, on the scorer's kernel (large banks). */
export type TokenIndexFactory = (
  view: BankView,
  kernel: SimilarityKernel,
) => TokenIndex | Promise<TokenIndex>;

export type { BestsIndex } from './search-bests.js';

/** How each system's score is explained: its token-level score and whether it fuses. */
const MATCHING: Readonly<Record<SearchSystem, { matching: EvidenceMatching; fused: boolean }>> = {
  'sparse-fusion': { matching: 'tail', fused: true },
  'no-fusion': { matching: 'tail', fused: true },
  'zero-floor': { matching: 'zero', fused: true },
  pooled: { matching: 'none', fused: true },
  maxsim: { matching: 'maxsim', fused: false },
  'maxsim-fusion': { matching: 'maxsim', fused: true },
  // The sparse branch of hybrid is the tail-floor one; the fusion adds BM25 (search-hybrid.ts).
  hybrid: { matching: 'tail', fused: true },
};

/** The systems an adapter may change: those of the experiment's adapted pass (METHOD.md §4). */
const ADAPTABLE: ReadonlySet<SearchSystem> = new Set(['sparse-fusion', 'no-fusion', 'zero-floor']);

const scorerDefaults = parseScoreOptions({});
const weightSchema = z.number().min(0).max(1e6);
const isFunction = (v: unknown): boolean => typeof v === 'function';
const isAdapter = (v: unknown): boolean => {
  const a = v as Partial<AdapterParams> | null;
  return (
    typeof a === 'object' &&
    a !== null &&
    Number.isInteger(a.dim) &&
    Number.isInteger(a.rank) &&
    ArrayBuffer.isView(a.a) &&
    ArrayBuffer.isView(a.b)
  );
};

/**
 * A search's settings, defaults as in experiments: token k 64 and α 0.5 (the scorer's own
 * defaults), ties by the seeded hash of the memory id.
 */
export const searchOptionsSchema = z
  .strictObject({
    /** Results returned. */
    k: z.number().int().min(1).default(10),
    system: z.enum(SEARCH_SYSTEMS).default('sparse-fusion'),
    /** Weight of the standardised pooled branch. */
    alpha: z.number().min(0).max(1).default(scorerDefaults.alpha),
    /** Bank tokens proposed per query token (METHOD.md §2), clamped to a smaller bank. */
    tokenK: z.number().int().min(1).default(scorerDefaults.k),
    /** A query adapter (`@bfe/adapter`), applied to the query's content tokens only. */
    adapter: z.custom<AdapterParams>(isAdapter, 'an adapter: { dim, rank, a, b }').optional(),
    /** Attach token evidence to each result. */
    explain: z.boolean().default(true),
    /** Vocabulary piece of a token id (`Embedder.tokenText`): evidence then names tokens. */
    tokenText: z.custom<(id: number) => string>(isFunction, 'a function').optional(),
    /** Token index for large banks; default: the exact search over the view's tokens. */
    index: z.custom<TokenIndexFactory>(isFunction, 'a function').optional(),
    /** Token interventions on one memory (Appendix D): see `searchViewWithInterventions`. */
    interventions: interventionsOptionSchema.optional(),
    /** `hybrid`: the query's text, which BM25 reads (`MemoryStore.search` passes its query). */
    queryText: z.string().optional(),
    /** `hybrid`: the branches' weights (≥ 0, scaled to sum 1); default thirds. */
    weights: z
      .strictObject({ pooled: weightSchema, sparse: weightSchema, bm25: weightSchema })
      .refine((w) => w.pooled + w.sparse + w.bm25 > 0, 'the weights must not all be 0')
      .optional(),
    /** `hybrid`: BM25's language for a view without a store lexicon (default `none`). */
    bm25Language: z.enum(['english', 'none']).optional(),
    /**
     * Return only memories whose calibrated `relevance` is at least this (up to `k` of them, in
     * rank order): fewer or none when nothing in the bank looks relevant.
     */
    minScore: z.number().min(0).max(1).optional(),
    /** The relevance calibration; default the shipped one fitted with the bank's encoder. */
    calibration: relevanceCalibrationSchema.optional(),
  })
  .refine((o) => o.weights === undefined || o.system === 'hybrid', {
    message: 'weights are the hybrid system’s',
    path: ['weights'],
  })
  .refine((o) => o.adapter === undefined || ADAPTABLE.has(o.system), {
    message: `an adapter changes only the sparse systems: ${[...ADAPTABLE].join(', ')}`,
    path: ['adapter'],
  })
  .refine((o) => o.interventions === undefined || ADAPTABLE.has(o.system), {
    message: `interventions edit the sparse systems' scores: ${[...ADAPTABLE].join(', ')}`,
    path: ['interventions'],
  });

/** Search settings as a caller writes them. */
export type SearchOptions = z.input<typeof searchOptionsSchema>;
/** Search settings with defaults filled in. */
export type ResolvedSearchOptions = z.output<typeof searchOptionsSchema>;

/**
 * Parses search settings.
 * @throws {ConfigError} naming each bad field.
 * @example
 * parseSearchOptions({ k: 5 }); // { k: 5, system: 'sparse-fusion', alpha: 0.5, tokenK: 64, explain: true }
 */
export function parseSearchOptions(options: unknown = {}): ResolvedSearchOptions {
  const parsed = searchOptionsSchema.safeParse(options);
  if (!parsed.success) throw new ConfigError(`search options: ${z.prettifyError(parsed.error)}`);
  return parsed.data;
}

/** One ranked memory. */
export interface SearchResult {
  readonly id: string;
  /** 1 for the best. */
  readonly rank: number;
  /** The system's score. */
  readonly score: number;
  /** `p_q·p_m`. */
  readonly pooled: number;
  /**
   * The memory's rank by `pooled` over the whole bank (1 for the best; ties as the `pooled`
   * system breaks them): its rank in a `system: 'pooled'` search, however deep.
   */
  readonly pooledRank: number;
  /** The token-level score the system uses (`s_sparse`, zero-floor, or MaxSim). */
  readonly sparse: number;
  /**
   * Calibrated `P(relevant)` from the absolute `pooled` and tail-floor `s_sparse` scores
   * (`relevance.ts`): comparable across queries, unlike `score`. Absent when no calibration
   * fits the bank's encoder.
   */
  readonly relevance?: number;
  readonly text: string;
  readonly meta: MemoryMeta | undefined;
  /** Present unless `explain: false`. */
  readonly evidence?: SearchEvidence;
}

/** Per ids array (a view's, immutable): its tie order and its rows in that order. */
const candidatesOf = new WeakMap<readonly string[], { ties: TieOrder; rows: Int32Array }>();

function candidates(ids: readonly string[]): { ties: TieOrder; rows: Int32Array } {
  let c = candidatesOf.get(ids);
  if (c === undefined) {
    // The experiment's own grouping: candidate rows in the tie order, so every sum over them
    // runs in the same order as `bfe score`'s.
    const [group] = groupByCandidates({ ids }, [{ id: 'query', candidateIds: ids }]);
    c = { ties: tieOrder(ids), rows: group!.rows };
    candidatesOf.set(ids, c);
  }
  return c;
}

/**
 * Ranks a bank's memories for one encoded query with one of the experiment's systems — the
 * same scorer pass, candidate order and tie order as `bfe score`, so a store and an experiment
 * over the same vectors rank identically — and explains the top `k` (`explainCandidates`:
 * token matches, floors, shares, the fused decomposition). An adapter replaces the query's
 * content tokens only (the pooled query and the memories stay the bank's). The caller owns
 * `scorer`.
 *
 * @throws {ConfigError} for bad options.
 * @throws {ScorerInputError} for a query that is not one text, or a query and bank from
 *   different encoders (dimension).
 * @example
 * const query = await embedder.encode(['when did Caroline go hiking?'], 'query');
 * const results = await searchView(view, query, { k: 5, tokenText: (id) => embedder.tokenText(id) }, scorer);
 * results[0]; // { id: 'conv-1:D3:4', rank: 1, score: 1.93, pooled: 0.61, sparse: 0.58, evidence: { tokens: [...] }, … }
 */
export async function searchView(
  view: BankView,
  query: EncodedTexts,
  options: SearchOptions,
  scorer: SparseScorer,
): Promise<SearchResult[]> {
  return (await searchViewWithInterventions(view, query, options, scorer)).results;
}

/**
 * {@link searchView} and, with `options.interventions`, the token interventions on one memory
 * from the same scorer pass (`searchInterventions`).
 */
export async function searchViewWithInterventions(
  view: BankView,
  query: EncodedTexts,
  options: SearchOptions,
  scorer: SparseScorer,
): Promise<{ results: SearchResult[]; interventions?: SearchInterventions }> {
  const opts = parseSearchOptions(options);
  if (query.count !== 1) {
    throw new ScorerInputError('bad-query-rows', `a search takes one query, got ${query.count}`);
  }
  if (view.ids.length === 0) {
    if (opts.interventions !== undefined) throw new ConfigError('interventions: the bank is empty');
    return { results: [] };
  }
  const { dim } = view;
  const nq = query.tokenOffsets[1]! - query.tokenOffsets[0]!;
  const queryTokens =
    opts.adapter === undefined || nq === 0
      ? query.tokenVectors
      : adapterQueryTransform(opts.adapter)(query.tokenVectors, nq, query.dim);
  const memories = {
    dim,
    tokens: viewTokens(view),
    tokenOffsets: view.tokenOffsets,
    pooled: view.pooled,
    ids: view.ids,
  };
  const queries = {
    dim: query.dim,
    tokenVectors: queryTokens,
    tokenOffsets: query.tokenOffsets,
    pooled: query.pooled,
    ids: ['query'],
  };
  const { ties, rows } = candidates(view.ids);
  const system = SYSTEMS[opts.system];
  const index = opts.index === undefined ? undefined : await opts.index(view, scorer.kernel);
  const [scores] = await scorer.score(
    {
      memories,
      queries,
      queryRows: [0],
      candidates: rows,
      ...(index === undefined ? {} : { index }),
    },
    {
      k: opts.tokenK,
      alpha: opts.alpha,
      maxsim: MATCHING[opts.system].matching === 'maxsim',
      clampK: true,
      keepHits: opts.explain || opts.interventions !== undefined,
    },
  );
  const s = scores!;
  const hybrid = opts.system === 'hybrid' ? hybridPass(view, s, opts) : undefined;
  const values = hybrid?.scores ?? s.systems[system.scores as SystemName]!;
  const ranked = rankCandidates(s.candidates, values, ties);
  const calibration = calibrationFor(view.model, opts.calibration);
  if (opts.minScore !== undefined && calibration === undefined) {
    throw new ConfigError(
      `minScore: no relevance calibration fits model ${view.model}; pass one as calibration`,
    );
  }
  const relevanceOf =
    calibration === undefined
      ? undefined
      : (g: number): number => relevance(calibration, s.systems.pooled[g]!, s.sparse[g]!);
  const top = topCandidates(ranked.order, opts.k, opts.minScore, relevanceOf);
  const { matching, fused } = MATCHING[opts.system];
  const tokenLevel =
    matching === 'zero' ? s.sparseZeroFloor : matching === 'maxsim' ? s.systems.maxsim! : s.sparse;
  const explained = queryTokens.subarray(
    query.tokenOffsets[0]! * dim,
    query.tokenOffsets[1]! * dim,
  );
  const bests =
    opts.explain && matching !== 'none'
      ? await remoteBests(index, s, memories, explained, top)
      : undefined;
  const evidence = opts.explain
    ? explainCandidates(
        {
          scores: s,
          memories,
          queryTokens: explained,
          matching,
          alpha: opts.system === 'no-fusion' ? 0 : opts.alpha,
          fused,
          ...(bests === undefined ? {} : { bests }),
        },
        top,
      )
    : undefined;
  const interventions =
    opts.interventions &&
    searchInterventions(
      { scores: s, matching: matching === 'zero' ? 'zero' : 'tail', ties, view, query },
      { alpha: opts.system === 'no-fusion' ? 0 : opts.alpha, order: ranked.order },
      opts,
    );
  const pooledRanks = candidateRanks(top, s.candidates, s.systems.pooled, ties);
  const results = top.map((g, i) => {
    const row = s.candidates[g]!;
    const explained = evidence?.[i];
    const e =
      hybrid === undefined || explained === undefined
        ? explained
        : hybridEvidence(explained, hybrid, view.ids[row]!);
    return {
      id: view.ids[row]!,
      rank: i + 1,
      score: values[g]!,
      pooled: s.systems.pooled[g]!,
      pooledRank: pooledRanks[i]!,
      sparse: tokenLevel[g]!,
      ...(relevanceOf === undefined ? {} : { relevance: relevanceOf(g) }),
      text: view.texts[row]!,
      meta: view.metas[row],
      ...(e === undefined ? {} : { evidence: withPieces(e, opts, view, query) }),
    };
  });
  return interventions === undefined ? { results } : { results, interventions };
}

/** The first `k` candidates in rank order, those under `minScore` passed over. */
function topCandidates(
  order: Int32Array,
  k: number,
  minScore: number | undefined,
  relevanceOf: ((g: number) => number) | undefined,
): number[] {
  if (minScore === undefined || relevanceOf === undefined) {
    return Array.from(order.subarray(0, Math.min(k, order.length)));
  }
  const top: number[] = [];
  for (let i = 0; i < order.length && top.length < k; i++) {
    if (relevanceOf(order[i]!) >= minScore) top.push(order[i]!);
  }
  return top;
}
