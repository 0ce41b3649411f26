import { ConfigError } from '@bfe/core';
import {
  ExactTokenIndex,
  JsSimilarityKernel,
  OrtSimilarityKernel,
  ScorerInputError,
  dot64,
  firstNonFinite,
  type SimilarityKernel,
  type TokenHits,
  type TokenIndex,
} from '@bfe/index';
import { fuse } from './fusion.js';
import { keepHits, type QueryHits } from './hits.js';
import { parseScoreOptions, type ScoreOptions } from './options.js';
import {
  checkBank,
  tokenStoreOf,
  tokenVectorsOf,
  checkCandidates,
  checkPair,
  checkQueryRows,
  type TokenBank,
} from './validate.js';

/** The systems the scorer ranks with (METHOD.md §6 names). */
export type SystemName = keyof SystemScores;

/** Final per-candidate scores of each system, aligned with {@link QueryScores.candidates}. */
export interface SystemScores {
  /** Pooled cosine `p_q·p_m`. */
  readonly pooled: Float64Array;
  /** Exhaustive token MaxSim `(1/n_q) Σ_i max_j h_{q,i}·h_{m,j}`; present when asked for. */
  readonly maxsim?: Float64Array;
  /** `α·z(pooled) + (1−α)·z(sparse)` with the tail floor (METHOD.md §3). */
  readonly 'sparse-fusion': Float64Array;
  /** The same fusion with `t_i = 0` (ablation). */
  readonly 'zero-floor': Float64Array;
  /** `z(sparse)` alone, `α = 0` (ablation). */
  readonly 'no-fusion': Float64Array;
  /** `α·z(pooled) + (1−α)·z(maxsim)`: MaxSim in place of sparse matching (ablation); with it. */
  readonly 'maxsim-fusion'?: Float64Array;
}

/** Everything the scorer computed for one query over its candidates. */
export interface QueryScores {
  /** The query's row in the query bank. */
  readonly queryRow: number;
  /** Candidate memory rows, in the order the request listed them. */
  readonly candidates: Int32Array;
  /** `n_q`, the query's content tokens. */
  readonly nQueryTokens: number;
  /**
   * The query has no content tokens: the sparse branches are 0 and every system (MaxSim and
   * the ablations included) ranks by the pooled score.
   */
  readonly pooledOnly: boolean;
  /** Bank tokens returned per query token: the requested k, or the bank size when clamped. */
  readonly k: number;
  /** `t_i = max(0, min returned score)` per query token, `[n_q]`. */
  readonly tailFloor: Float64Array;
  /** `s_sparse(q, m)` with the tail floor (METHOD.md §2), unstandardised. */
  readonly sparse: Float64Array;
  /** `s_sparse(q, m)` with `t_i = 0`, unstandardised. */
  readonly sparseZeroFloor: Float64Array;
  readonly systems: SystemScores;
  /**
   * The token proposals the scores were computed from; present when `keepHits` was asked for
   * and the query has content tokens (see {@link QueryHits}).
   */
  readonly hits?: QueryHits;
}

/** One scoring pass: queries that share one candidate set of memories. */
export interface ScoreRequest {
  readonly memories: TokenBank;
  readonly queries: TokenBank;
  /** Rows of `queries` to score; all of them rank the same candidates. */
  readonly queryRows: ArrayLike<number>;
  /** Distinct rows of `memories`: the candidate set (METHOD.md §6: each query's own). */
  readonly candidates: ArrayLike<number>;
  /**
   * Where the token proposals come from: an index over `memories`' tokens (default: the exact
   * backend on the scorer's kernel). The tail floor and aggregation read its hits as returned.
   */
  readonly index?: TokenIndex;
}

/** How the scorer computes inner products and top-k. */
export interface ScorerOptions {
  /** `'onnxruntime'` (default), `'js'` (the plain reference kernel) or a kernel instance. */
  readonly kernel?: 'onnxruntime' | 'js' | SimilarityKernel;
  /** onnxruntime intra-op threads (default: one per physical core). */
  readonly threads?: number;
  /** Let onnxruntime's idle threads spin (default true). */
  readonly spin?: boolean;
  /** onnxruntime's execution provider: `'cpu'` (default) or `'webgpu'` (the GPU scorer). */
  readonly executionProvider?: 'cpu' | 'webgpu';
}

