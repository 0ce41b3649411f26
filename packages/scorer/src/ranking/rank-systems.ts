import { fuse } from '../fusion.js';
import type { QueryScores, SparseScorer } from '../scorer.js';
import { TieTally, tieOrder, type TieCounts, type TokenIndex } from '@bfe/index';
import type { TokenBank } from '../validate.js';
import type { CandidateGroup, RankQuery } from './groups.js';
import { BM25_DEFAULTS, bm25BuildOptions, type Bm25Options } from '../bm25.js';
import { fuseHybrid, groupBm25, type HybridWeights } from './hybrid.js';
import { checkTop, queryRowsOf, rankIds, type RankingSide, type Rankings } from './sides.js';
import {
  ADAPTED_SYSTEMS,
  HYBRID_SYSTEMS,
  SCORE_SYSTEMS,
  SWEEP_SYSTEMS,
  SYSTEMS,
  scoresOf,
  type RankingSystem,
  type SweepSystem,
  type SystemDescriptor,
} from './systems.js';

/** Inputs of {@link rankSystems}. */
export interface RankSystemsInput<Q extends RankQuery = RankQuery> {
  /** The memory token bank; its `ids` name the rankings. */
  readonly memories: RankingSide;
  /** Each memory row's text, aligned with `memories`' rows: read by BM25 only. */
  readonly memoryTexts?: readonly string[];
  /** BM25's language and IDF (`bm25` and the hybrid systems); default `BM25_DEFAULTS`. */
  readonly bm25?: Bm25Options;
  /** The query token bank; each group query's `id` is looked up in its `ids`. */
  readonly queries: RankingSide;
  /** From {@link groupByCandidates}; rankings come back in this order, group by group. */
  readonly groups: readonly CandidateGroup<Q>[];
  /**
   * Default: {@link SCORE_SYSTEMS}, plus {@link ADAPTED_SYSTEMS} when `adapted` is given, plus
   * `hybrid` when `hybrid` is given and `hybrid-selected` when it has `selected` weights.
   */
  readonly systems?: readonly RankingSystem[];
  /** The main k (top-k per query token, METHOD.md §2); clamped to a smaller candidate bank. */
  readonly k: number;
  readonly alpha: number;
  /** Further ks for the k-dependent systems ({@link SWEEP_SYSTEMS}); the main k may be among them. */
  readonly kSweep?: readonly number[];
  /** Memory ids kept per ranking. */
  readonly top: number;
  /**
   * The `adapted` system: sparse fusion at `alpha` with every query content token replaced by
   * the adapter's output (`queryTokens`, aligned with `queries.tokenVectors`). The pooled
   * query, the memory tokens and the pooled memories stay the bank's own (METHOD.md §4).
   * `adapted-zero-floor` is fused with `t_i = 0` at the main k: from `zeroFloor`'s query tokens
   * and α (its own validation selection) when given, else from this pass at `alpha`.
   */
  readonly adapted?: {
    readonly queryTokens: Float32Array;
    readonly alpha: number;
    /**
     * `adapted-zero-floor`'s own adapter output and α; the same `queryTokens` array as the
     * `adapted` system's shares its scorer pass.
     */
    readonly zeroFloor?: { readonly queryTokens: Float32Array; readonly alpha: number };
  };
  /**
   * The lexical-branch systems (METHOD.md §8): `hybrid` fuses the main-k pass's pooled and
   * sparse scores with BM25 at `weights`; `hybrid-selected` at `selected` (weights chosen on
   * validation by the caller). Both on the simplex (`normalizeHybridWeights`).
   */
  readonly hybrid?: { readonly weights: HybridWeights; readonly selected?: HybridWeights };
  /**
   * Where the token proposals come from (`ScoreRequest.index`: a codec or HNSW index over
   * `memories`' tokens) for every scorer pass; default: the exact float32 backend.
   */
  readonly index?: TokenIndex;
  /** Called after each group. */
  readonly onProgress?: (done: number, total: number) => void;
}

/** The k-dependent systems' rankings at one k. */
export interface SweepRankings {
  readonly k: number;
  /** Candidate groups whose bank held fewer than k tokens (searched whole). */
  readonly clampedGroups: number;
  readonly systems: ReadonlyMap<SweepSystem, Rankings>;
}

