import { ScorerInputError } from './errors.js';
import { dotsInto, scratchOffsets } from './dots.js';
import { nonFiniteError, readChunk } from './chunk-errors.js';
import { NonFiniteScoresError, type ChunkTopK, type SimilarityKernel } from './kernel.js';
import { RunningTopK } from './running-top-k.js';

/**
 * A bank of `size` token vectors of `dim` floats, read in order, one chunk at a time. `read`
 * may return a view into its own scratch buffer, valid until the next `read`; `dots` rescores
 * a few tokens in float64 (the returned hits).
 */
export interface BankChunkSource {
  readonly size: number;
  readonly dim: number;
  /** Tokens `start..end-1` as `[(end - start) * dim]` floats. */
  read(start: number, end: number): Float32Array | Promise<Float32Array>;
  /**
   * Where the chunk from `start` should end instead of `end` (a source kept in pieces cuts at
   * a piece's end, so each chunk is read without a copy); absent: `end`.
   */
  chunkEnd?(start: number, end: number): number;
  /**
   * `out[h] = Σ_j token(indices[from + h])[j] · query[at + j]` for `h < count`, accumulated
   * in float64 (see {@link dotsInto}).
   */
  dots(
    indices: Int32Array,
    from: number,
    count: number,
    query: Float32Array,
    at: number,
    out: Float64Array,
  ): void;
}

/** The exact top-k of every query row over a whole bank. */
export interface TopKResult {
  readonly rows: number;
  /** Entries per row: the requested k, or the bank size when clamped. */
  readonly k: number;
  /** `[rows * k]` scores recomputed in float64, each row descending. */
  readonly values: Float64Array;
  /**
   * `[rows * k]` bank token indices `0..size-1`; equal scores in ascending index order (or in
   * ascending `tieOrder`, when given).
   */
  readonly indices: Int32Array;
  /** Kernel passes over the bank: 1, plus one per round of rows re-searched wider. */
  readonly passes: number;
  /** Query rows that needed a wider search (near-ties at the k-th place). */
  readonly widenedRows: number;
  /**
   * The kernel proposed from an approximate product ({@link ChunkTopK.approximate}): every
   * proposal was rescored in float64, the set is exact only where the proposals hold it.
   */
  readonly approximate: boolean;
}

/** Options of {@link exactTopK}. */
export interface ExactTopKOptions {
  /** Entries per query row (METHOD.md §2 default: 64). */
  readonly k: number;
  /** Bank tokens per kernel call (default 65,536). */
  readonly chunkSize?: number;
  /**
   * Upper bound on the `rows × chunk` score matrix a kernel call materialises, in floats
   * (default 2^24 = 64 MiB); the chunk shrinks when many rows are batched.
   */
  readonly maxScoreFloats?: number;
  /** `k > size`: use `size` (true) or throw `ScorerInputError('k-exceeds-bank')` (default). */
  readonly clampK?: boolean;
  /** Extra candidates fetched per row beyond k, re-ranked in float64 (default 16). */
  readonly margin?: number;
  /** Names bank token `i` in error messages (default `bank token i`). */
  readonly describeToken?: (index: number) => string;
  /**
   * `[size]`: each bank token's place in the order equal float64 scores rank by, a
   * permutation of `0..size-1` (default: the index itself). Only the final re-ranking reads
   * it, and every token tied with the k-th score is among the re-ranked candidates, so the
   * returned set follows this order at the k-th place too.
   */
  readonly tieOrder?: Int32Array | undefined;
  /** Called with each chunk's full `[rows × n]` float32 scores (first pass only). */
  readonly onScores?: (scores: Float32Array, start: number, n: number) => void;
  /**
   * Scores tokens `start..end-1` of the source itself instead of `kernel.topK` over
   * `source.read` (a codec's codes searched without decoding them); `queries` are the pending
   * rows. Must return what `kernel.topK` would: per row the float32 top-`k`, and with
   * `withScores` the full scores; throws {@link NonFiniteScoresError} on NaN/Inf.
   */
  readonly chunkTopK?: ChunkScorer;
  /**
   * Row `r`'s bound `B` on the float32 scores' error, `|float32 − exact| ≤ 2(d + 2)·2⁻²⁴·B`
   * (default `‖q_r‖`: a plain float32 GEMM over unit bank rows). A `chunkTopK` that computes
   * its scores another way gives its own.
   */
  readonly queryBound?: (queries: Float32Array, row: number) => number;
}