/**
 * The exact CPU sparse scorer of METHOD.md §2–3. For a batch of queries sharing a candidate
 * set it concatenates their content tokens `Q [Σn_q × d]`, streams the candidates' tokens
 * `X [N × d]` through one kernel pass — exact top-k per query token (and, for the MaxSim
 * baseline, each memory's best token, from the same products) — then, per query:
 *
 * - rescores the `n_q × k` returned hits in float64 (so scores are exact for the selected set),
 * - `t_i = max(0, min returned score)`,
 * - aggregates by memory in one scatter pass over the hits (never a per-memory MaxSim loop):
 *   `s_sparse = mean_i t_i + (1/n_q) Σ_i max(0, best_i(m) − t_i)`, which equals
 *   `(1/n_q) Σ_i max(t_i, best_i(m))` with `best_i(m) = −∞` for no hit,
 * - pooled `p_q·p_m` for every candidate, population-σ standardisation, fusion with α.
 *
 * @example
 * const scorer = await SparseScorer.open();
 * const [scores] = await scorer.score(
 *   {
 *     memories: { ...bank.memories, dim: bank.dim }, // tokenVectors Float32Array [N * 384]
 *     queries: { ...bank.queries, dim: bank.dim },
 *     queryRows: [0],
 *     candidates: [0, 1, 2, 3], // memory rows
 *   },
 *   { k: 64, alpha: 0.5 },
 * );
 * scores.systems['sparse-fusion']; // Float64Array [4], aligned with scores.candidates
 * rankCandidates(scores.candidates, scores.systems['sparse-fusion']).rows; // best first
 * await scorer.dispose();
 */
export class SparseScorer {
  readonly kernel: SimilarityKernel;

  private constructor(kernel: SimilarityKernel) {
    this.kernel = kernel;
  }

  /** Opens a scorer; the onnxruntime kernel is loaded only when asked for. */
  static async open(options: ScorerOptions = {}): Promise<SparseScorer> {
    const k = options.kernel ?? 'onnxruntime';
    if (typeof k !== 'string') return new SparseScorer(k);
    if (k === 'js') {
      if ((options.executionProvider ?? 'cpu') !== 'cpu') {
        throw new ConfigError(
          `the 'js' kernel runs on the CPU only; executionProvider '${options.executionProvider}' needs kernel 'onnxruntime'`,
        );
      }
      return new SparseScorer(new JsSimilarityKernel());
    }
    if (k !== 'onnxruntime') throw new Error(`SparseScorer.open: unknown kernel '${String(k)}'`);
    return new SparseScorer(
      new OrtSimilarityKernel({
        ...(options.threads === undefined ? {} : { threads: options.threads }),
        ...(options.spin === undefined ? {} : { spin: options.spin }),
        ...(options.executionProvider === undefined
          ? {}
          : { executionProvider: options.executionProvider }),
      }),
    );
  }