/** What {@link rankSystems} computed. */
export interface SystemRankings {
  /** Each system's rankings at the main k, in the order of `systems`. */
  readonly systems: ReadonlyMap<RankingSystem, Rankings>;
  /**
   * Per system of `systems`: how many ranked positions within the top 10 the tie order
   * decided (equal scores; see `tiedPositions`), over its queries.
   */
  readonly ties: ReadonlyMap<RankingSystem, TieCounts>;
  /**
   * Each distinct k of `kSweep`, in its order; the main k's rankings are the very maps of
   * `systems`.
   */
  readonly sweep: ReadonlyMap<number, SweepRankings>;
  readonly stats: RankingStats;
}

/** Counts and timings of one {@link rankSystems} call. */
export interface RankingStats {
  /** Distinct queries ranked. */
  readonly queries: number;
  readonly groups: number;
  /** Groups searched whole at the main k because their bank held fewer tokens. */
  readonly clampedGroups: number;
  /** Queries without content tokens: every token system fell back to pooled. */
  readonly pooledOnlyQueries: number;
  /**
   * Seconds: the scorer passes; BM25 in all (`bm25`) and the part spent building its indexes
   * (`bm25Index`; the rest is scoring the queries); the hybrid fusions and their rankings.
   */
  readonly seconds: {
    readonly scoring: number;
    readonly bm25: number;
    readonly bm25Index: number;
    readonly hybrid: number;
  };
}

/**
 * Ranks every group's queries with each system on exactly the same candidates: pooled,
 * MaxSim, sparse fusion and its ablations from one `SparseScorer.score` call per group and k
 * (k clamped to a smaller candidate bank), `adapted` from one more call with the adapter's
 * query tokens, BM25 from the candidates' texts. Rankings are `rankCandidates` orders (ties:
 * the seeded hash order of the memory ids, `tieOrder`), cut to `top`; tied positions within
 * the top 10 are counted per system. Reads no labels. The caller owns (opens and disposes)
 * `scorer`.
 *
 * @throws ArtifactCorruptError when a group's query is not a row of `queries`.
 * @throws ScorerInputError for a bad bank (see `SparseScorer.score`).
 * @example
 * const groups = groupByCandidates(bank.memories, queries); // [{ rows, ids, queries }]
 * const ranked = await rankSystems(scorer, {
 *   memories: { ...bank.memories, dim: bank.dim }, // tokenVectors Float32Array [N * 384]
 *   memoryTexts,
 *   queries: { ...bank.queries, dim: bank.dim },
 *   groups,
 *   k: 64,
 *   alpha: 0.5,
 *   kSweep: [16, 32, 64, 128],
 *   top: 50,
 * });
 * ranked.systems.get('sparse-fusion')?.get('q1'); // ['m7', 'm2', …], at most 50 ids
 * ranked.sweep.get(16)?.systems.get('zero-floor'); // Map query id → ranked ids at k = 16
 */