/** {@link ExactTopKOptions.chunkTopK}. */
export type ChunkScorer = (
  queries: Float32Array,
  rows: number,
  start: number,
  end: number,
  k: number,
  withScores: boolean,
) => Promise<ChunkTopK>;

export const DEFAULT_CHUNK_SIZE = 65_536;
export const DEFAULT_MAX_SCORE_FLOATS = 2 ** 24;
export const DEFAULT_MARGIN = 16;
/** Chunks never shrink below this, however many rows are batched. */
const MIN_CHUNK = 1024;
/** Unit roundoff of float32. */
const U32 = 2 ** -24;

/**
 * The bank's chunk length for `rows` query rows: `chunkSize`, shrunk so that one chunk's score
 * matrix stays within `maxScoreFloats`, but never below 1,024 tokens (or `chunkSize`).
 */
export function effectiveChunkSize(
  rows: number,
  chunkSize = DEFAULT_CHUNK_SIZE,
  maxScoreFloats = DEFAULT_MAX_SCORE_FLOATS,
): number {
  const floor = Math.min(MIN_CHUNK, chunkSize);
  return Math.max(floor, Math.min(chunkSize, Math.floor(maxScoreFloats / rows)));
}

/**
 * Exact bank-wide top-k (METHOD.md §2): for every query row, the `k` bank tokens of largest
 * inner product, ordered by score descending and, on equal scores, by smaller bank token index.
 *
 * The bank streams through the kernel in chunks with a running top-k merge, so memory is
 * bounded by the chunk, not the bank. The kernel computes in float32, and a float32 GEMM
 * rounds the same product differently at different column positions (MLAS does: a duplicate
 * vector can score 1 at one place and 1 − 2⁻²⁴ at another). So the kernel only proposes:
 * it fetches `k + margin` candidates per row, which are rescored in float64 and re-ranked by
 * (score, index). The result is exact whenever the last fetched float32 score lies more than
 * the float32 error bound `ε = 2(d + 2)·2⁻²⁴·‖q‖` (unit bank rows) below the k-th float64
 * score; rows where it does not (near-ties at the k-th place, e.g. many duplicate vectors) are
 * searched again with twice the candidates, until they do or the whole bank is fetched.
 *
 * @throws {ScorerInputError} `empty-bank` for a bank of no tokens; `k-exceeds-bank` for
 *   `k > size` unless `clampK`; `non-finite` naming the first NaN/Inf bank token or query row.
 * @example
 * const top = await exactTopK(kernel, q, 20, flatBankSource(x, 384), { k: 64 });
 * top.values;  // Float64Array [20 * 64]
 * top.indices; // Int32Array  [20 * 64], indices into x's rows
 */
