import { CandidateBank } from './candidate-bank.js';
import type { SimilarityKernel } from './kernel.js';
import { exactTopK, type ExactTopKOptions } from './top-k.js';
import type { TokenStore } from './token-store.js';

/** The memory side of a bank as the index reads it. */
export interface TokenSide {
  /** The token vectors `[size × dim]`, in memory or on disk. */
  readonly tokens: TokenStore;
  /** `[memories + 1]`: memory `m` owns tokens `tokenOffsets[m]..tokenOffsets[m+1]-1`. */
  readonly tokenOffsets: ArrayLike<number>;
  /** Memory ids: equal similarities rank by their tie order (`tieOrder`), else by token index. */
  readonly ids?: readonly string[];
}

/** Options of one {@link TokenIndex.search}. */
export interface TokenSearchOptions {
  /** The candidate memory rows, distinct and ascending: only their tokens are searched. */
  readonly memories: Int32Array;
  /** `k` larger than the candidates' tokens: return them all (true) or throw (default). */
  readonly clampK?: boolean;
  /** Bank tokens per kernel call (exact backend). */
  readonly chunkSize?: number;
  /** Upper bound on one kernel call's score matrix, in floats (exact backend). */
  readonly maxScoreFloats?: number;
  /**
   * Also return each candidate memory's best token similarity per query row ({@link
   * TokenHits.best}, the MaxSim baseline's input); only an exhaustive backend can.
   */
  readonly bestPerMemory?: boolean;
  /** Names memory row `m` in error messages. */
  readonly describeMemory?: (row: number) => string;
}

/** Per query row, the top-k tokens among the candidates' tokens. */
export interface TokenHits {
  readonly rows: number;
  /** Entries per row: the requested k, or the candidates' token count when clamped. */
  readonly k: number;
  /** `[rows × k]` similarities in float64, each row descending. */
  readonly values: Float64Array;
  /** `[rows × k]` bank token indices (rows of the store). */
  readonly tokens: Int32Array;
  /** `[rows × k]` the memory row owning each token. */
  readonly memories: Int32Array;
  /** `[rows × k]` each hit's memory as a position in {@link TokenSearchOptions.memories}. */
  readonly slots: Int32Array;
  /** `[rows × memories]` best token similarity (float32) per memory, `-Infinity` for none. */
  readonly best?: Float32Array;
  /**
   * `[rows]` the backend's own floor per row, used in place of the k-th value (METHOD.md §2's
   * tail floor): the clustered index's WARP estimate of a missing similarity, when its search
   * options ask for it (`floor: 'warp'`). Absent: the tail floor.
   */
  readonly floor?: Float64Array;
  /** Passes over the candidates (exact backend: 1, plus one per widening round). */
  readonly passes: number;
  /** Query rows re-searched wider because of near-ties at the k-th place. */
  readonly widenedRows: number;
  /** Proposed by an approximate product (an int8 resident bank), every proposal rescored. */
  readonly approximate?: boolean;
}

/**
 * How a search scores its candidates' chunks when not by `kernel.topK` over the store's
 * float32 rows: {@link ExactTopKOptions.chunkTopK}, its error bound and the proposals' margin, for one search's
 * {@link CandidateBank}.
 */
export type ChunkScoring = (
  bank: CandidateBank,
) => Pick<ExactTopKOptions, 'chunkTopK' | 'queryBound' | 'margin'>;

/**
 * Bank-wide per-query-token top-k over a candidate set of memories: what the sparse scorer
 * proposes from (METHOD.md §2). Equal similarities rank by the memories' tie order (a seeded
 * hash of each memory id, METHOD.md §8 "Ties") and then by token position — never by bank row.
 */
export interface TokenIndex {
  /** `'exact'` or `'hnsw'`. */
  readonly backend: string;
  /** The stored tokens' codec (`'fp32'` for the exact float32 reference). */
  readonly codec: string;
  readonly dim: number;
  /** Tokens in the bank. */
  readonly size: number;
  /** Top-`k` per row of `queries [rows × dim]` among the tokens of `options.memories`. */
  search(
    queries: Float32Array,
    rows: number,
    k: number,
    options: TokenSearchOptions,
  ): Promise<TokenHits>;
}

/**
 * The exact backend: every candidate token is scored by the kernel (onnxruntime's Gemm + TopK,
 * streamed in chunks from the store), the `k + margin` proposals are rescored in float64 and
 * re-ranked by (similarity, tie order), and rows with near-ties at the k-th place are searched
 * again wider (`exactTopK`). The reference every other backend is measured against.
 *
 * @example
 * const index = new ExactTokenIndex(
 *   { tokens: flatTokenStore(bank.memories.tokenVectors, 384), tokenOffsets, ids },
 *   new OrtSimilarityKernel(),
 * );
 * const hits = await index.search(q, 12, 64, { memories: Int32Array.of(0, 1, 2) });
 * hits.values; // Float64Array [12 * 64]; hits.memories: the memory row of each hit
 */
