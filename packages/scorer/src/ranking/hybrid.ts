import {
  BM25_DEFAULTS,
  Bm25Index,
  bm25BuildOptions,
  type Bm25BuildOptions,
  type Bm25Options,
} from '../bm25.js';
import { standardize } from '../fusion.js';
import type { SparseScorer } from '../scorer.js';
import { tieOrder, type TokenIndex } from '@bfe/index';
import type { CandidateGroup, RankQuery } from './groups.js';
import { checkTop, queryRowsOf, rankIds, type RankingSide, type Rankings } from './sides.js';

/**
 * The weights of the `hybrid` system (METHOD.md §8, "Lexical branch": bfe's extension, not
 * the paper's method): `w_pool·z_pool + w_sparse·z_sparse + w_bm25·z_bm25`, each branch
 * standardised over the query's candidates. On the simplex: each ≥ 0, summing to 1.
 */
export interface HybridWeights {
  readonly pooled: number;
  readonly sparse: number;
  readonly bm25: number;
}

/** How far from 1 the weights' sum may be (float rounding of a written-down simplex point). */
const SIMPLEX_TOLERANCE = 1e-9;

/**
 * Weights scaled onto the simplex: divided by their sum (a ranking does not change when
 * every weight is scaled by the same positive factor, so `{1, 1, 1}` means thirds).
 *
 * @throws Error when a weight is negative or not finite, or all are 0 (programmer errors;
 *   the experiment file's schema refuses them first).
 * @example
 * normalizeHybridWeights({ pooled: 1, sparse: 1, bm25: 2 }); // { pooled: 0.25, sparse: 0.25, bm25: 0.5 }
 */
export function normalizeHybridWeights(w: HybridWeights): HybridWeights {
  const values = [w.pooled, w.sparse, w.bm25];
  if (!values.every((x) => Number.isFinite(x) && x >= 0)) {
    throw new Error(`hybrid weights must be finite and ≥ 0, got ${JSON.stringify(w)}`);
  }
  const sum = w.pooled + w.sparse + w.bm25;
  if (!(sum > 0)) throw new Error('hybrid weights must not all be 0');
  return { pooled: w.pooled / sum, sparse: w.sparse / sum, bm25: w.bm25 / sum };
}

/**
 * The hybrid fusion of one query's three branches over the same candidates (aligned arrays):
 * `w.pooled·z(pooled) + w.sparse·z(sparse) + w.bm25·z(bm25)`, `z` the standardisation of
 * METHOD.md §3 (`standardize`: population σ floored at 1e-6, so a constant branch — a query
 * without content tokens, or without a word in common with any candidate — contributes 0).
 *
 * @throws Error when the lengths differ or the weights are off the simplex.
 * @example
 * fuseHybrid([1, 2, 3], [0, 0, 1], [3, 2, 1], { pooled: 0.5, sparse: 0, bm25: 0.5 }); // [0, 0, 0]
 */
export function fuseHybrid(
  pooled: ArrayLike<number>,
  sparse: ArrayLike<number>,
  bm25: ArrayLike<number>,
  w: HybridWeights,
): Float64Array {
  const n = pooled.length;
  if (sparse.length !== n || bm25.length !== n) {
    throw new Error(`fuseHybrid: ${n} pooled, ${sparse.length} sparse, ${bm25.length} bm25 scores`);
  }
  checkSimplex(w);
  const zp = standardize(pooled);
  const zs = standardize(sparse);
  const zb = standardize(bm25);
  const out = new Float64Array(n);
  for (let i = 0; i < n; i++) out[i] = w.pooled * zp[i]! + w.sparse * zs[i]! + w.bm25 * zb[i]!;
  return out;
}

/**
 * Every point of the simplex lattice with spacing `step` (`1/step` must be an integer `n`):
 * weights `(i/n, j/n, (n − i − j)/n)`, in order of `i` (pooled), then `j` (sparse), ascending;
 * `(n + 1)(n + 2)/2` points. The order is the selection's tie order (first best wins).
 *
 * @throws Error unless `1/step` is a positive integer (within 1e-9).
 * @example
 * simplexGrid(0.5);
 * // [{0, 0, 1}, {0, 0.5, 0.5}, {0, 1, 0}, {0.5, 0, 0.5}, {0.5, 0.5, 0}, {1, 0, 0}]
 */