export async function exactTopK(
  kernel: SimilarityKernel,
  queries: Float32Array,
  rows: number,
  source: BankChunkSource,
  options: ExactTopKOptions,
): Promise<TopKResult> {
  const { size, dim } = source;
  const describe = options.describeToken ?? ((i: number) => `bank token ${i}`);
  if (size === 0) {
    throw new ScorerInputError('empty-bank', 'the bank to search holds no tokens', {
      suggestion: 'Give the query candidate memories that have content tokens.',
    });
  }
  if (!Number.isInteger(options.k) || options.k < 1) {
    throw new Error(`exactTopK: k must be a positive integer, got ${options.k}`);
  }
  const margin = options.margin ?? DEFAULT_MARGIN;
  if (!Number.isInteger(margin) || margin < 0) {
    throw new Error(`exactTopK: margin must be a non-negative integer, got ${margin}`);
  }
  if (options.k > size && options.clampK !== true) {
    throw new ScorerInputError(
      'k-exceeds-bank',
      `k = ${options.k} is larger than the bank of ${size} tokens`,
      { suggestion: `Use k ≤ ${size}, or clampK to search the whole bank.` },
    );
  }
  if (!Number.isInteger(rows) || rows < 1) {
    throw new Error(`exactTopK: rows must be a positive integer, got ${rows}`);
  }
  if (queries.length !== rows * dim) {
    throw new Error(`exactTopK: queries hold ${queries.length} floats, expected ${rows} × ${dim}`);
  }
  const k = Math.min(options.k, size);
  const values = new Float64Array(rows * k);
  const indices = new Int32Array(rows * k);
  if (options.tieOrder !== undefined && options.tieOrder.length !== size) {
    throw new Error(`exactTopK: tieOrder has ${options.tieOrder.length} places for ${size} tokens`);
  }
  const rerank = new Reranker(k, dim, options.tieOrder, options.queryBound);
  let fetch = Math.min(size, k + margin);
  let pending = Int32Array.from({ length: rows }, (_, r) => r);
  let q = queries;
  let passes = 0;
  let widened = 0;
  let approximate = false;
  for (;;) {
    const found = await streamTopK(kernel, q, pending.length, source, fetch, {
      chunk: effectiveChunkSize(pending.length, options.chunkSize, options.maxScoreFloats),
      describe,
      onScores: passes === 0 ? options.onScores : undefined,
      chunkTopK: options.chunkTopK,
    });
    passes++;
    approximate ||= found.approximate;
    const again: number[] = [];
    for (let j = 0; j < pending.length; j++) {
      const r = pending[j]!;
      const exact = rerank.row(queries, r, found, j, source, values, indices, r * k);
      if (!exact && found.k < size) again.push(r);
    }
    if (again.length === 0) break;
    widened += passes === 1 ? again.length : 0;
    pending = Int32Array.from(again);
    q = new Float32Array(pending.length * dim);
    for (let j = 0; j < pending.length; j++) {
      q.set(queries.subarray(pending[j]! * dim, (pending[j]! + 1) * dim), j * dim);
    }
    fetch = Math.min(size, 2 * fetch);
  }
  return { rows, k, values, indices, passes, widenedRows: widened, approximate };
}

/** Re-ranks one row's fetched candidates in float64; scratch reused across rows. */
class Reranker {
  readonly #k: number;
  readonly #dim: number;
  readonly #place: Int32Array | undefined;
  readonly #bound: ((queries: Float32Array, row: number) => number) | undefined;
  #score = new Float64Array(0);
  #index = new Int32Array(0);
  #fresh = new Float64Array(0);

  constructor(
    k: number,
    dim: number,
    place: Int32Array | undefined,
    bound: ((queries: Float32Array, row: number) => number) | undefined,
  ) {
    this.#bound = bound;
    this.#k = k;
    this.#dim = dim;
    this.#place = place;
  }

