/**
 * Per-chunk top-k of one chunk of bank tokens: for each query row, the `kOut` largest inner
 * products, sorted by score descending, equal scores by smaller chunk-local index first.
 */
export interface ChunkTopK {
  /** `min(k, n)`: entries per row. */
  readonly kOut: number;
  /** `[rows * kOut]` scores. */
  readonly values: Float32Array;
  /** `[rows * kOut]` indices into the chunk, `0..n-1`. */
  readonly indices: Int32Array;
  /** `[rows * n]` all scores of the chunk, when asked for. */
  readonly scores: Float32Array | undefined;
  /**
   * True when the entries were chosen by an approximate product (an int8 resident bank,
   * `OrtSimilarityKernel.makeResident(…, 'int8')`): `values` are estimates, the set is the
   * estimates' top-k. `exactTopK` then rescores every fetched entry and cannot prove the set
   * exact (it proposes `k + margin`, the margin chosen by the caller).
   */
  readonly approximate?: boolean;
}

/**
 * The arithmetic the scorer delegates: inner products of query rows with bank rows, and their
 * per-row top-k. Both methods refuse non-finite scores (a NaN or Inf vector) by throwing
 * {@link NonFiniteScoresError}, so the caller can locate and name the bad vector.
 */
export interface SimilarityKernel {
  /** `'onnxruntime'` or `'js'`. */
  readonly name: string;
  /**
   * Top-k of `queries [rows × dim] · bankᵀ` per row, `bank [n × dim]` row-major; with
   * `withScores`, the full score matrix too (one product for both).
   * @throws {NonFiniteScoresError} when any score is NaN or ±Inf.
   */
  topK(
    queries: Float32Array,
    rows: number,
    bank: Float32Array,
    n: number,
    dim: number,
    k: number,
    withScores?: boolean,
  ): Promise<ChunkTopK>;
  /**
   * All inner products `[rows × n]`, row-major.
   * @throws {NonFiniteScoresError} when any score is NaN or ±Inf.
   */
  scores(
    queries: Float32Array,
    rows: number,
    bank: Float32Array,
    n: number,
    dim: number,
  ): Promise<Float32Array>;
  /**
   * A scorer of one `bank [n × dim]` held constant while it lives (the bank must not change):
   * onnxruntime packs it for its GEMM once instead of on every {@link scores} call. Optional:
   * without it, callers use {@link scores}. Its scores are float32 products, the same on every
   * call, but may differ from {@link scores}' in the last bits (another summation order).
   * `'int8'`: the bank quantised to int8 and the queries to uint8 at each call, approximate
   * scores from integer products (a kernel without an int8 product may return float32's).
   */
  constantScores?(
    bank: Float32Array,
    n: number,
    dim: number,
    precision?: ScorePrecision,
  ): Promise<ConstantScores>;
  dispose(): Promise<void>;
}

/** The arithmetic of {@link SimilarityKernel.constantScores}: float32 products or int8 ones. */
export type ScorePrecision = 'fp32' | 'int8';

/** {@link SimilarityKernel.constantScores}' scorer of a fixed bank. */
export interface ConstantScores {
  /**
   * All inner products `[rows × n]` of `queries [rows × dim]` with the bank, row-major.
   * @throws {NonFiniteScoresError} when any score is NaN or ±Inf.
   */
  scores(queries: Float32Array, rows: number): Promise<Float32Array>;
  /** Frees what holds the bank (later calls throw). */
  release(): Promise<void>;
}

/** Thrown by a kernel when a score is NaN or ±Inf; the scorer turns it into a named error. */
export class NonFiniteScoresError extends Error {
  constructor() {
    super('a similarity score is NaN or infinite');
    this.name = 'NonFiniteScoresError';
  }
}

/** Checks the shapes every kernel method receives (programmer errors: plain `Error`). */
export function checkKernelShapes(
  queries: Float32Array,
  rows: number,
  bank: Float32Array,
  n: number,
  dim: number,
): void {
  if (!Number.isInteger(dim) || dim <= 0) throw new Error(`kernel: dim must be > 0, got ${dim}`);
  if (!Number.isInteger(rows) || rows <= 0 || queries.length !== rows * dim) {
    throw new Error(`kernel: queries has ${queries.length} floats, expected ${rows} × ${dim}`);
  }
  if (!Number.isInteger(n) || n <= 0 || bank.length !== n * dim) {
    throw new Error(`kernel: bank has ${bank.length} floats, expected ${n} × ${dim}`);
  }
}