  /**
   * Scores every query of `request.queryRows` against the shared candidate set, in one pass
   * over the candidates' tokens. Results come back in `queryRows` order.
   *
   * @throws {ScorerInputError} for a dimension or model mismatch, NaN/Inf vectors, candidates
   *   without content tokens (`empty-bank`), `k` larger than the candidates' tokens
   *   (`k-exceeds-bank`, unless `clampK`), bad offsets or row indices.
   * @throws {ConfigError} for bad options.
   */
  async score(request: ScoreRequest, options: ScoreOptions = {}): Promise<QueryScores[]> {
    const opts = parseScoreOptions(options);
    const { memories, queries } = request;
    checkPair(memories, queries);
    const memoryCount = checkBank(memories, 'memories');
    const queryCount = checkBank(queries, 'queries');
    const dim = memories.dim;
    const { given, sorted, givenOf } = checkCandidates(request.candidates, memoryCount);
    const queryRows = checkQueryRows(request.queryRows, queryCount);
    const memoryName = (row: number): string => rowName('memory', row, memories.ids);
    const queryName = (row: number): string => rowName('query', row, queries.ids);

    const { q, qStart } = gatherQueryTokens(queries, queryRows, queryName);
    const totalRows = qStart[queryRows.length]!;
    const m = given.length;
    let hits: TokenHits | undefined;
    let exact = false;
    if (totalRows > 0) {
      let candidateTokens = 0;
      for (const row of sorted)
        candidateTokens += memories.tokenOffsets[row + 1]! - memories.tokenOffsets[row]!;
      if (candidateTokens === 0) {
        throw new ScorerInputError(
          'empty-bank',
          `the ${m} candidate memories of ${describeRows(queryRows, queryName)} hold no content tokens`,
          { suggestion: 'Check the candidate set; memories need encoded content tokens.' },
        );
      }
      const index =
        request.index ??
        new ExactTokenIndex(
          {
            tokens: tokenStoreOf(memories),
            tokenOffsets: memories.tokenOffsets,
            ...(memories.ids === undefined ? {} : { ids: memories.ids }),
          },
          this.kernel,
        );
      // The exact fp32 backend's hits are the float64 top-k (the evidence reads bests from them).
      exact = index.backend === 'exact' && index.codec === 'fp32';
      hits = await index.search(q, totalRows, opts.k, {
        memories: sorted,
        chunkSize: opts.chunkSize,
        maxScoreFloats: opts.maxScoreFloats,
        clampK: opts.clampK,
        bestPerMemory: opts.maxsim,
        describeMemory: memoryName,
      });
      if (opts.maxsim && hits.best === undefined) {
        throw new ConfigError(
          `the ${index.backend} index returns no per-memory best similarities; MaxSim needs the exact backend`,
        );
      }
    }
    const best = hits?.best;

    const results: QueryScores[] = [];
    const stamp = new Int32Array(m).fill(-1);
    const k = hits?.k ?? opts.k;
    for (let qi = 0; qi < queryRows.length; qi++) {
      const queryRow = queryRows[qi]!;
      const pooled = pooledScores(queries.pooled, queryRow, memories.pooled, given, dim);
      const rowStart = qStart[qi]!;
      const nq = qStart[qi + 1]! - rowStart;
      if (nq === 0 || hits === undefined) {
        results.push({
          queryRow,
          candidates: given,
          nQueryTokens: 0,
          pooledOnly: true,
          k,
          tailFloor: new Float64Array(0),
          sparse: new Float64Array(m),
          sparseZeroFloor: new Float64Array(m),
          systems: {
            pooled,
            ...(opts.maxsim ? { maxsim: pooled.slice(), 'maxsim-fusion': pooled.slice() } : {}),
            'sparse-fusion': pooled.slice(),
            'zero-floor': pooled.slice(),
            'no-fusion': pooled.slice(),
          },
        });
        continue;
      }
      const tailFloor = new Float64Array(nq);
      const gain = new Float64Array(m);
      const gainZero = new Float64Array(m);
      let tailSum = 0;
      for (let i = 0; i < nq; i++) {
        const row = rowStart + i;
        // Hits are sorted by float64 score descending: the last is the minimum (the tail floor,
        // unless the backend returns a floor of its own: the clustered index's WARP estimate),
        // and a memory's first hit in the row is its best one.
        const t = Math.max(0, hits.floor?.[row] ?? hits.values[row * k + k - 1]!);
        tailFloor[i] = t;
        tailSum += t;
        // The scatter pass: each memory's best hit for this token, as a gain over the floor.
        for (let h = 0; h < k; h++) {
          const slot = hits.slots[row * k + h]!;
          if (stamp[slot] === row) continue;
          stamp[slot] = row;
          const s = hits.values[row * k + h]!;
          const g = givenOf[slot]!;
          if (s > t) gain[g]! += s - t;
          if (s > 0) gainZero[g]! += s;
        }
      }
      const sparse = new Float64Array(m);
      const sparseZeroFloor = new Float64Array(m);
      for (let g = 0; g < m; g++) {
        sparse[g] = (tailSum + gain[g]!) / nq;
        sparseZeroFloor[g] = gainZero[g]! / nq;
      }
      const maxsim = best === undefined ? undefined : maxSimScores(best, rowStart, nq, m, givenOf);
      const kept = opts.keepHits ? keepHits(hits, rowStart, nq, m, givenOf, exact) : undefined;
      results.push({
        queryRow,
        candidates: given,
        nQueryTokens: nq,
        pooledOnly: false,
        k,
        tailFloor,
        sparse,
        sparseZeroFloor,
        systems: {
          pooled,
          ...(maxsim === undefined
            ? {}
            : { maxsim, 'maxsim-fusion': fuse(pooled, maxsim, opts.alpha) }),
          'sparse-fusion': fuse(pooled, sparse, opts.alpha),
          'zero-floor': fuse(pooled, sparseZeroFloor, opts.alpha),
          'no-fusion': fuse(pooled, sparse, 0),
        },
        ...(kept === undefined ? {} : { hits: kept }),
      });
    }
    return results;
  }