  /**
   * Writes the top-k of row `j` of `found` (query row `r` of `queries`) into `values`/`indices`
   * at `at`, and says whether it is provably exact.
   */
  row(
    queries: Float32Array,
    r: number,
    found: RunningTopK,
    j: number,
    source: BankChunkSource,
    values: Float64Array,
    indices: Int32Array,
    at: number,
  ): boolean {
    const k = this.#k;
    const dim = this.#dim;
    const n = found.count;
    if (this.#score.length < n) {
      this.#score = new Float64Array(n);
      this.#index = new Int32Array(n);
      this.#fresh = new Float64Array(n);
    }
    const score = this.#score;
    const index = this.#index;
    const qAt = r * dim;
    let bound: number;
    if (this.#bound === undefined) {
      let qNorm = 0;
      for (let d = 0; d < dim; d++) qNorm += queries[qAt + d]! * queries[qAt + d]!;
      bound = Math.sqrt(qNorm);
    } else bound = this.#bound(queries, r);
    const epsilon = 2 * (dim + 2) * U32 * bound;
    const f32 = found.values;
    const base = j * found.k;
    // A fetched entry whose float32 score is 2ε below the k-th float32 score cannot reach the
    // top-k: the first k entries all score at least (k-th float32 − ε) in float64.
    const cut = f32[base + k - 1]! - 2 * epsilon;
    let m = k;
    // Approximate proposals: every one is rescored (their estimates bound nothing).
    if (found.approximate) m = n;
    while (m < n && f32[base + m]! >= cut) m++;
    const fresh = this.#fresh;
    source.dots(found.indices, base, m, queries, qAt, fresh);
    // Insertion into (score desc, place asc): the float32 order is nearly right already.
    const place = this.#place;
    for (let h = 0; h < m; h++) {
      const idx = found.indices[base + h]!;
      const s = fresh[h]!;
      const at = place === undefined ? idx : place[idx]!;
      let p = h;
      while (
        p > 0 &&
        (score[p - 1]! < s ||
          (score[p - 1] === s &&
            (place === undefined ? index[p - 1]! : place[index[p - 1]!]!) > at))
      ) {
        score[p] = score[p - 1]!;
        index[p] = index[p - 1]!;
        p--;
      }
      score[p] = s;
      index[p] = idx;
    }
    values.set(score.subarray(0, k), at);
    indices.set(index.subarray(0, k), at);
    // Approximate proposals are final: a wider fetch would ask the same estimates again.
    return found.approximate || f32[base + n - 1]! < score[k - 1]! - epsilon;
  }
}

/** One streamed pass: the kernel's float32 top-`k` per row, merged across chunks. */
async function streamTopK(
  kernel: SimilarityKernel,
  queries: Float32Array,
  rows: number,
  source: BankChunkSource,
  k: number,
  pass: {
    chunk: number;
    describe: (index: number) => string;
    onScores: ((scores: Float32Array, start: number, n: number) => void) | undefined;
    chunkTopK: ChunkScorer | undefined;
  },
): Promise<RunningTopK> {
  const { size, dim } = source;
  const { chunk, describe, onScores, chunkTopK } = pass;
  const running = new RunningTopK(rows, k);
  for (let start = 0; start < size;) {
    const full = Math.min(size, start + chunk);
    const end = source.chunkEnd === undefined ? full : source.chunkEnd(start, full);
    const n = end - start;
    const withScores = onScores !== undefined;
    let top: ChunkTopK;
    try {
      if (chunkTopK !== undefined) {
        top = await chunkTopK(queries, rows, start, end, k, withScores);
      } else {
        const vectors = await readChunk(source, start, end);
        top = await kernel.topK(queries, rows, vectors, n, dim, k, withScores);
      }
    } catch (error) {
      if (error instanceof NonFiniteScoresError) {
        const vectors = await readChunk(source, start, end);
        throw nonFiniteError(queries, rows, vectors, n, dim, start, describe);
      }
      throw error;
    }
    if (onScores !== undefined) {
      if (top.scores === undefined) {
        throw new Error(`exactTopK: kernel ${kernel.name} returned no scores`);
      }
      onScores(top.scores, start, n);
    }
    running.merge(top, start);
    start = end;
  }
  return running;
}
/**
 * A source over one flat row-major `Float32Array` `[size * dim]`: chunks are zero-copy views.
 *
 * @example
 * const source = flatBankSource(new Float32Array(1000 * 384), 384); // source.size === 1000
 */
export function flatBankSource(vectors: Float32Array, dim: number): BankChunkSource {
  if (!Number.isInteger(dim) || dim <= 0 || vectors.length % dim !== 0) {
    throw new Error(`flatBankSource: ${vectors.length} floats are not rows of ${dim}`);
  }
  return {
    size: vectors.length / dim,
    dim,
    read: (start, end) => vectors.subarray(start * dim, end * dim),
    dots: (indices, from, count, query, at, out) => {
      const offsets = scratchOffsets(count);
      for (let h = 0; h < count; h++) offsets[h] = indices[from + h]! * dim;
      dotsInto(vectors, offsets, count, query, at, out, dim);
    },
  };
}