export function simplexGrid(step: number): HybridWeights[] {
  const n = Math.round(1 / step);
  if (!(step > 0 && step <= 1) || Math.abs(n * step - 1) > 1e-9) {
    throw new Error(`simplexGrid: 1/step must be a positive integer, got step ${step}`);
  }
  const out: HybridWeights[] = [];
  for (let i = 0; i <= n; i++) {
    for (let j = 0; i + j <= n; j++)
      out.push({ pooled: i / n, sparse: j / n, bm25: (n - i - j) / n });
  }
  return out;
}

function checkSimplex(w: HybridWeights): void {
  const ok = [w.pooled, w.sparse, w.bm25].every((x) => Number.isFinite(x) && x >= 0);
  if (!ok || Math.abs(w.pooled + w.sparse + w.bm25 - 1) > SIMPLEX_TOLERANCE) {
    throw new Error(`hybrid weights must lie on the simplex, got ${JSON.stringify(w)}`);
  }
}

/**
 * One group's BM25 scores per query (aligned with `group.rows`), and the time they took;
 * `options` from `bm25BuildOptions` (language, and the corpus for corpus IDF).
 */
export function groupBm25(
  group: CandidateGroup<RankQuery>,
  memoryTexts: readonly string[],
  options: Bm25BuildOptions = {},
): { scores: Float64Array[]; indexSeconds: number; scoreSeconds: number } {
  const t0 = performance.now();
  const index = Bm25Index.build(
    Array.from(group.rows, (r) => memoryTexts[r] ?? ''),
    options,
  );
  const t1 = performance.now();
  const scores = group.queries.map((q) => {
    if (q.text === undefined) throw new Error(`query '${q.id}' has no text for BM25`);
    return index.score(q.text);
  });
  return {
    scores,
    indexSeconds: (t1 - t0) / 1000,
    scoreSeconds: (performance.now() - t1) / 1000,
  };
}

/** Inputs of {@link rankHybridGrid}. */
export interface HybridGridRankInput<Q extends RankQuery = RankQuery> {
  readonly memories: RankingSide;
  /** Each memory row's whole text, aligned with `memories`' rows (BM25 reads them). */
  readonly memoryTexts: readonly string[];
  readonly queries: RankingSide;
  /** From {@link groupByCandidates}; rankings come back in this order, group by group. */
  readonly groups: readonly CandidateGroup<Q>[];
  readonly k: number;
  /** The weights tried, each on the simplex (e.g. {@link simplexGrid}). */
  readonly grid: readonly HybridWeights[];
  /** Memory ids kept per ranking. */
  readonly top: number;
  /** Where the token proposals come from (`ScoreRequest.index`); default: exact float32. */
  readonly index?: TokenIndex;
  /** BM25's language and IDF; default {@link BM25_DEFAULTS}. */
  readonly bm25?: Bm25Options;
}

/**
 * The `hybrid` ranking at every point of a weight grid from one sparse search and one BM25
 * index per group: each query's pooled, sparse (tail floor, k clamped to a smaller candidate
 * bank) and BM25 scores are computed once, then fused and ranked per point — exactly the
 * `hybrid` ranking `rankSystems` gives at those weights. Reads no labels; the caller owns
 * `scorer`. Rankings come back in grid order.
 *
 * @example
 * const runs = await rankHybridGrid(scorer, { memories, memoryTexts, queries, groups, k: 64, grid: simplexGrid(0.25), top: 50 });
 * runs[0]?.get('q1'); // ['m7', 'm2', …], at the grid's first point
 */
export async function rankHybridGrid<Q extends RankQuery>(
  scorer: SparseScorer,
  input: HybridGridRankInput<Q>,
): Promise<Rankings[]> {
  const { memories, queries, groups, k, grid, top } = input;
  checkTop(top, 'rankHybridGrid');
  for (const w of grid) checkSimplex(w);
  const rowsOf = queryRowsOf(queries);
  const ties = tieOrder(memories.ids);
  const runs: Rankings[] = grid.map(() => new Map());
  const bm25 = bm25BuildOptions(input.bm25 ?? BM25_DEFAULTS, input.memoryTexts);
  for (const group of groups) {
    const scored = await scorer.score(
      {
        memories,
        queries,
        queryRows: rowsOf(group),
        candidates: group.rows,
        ...(input.index === undefined ? {} : { index: input.index }),
      },
      { k, maxsim: false, clampK: true },
    );
    const { scores: lexical } = groupBm25(group, input.memoryTexts, bm25);
    scored.forEach((s, i) => {
      const id = (group.queries[i] as Q).id;
      grid.forEach((w, g) => {
        const fused = fuseHybrid(s.systems.pooled, s.sparse, lexical[i]!, w);
        runs[g]!.set(id, rankIds(s.candidates, fused, ties, top));
      });
    });
  }
  return runs;
}