  async dispose(): Promise<void> {
    await this.kernel.dispose();
  }
}

function rowName(kind: string, row: number, ids: readonly string[] | undefined): string {
  const id = ids?.[row];
  return id === undefined ? `${kind} row ${row}` : `${kind} row ${row} (${id})`;
}

function describeRows(rows: Int32Array, name: (row: number) => string): string {
  const shown = Array.from(rows.subarray(0, 3), name).join(', ');
  return rows.length > 3 ? `${shown} and ${rows.length - 3} more` : shown;
}

/** Concatenates the query rows' content tokens `[Σn_q × dim]`, refusing NaN/Inf components. */
function gatherQueryTokens(
  queries: TokenBank,
  rows: Int32Array,
  name: (row: number) => string,
): { q: Float32Array; qStart: Int32Array } {
  const { dim, tokenOffsets } = queries;
  const tokenVectors = tokenVectorsOf(queries, 'queries');
  const qStart = new Int32Array(rows.length + 1);
  for (let i = 0; i < rows.length; i++) {
    const r = rows[i]!;
    qStart[i + 1] = qStart[i]! + tokenOffsets[r + 1]! - tokenOffsets[r]!;
  }
  const q = new Float32Array(qStart[rows.length]! * dim);
  for (let i = 0; i < rows.length; i++) {
    const r = rows[i]!;
    const from = tokenOffsets[r]!;
    const to = tokenOffsets[r + 1]!;
    for (let t = from; t < to; t++) {
      const bad = firstNonFinite(tokenVectors, t * dim, dim);
      if (bad >= 0) {
        throw new ScorerInputError(
          'non-finite',
          `token ${t - from} of ${name(r)} has a non-finite component (${tokenVectors[t * dim + bad]} at dimension ${bad})`,
        );
      }
    }
    q.set(tokenVectors.subarray(from * dim, to * dim), qStart[i]! * dim);
  }
  return { q, qStart };
}

/** `p_q·p_m` in float64 for every candidate, in the given order. */
function pooledScores(
  queryPooled: Float32Array,
  queryRow: number,
  memoryPooled: Float32Array,
  candidates: Int32Array,
  dim: number,
): Float64Array {
  const out = new Float64Array(candidates.length);
  for (let g = 0; g < candidates.length; g++) {
    out[g] = dot64(queryPooled, queryRow * dim, memoryPooled, candidates[g]! * dim, dim);
  }
  return out;
}

/**
 * MaxSim per candidate, in the given order, from the per-token bests. A memory with no
 * content tokens scores −1 for every query token (the least a unit inner product can be), so
 * it ranks last without a non-finite score.
 */
function maxSimScores(
  best: Float32Array,
  rowStart: number,
  nq: number,
  m: number,
  givenOf: Int32Array,
): Float64Array {
  const out = new Float64Array(m);
  for (let i = 0; i < nq; i++) {
    const base = (rowStart + i) * m;
    for (let s = 0; s < m; s++) {
      const v = best[base + s]!;
      out[givenOf[s]!]! += v === -Infinity ? -1 : v;
    }
  }
  for (let g = 0; g < m; g++) out[g]! /= nq;
  return out;
}