export class ExactTokenIndex implements TokenIndex {
  readonly backend = 'exact';
  readonly codec = 'fp32';
  readonly dim: number;
  readonly size: number;
  readonly side: TokenSide;
  readonly kernel: SimilarityKernel;
  readonly #scoring: ChunkScoring | undefined;
  /** The last candidate set's token places (a store searches one bank view many times). */
  #places: { memories: Int32Array; places: Int32Array | undefined } | undefined;

  /** `scoring`: score chunks another way (a codec's codes, {@link ChunkScoring}). */
  constructor(side: TokenSide, kernel: SimilarityKernel, scoring?: ChunkScoring) {
    this.side = side;
    this.kernel = kernel;
    this.#scoring = scoring;
    this.dim = side.tokens.dim;
    this.size = side.tokens.size;
  }

  async search(
    queries: Float32Array,
    rows: number,
    k: number,
    options: TokenSearchOptions,
  ): Promise<TokenHits> {
    const bank = new CandidateBank(this.side.tokens, this.side.tokenOffsets, options.memories);
    const m = bank.rows.length;
    const describeMemory = options.describeMemory ?? ((row: number) => `memory row ${row}`);
    const best =
      options.bestPerMemory === true ? new Float32Array(rows * m).fill(-Infinity) : undefined;
    const top = await exactTopK(this.kernel, queries, rows, bank, {
      k,
      // equal token scores: by the memories' tie order, never bank order (at the k-th place)
      tieOrder: this.#tokenPlaces(bank, options.memories),
      ...this.#scoring?.(bank),
      ...(options.chunkSize === undefined ? {} : { chunkSize: options.chunkSize }),
      ...(options.maxScoreFloats === undefined ? {} : { maxScoreFloats: options.maxScoreFloats }),
      ...(options.clampK === undefined ? {} : { clampK: options.clampK }),
      describeToken: (v) => {
        const slot = bank.slotOf(v);
        return `token ${v - bank.start[slot]!} of ${describeMemory(bank.rows[slot]!)} (bank token ${bank.bankToken(v, slot)})`;
      },
      ...(best === undefined
        ? {}
        : {
            onScores: (scores: Float32Array, start: number, n: number) =>
              bestTokenInto(best, bank, rows, scores, start, n),
          }),
    });
    const count = top.values.length;
    const tokens = new Int32Array(count);
    const memories = new Int32Array(count);
    const slots = new Int32Array(count);
    for (let h = 0; h < count; h++) {
      const v = top.indices[h]!;
      const slot = bank.slotOf(v);
      slots[h] = slot;
      memories[h] = bank.rows[slot]!;
      tokens[h] = bank.bankToken(v, slot);
    }
    return {
      rows,
      k: top.k,
      values: top.values,
      tokens,
      memories,
      slots,
      ...(best === undefined ? {} : { best }),
      passes: top.passes,
      widenedRows: top.widenedRows,
      ...(top.approximate ? { approximate: true } : {}),
    };
  }

  #tokenPlaces(bank: CandidateBank, memories: Int32Array): Int32Array | undefined {
    const last = this.#places;
    if (
      last !== undefined &&
      last.memories.length === memories.length &&
      last.memories.every((m, i) => m === memories[i])
    )
      return last.places;
    const places = bank.tokenPlaces(this.side.ids);
    this.#places = { memories: memories.slice(), places };
    return places;
  }
}

/**
 * Folds one chunk's full scores `[rows × n]` into `best [rows × m]`: each (query token,
 * candidate slot) keeps its best token score. Slots are walked by token range, so this is
 * `O(rows × n)` with no per-memory product.
 */
function bestTokenInto(
  best: Float32Array,
  bank: CandidateBank,
  rows: number,
  scores: Float32Array,
  start: number,
  n: number,
): void {
  const m = bank.rows.length;
  const bounds = bank.start;
  const end = start + n;
  const first = bank.slotOf(start);
  for (let r = 0; r < rows; r++) {
    const base = r * n - start;
    for (let s = first; s < m && bounds[s]! < end; s++) {
      const a = Math.max(bounds[s]!, start);
      const b = Math.min(bounds[s + 1]!, end);
      if (a >= b) continue;
      let mx = best[r * m + s]!;
      for (let j = a; j < b; j++) {
        const v = scores[base + j]!;
        if (v > mx) mx = v;
      }
      best[r * m + s] = mx;
    }
  }
}