export async function rankSystems<Q extends RankQuery>(
  scorer: SparseScorer,
  input: RankSystemsInput<Q>,
): Promise<SystemRankings> {
  const { memories, queries, groups, k, alpha, top, adapted, hybrid } = input;
  checkTop(top, 'rankSystems');
  const names: readonly RankingSystem[] = input.systems ?? [
    ...SCORE_SYSTEMS,
    ...(adapted === undefined ? [] : ADAPTED_SYSTEMS),
    ...HYBRID_SYSTEMS.filter((n) => (n === 'hybrid' ? hybrid : hybrid?.selected) !== undefined),
  ];
  if (new Set(names).size !== names.length) {
    throw new Error(`rankSystems: systems repeat a name: ${names.join(', ')}`);
  }
  const sources = new Set(names.map((n) => SYSTEMS[n].source));
  if (sources.has('adapted') && adapted === undefined) {
    throw new Error('rankSystems: the adapted system needs adapted query tokens');
  }
  const memoryTexts = input.memoryTexts;
  const withBm25 = sources.has('bm25') || sources.has('hybrid');
  if (withBm25 && memoryTexts === undefined) {
    throw new Error('rankSystems: BM25 needs the memory texts');
  }
  const bm25Build =
    withBm25 && memoryTexts !== undefined
      ? bm25BuildOptions(input.bm25 ?? BM25_DEFAULTS, memoryTexts)
      : {};
  const hybridWeights = new Map<RankingSystem, HybridWeights>();
  for (const name of names.filter((n) => SYSTEMS[n].source === 'hybrid')) {
    const w = name === 'hybrid' ? hybrid?.weights : hybrid?.selected;
    if (w === undefined) throw new Error(`rankSystems: the ${name} system needs its weights`);
    hybridWeights.set(name, w);
  }
  const byScorer = names.filter((n) => SYSTEMS[n].source === 'scorer');
  const swept = SWEEP_SYSTEMS.filter((n) => names.includes(n));
  const sweepKs = swept.length === 0 ? [] : [...new Set(input.kSweep ?? [])];
  const scorerPasses = byScorer.length > 0 || sources.has('hybrid');
  const passKs = scorerPasses ? [k, ...sweepKs.filter((x) => x !== k)] : [];
  const withMaxsim = names.includes('maxsim') || names.includes('maxsim-fusion');
  const byAdapter = names.filter((n) => SYSTEMS[n].source === 'adapted');

  const runs = new Map<RankingSystem, Rankings>(names.map((n) => [n, new Map()]));
  const sweepRuns = new Map<number, Map<SweepSystem, Rankings>>(
    passKs.map((x) => [x, new Map(swept.map((n) => [n, x === k ? get(runs, n) : new Map()]))]),
  );
  const clamped = new Map<number, number>(passKs.map((x) => [x, 0]));
  const ties = tieOrder(memories.ids);
  const tallies = new Map<RankingSystem, TieTally>(names.map((n) => [n, new TieTally()]));
  const rowsOf = queryRowsOf(queries);
  // The adapter passes: the `adapted` system's query tokens, and `adapted-zero-floor`'s when it
  // has others (another selected epoch); each system fused at its own α.
  const adapterPasses: { queries: TokenBank; systems: [RankingSystem, number][] }[] = [];
  if (adapted !== undefined) {
    const zf = adapted.zeroFloor ?? adapted;
    const own = (name: RankingSystem): [RankingSystem, number] => [
      name,
      name === 'adapted-zero-floor' ? zf.alpha : adapted.alpha,
    ];
    const shared = zf.queryTokens === adapted.queryTokens;
    const first = byAdapter.filter((n) => shared || n === 'adapted').map(own);
    const second = shared ? [] : byAdapter.filter((n) => n === 'adapted-zero-floor').map(own);
    if (first.length > 0) {
      adapterPasses.push({
        queries: { ...queries, tokenVectors: adapted.queryTokens },
        systems: first,
      });
    }
    if (second.length > 0) {
      adapterPasses.push({
        queries: { ...queries, tokenVectors: zf.queryTokens },
        systems: second,
      });
    }
  }
  let pooledOnly = 0;
  let scoringSeconds = 0;
  let bm25Seconds = 0;
  let bm25IndexSeconds = 0;
  let hybridSeconds = 0;

  for (let g = 0; g < groups.length; g++) {
    const group = groups[g] as CandidateGroup<Q>;
    // The main-k pass's scores, kept for the hybrid systems' fusion below.
    let mainScores: QueryScores[] | undefined;
    const request = {
      memories,
      queries,
      queryRows: rowsOf(group),
      candidates: group.rows,
      ...(input.index === undefined ? {} : { index: input.index }),
    };
    for (const kk of passKs) {
      const main = kk === k;
      const t0 = performance.now();
      const scored: QueryScores[] = await scorer.score(request, {
        k: kk,
        alpha,
        maxsim: main && withMaxsim,
        clampK: true,
      });
      scoringSeconds += (performance.now() - t0) / 1000;
      if ((scored[0] as QueryScores).k < kk) clamped.set(kk, get(clamped, kk) + 1);
      const perSystem = get(sweepRuns, kk);
      if (main && hybridWeights.size > 0) mainScores = scored;
      scored.forEach((s, i) => {
        const id = (group.queries[i] as Q).id;
        for (const name of swept) {
          const tally = main ? get(tallies, name) : undefined;
          const scores = scoresOf(SYSTEMS[name], s);
          get(perSystem, name).set(id, rankIds(s.candidates, scores, ties, top, tally));
        }
        if (!main) return;
        if (s.pooledOnly) pooledOnly += 1;
        for (const name of byScorer) {
          if (SYSTEMS[name].sweepsK) continue; // ranked above, into the same map
          const scores = scoresOf(SYSTEMS[name], s);
          get(runs, name).set(id, rankIds(s.candidates, scores, ties, top, get(tallies, name)));
        }
      });
    }
    for (const pass of adapterPasses) {
      const t1 = performance.now();
      const scored = await scorer.score(
        { ...request, queries: pass.queries },
        { k, alpha: adapted?.alpha ?? alpha, maxsim: false, clampK: true },
      );
      scoringSeconds += (performance.now() - t1) / 1000;
      scored.forEach((s, i) => {
        for (const [name, a] of pass.systems) {
          const scores = adapterScores(SYSTEMS[name], s, a);
          const ranking = rankIds(s.candidates, scores, ties, top, get(tallies, name));
          get(runs, name).set((group.queries[i] as Q).id, ranking);
        }
      });
    }
    if (memoryTexts !== undefined && withBm25) {
      const t0 = performance.now();
      const { scores: bm25, indexSeconds } = groupBm25(group, memoryTexts, bm25Build);
      bm25IndexSeconds += indexSeconds;
      if (sources.has('bm25')) {
        const into = get(runs, 'bm25');
        group.queries.forEach((q, i) =>
          into.set(
            q.id,
            rankIds(group.rows, bm25[i] as Float64Array, ties, top, get(tallies, 'bm25')),
          ),
        );
      }
      const t1 = performance.now();
      bm25Seconds += (t1 - t0) / 1000;
      for (const [name, w] of hybridWeights) {
        if (mainScores === undefined) throw new Error('rankSystems: no main-k scores for hybrid');
        mainScores.forEach((s, i) => {
          const fused = fuseHybrid(s.systems.pooled, s.sparse, bm25[i] as Float64Array, w);
          const ranking = rankIds(s.candidates, fused, ties, top, get(tallies, name));
          get(runs, name).set((group.queries[i] as Q).id, ranking);
        });
      }
      hybridSeconds += (performance.now() - t1) / 1000;
    }
    input.onProgress?.(g + 1, groups.length);
  }

  const ranked = new Set<string>();
  for (const group of groups) for (const q of group.queries) ranked.add(q.id);
  return {
    systems: runs,
    ties: new Map(names.map((n) => [n, get(tallies, n).counts()])),
    sweep: new Map(
      sweepKs.map((x) => [x, { k: x, clampedGroups: get(clamped, x), systems: get(sweepRuns, x) }]),
    ),
    stats: {
      queries: ranked.size,
      groups: groups.length,
      clampedGroups: clamped.get(k) ?? 0,
      pooledOnlyQueries: pooledOnly,
      seconds: {
        scoring: scoringSeconds,
        bm25: bm25Seconds,
        bm25Index: bm25IndexSeconds,
        hybrid: hybridSeconds,
      },
    },
  };
}

/**
 * An adapter system's scores at its own α: the scorer's fusion of the pass's tail-floor or
 * zero-floor sparse scores (pooled alone for a query without content tokens), as
 * `SparseScorer.score` fuses them at that α.
 */
function adapterScores(system: SystemDescriptor, s: QueryScores, alpha: number): Float64Array {
  if (s.pooledOnly) return s.systems.pooled;
  const sparse = system.scores === 'zero-floor' ? s.sparseZeroFloor : s.sparse;
  return fuse(s.systems.pooled, sparse, alpha);
}

/** `map.get(key)` for a key set up front. */
function get<K, V>(map: ReadonlyMap<K, V>, key: K): V {
  const value = map.get(key);
  if (value === undefined) throw new Error(`rankSystems: no entry for ${String(key)}`);
  return value;
}
