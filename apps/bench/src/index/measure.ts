/** A bank as the benchmark sees it: unit token vectors, each token's bank and memory. */
export interface BenchBank {
  readonly name: string;
  readonly vectors: Float32Array;
  readonly n: number;
  readonly dim: number;
  readonly tokenBank: Int32Array;
  readonly tokenMemory: Int32Array;
  /** Query token vectors per query, and the bank each query may search. */
  readonly queries: readonly {
    readonly tokens: Float32Array;
    readonly rows: number;
    readonly bank: number;
  }[];
}

/**
 * Exact top-k token indices per query row over `tokens`, scored in float64 on `x` (codeDim
 * `dim`): the brute-force reference and the `exact` search over decoded codes.
 */
export function exactTopK(
  x: Float32Array,
  dim: number,
  tokens: Int32Array,
  q: Float32Array,
  rows: number,
  k: number,
): Int32Array {
  const out = new Int32Array(rows * k).fill(-1);
  const scores = new Float64Array(tokens.length);
  const order = new Int32Array(tokens.length);
  for (let r = 0; r < rows; r++) {
    const qo = r * dim;
    for (let j = 0; j < tokens.length; j++) {
      const xo = tokens[j]! * dim;
      let s = 0;
      for (let d = 0; d < dim; d++) s += q[qo + d]! * x[xo + d]!;
      scores[j] = s;
      order[j] = j;
    }
    const top = Array.from(order)
      .sort((a, b) => scores[b]! - scores[a]! || tokens[a]! - tokens[b]!)
      .slice(0, k);
    top.forEach((j, c) => (out[r * k + c] = tokens[j]!));
  }
  return out;
}

/** Mean over query rows of |got ∩ want| / |want| (want: the reference top-k). */
export function recallAt(got: Int32Array, want: Int32Array, rows: number, k: number): number {
  let sum = 0;
  for (let r = 0; r < rows; r++) {
    const g = new Set(got.subarray(r * k, (r + 1) * k));
    let hit = 0;
    let total = 0;
    for (let c = 0; c < k; c++) {
      const t = want[r * k + c]!;
      if (t < 0) continue;
      total++;
      if (g.has(t)) hit++;
    }
    sum += total === 0 ? 1 : hit / total;
  }
  return sum / rows;
}
