import {
  NonFiniteScoresError,
  checkKernelShapes,
  type ChunkTopK,
  type SimilarityKernel,
} from './kernel.js';

/**
 * The plain JavaScript kernel: float64 accumulation of each inner product, rounded once to
 * float32, and an insertion top-k that keeps the smaller index first on equal scores. About
 * 25× slower than onnxruntime's MLAS GEMM; it exists as the reference the ONNX kernel is tested
 * against and as a fallback where onnxruntime cannot load.
 *
 * @example
 * const kernel = new JsSimilarityKernel();
 * const top = await kernel.topK(q, 2, x, 1000, 384, 64); // q [2*384], x [1000*384] Float32Array
 * top.values; // Float32Array [2 * 64]; top.indices: Int32Array [2 * 64], 0..999
 */
export class JsSimilarityKernel implements SimilarityKernel {
  readonly name = 'js';

  async topK(
    queries: Float32Array,
    rows: number,
    bank: Float32Array,
    n: number,
    dim: number,
    k: number,
    withScores = false,
  ): Promise<ChunkTopK> {
    checkKernelShapes(queries, rows, bank, n, dim);
    if (!Number.isInteger(k) || k <= 0) throw new Error(`kernel: k must be > 0, got ${k}`);
    const kOut = Math.min(k, n);
    const values = new Float32Array(rows * kOut);
    const indices = new Int32Array(rows * kOut);
    const scores = withScores ? new Float32Array(rows * n) : undefined;
    for (let r = 0; r < rows; r++) {
      const base = r * kOut;
      let filled = 0;
      for (let j = 0; j < n; j++) {
        const s = dot(queries, r * dim, bank, j * dim, dim);
        if (!Number.isFinite(s)) throw new NonFiniteScoresError();
        if (scores !== undefined) scores[r * n + j] = s;
        // Walk left past every entry with a strictly smaller score: equal scores keep the
        // earlier (smaller) index in front.
        if (filled === kOut && !(s > values[base + kOut - 1]!)) continue;
        let at = filled < kOut ? filled++ : kOut - 1;
        while (at > 0 && s > values[base + at - 1]!) {
          values[base + at] = values[base + at - 1]!;
          indices[base + at] = indices[base + at - 1]!;
          at--;
        }
        values[base + at] = s;
        indices[base + at] = j;
      }
    }
    return { kOut, values, indices, scores };
  }

  async scores(
    queries: Float32Array,
    rows: number,
    bank: Float32Array,
    n: number,
    dim: number,
  ): Promise<Float32Array> {
    checkKernelShapes(queries, rows, bank, n, dim);
    const out = new Float32Array(rows * n);
    for (let r = 0; r < rows; r++) {
      for (let j = 0; j < n; j++) {
        const s = dot(queries, r * dim, bank, j * dim, dim);
        if (!Number.isFinite(s)) throw new NonFiniteScoresError();
        out[r * n + j] = s;
      }
    }
    return out;
  }

  async dispose(): Promise<void> {
    // nothing to release
  }
}

/** `Math.fround(Σ a[i]·b[i])` accumulated in float64. */
function dot(a: Float32Array, aAt: number, b: Float32Array, bAt: number, dim: number): number {
  let s = 0;
  for (let i = 0; i < dim; i++) s += a[aAt + i]! * b[bAt + i]!;
  return Math.fround(s);
}
