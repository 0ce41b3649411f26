import { buildBankedHnsw, decodeTokens, encodeTokens, prepareQuery, trainCodec } from '@bfe/index';
import type { CodecName, HnswParams } from '@bfe/index';

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

export interface Row {
  readonly bank: string;
  readonly codec: CodecName;
  readonly search: 'exact' | 'hnsw';
  readonly bytesPerToken: number;
  readonly totalBytes: number;
  readonly recall: number;
  readonly buildS: number;
  readonly latencies: number[];
}

/** Tokens of each bank, in token order. */
export function bankMembers(bank: BenchBank): Map<number, Int32Array> {
  const lists = new Map<number, number[]>();
  for (let t = 0; t < bank.n; t++) {
    const b = bank.tokenBank[t]!;
    let l = lists.get(b);
    if (l === undefined) lists.set(b, (l = []));
    l.push(t);
  }
  return new Map([...lists].map(([b, l]) => [b, Int32Array.from(l)]));
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

/** Rescores proposals in float64 from the decoded codes and sorts them, best first. */
export function rescore(
  x: Float32Array,
  dim: number,
  q: Float32Array,
  rows: number,
  k: number,
  idx: Int32Array,
): Int32Array {
  const out = new Int32Array(rows * k).fill(-1);
  for (let r = 0; r < rows; r++) {
    const cand: [number, number][] = [];
    for (let c = 0; c < k; c++) {
      const t = idx[r * k + c]!;
      if (t < 0) continue;
      let s = 0;
      for (let d = 0; d < dim; d++) s += q[r * dim + d]! * x[t * dim + d]!;
      cand.push([s, t]);
    }
    cand.sort((a, b) => b[0] - a[0] || a[1] - b[1]);
    cand.forEach(([, t], c) => (out[r * k + c] = t));
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

/** The exact fp32 reference top-k per query (all its tokens). */
export function reference(
  bank: BenchBank,
  members: Map<number, Int32Array>,
  k: number,
): Int32Array[] {
  return bank.queries.map((q) =>
    exactTopK(bank.vectors, bank.dim, members.get(q.bank)!, q.tokens, q.rows, k),
  );
}

/** One codec, exact and HNSW (per-bank indexes over decoded codes), against the reference. */
export async function measureCodec(
  bank: BenchBank,
  members: Map<number, Int32Array>,
  ref: Int32Array[],
  codec: CodecName,
  params: HnswParams,
  k: number,
): Promise<Row[]> {
  let t0 = performance.now();
  const model = trainCodec(codec, bank.vectors, bank.n, bank.dim);
  const codes = encodeTokens(model, bank.vectors, bank.n);
  const dec = decodeTokens(model, codes, 0, bank.n);
  const codecS = (performance.now() - t0) / 1000;
  const cd = model.codeDim;
  const base = {
    bank: bank.name,
    codec,
    bytesPerToken: model.bytesPerToken,
    totalBytes: codes.length,
  };
  const exactLat: number[] = [];
  let exactRecall = 0;
  bank.queries.forEach((q, i) => {
    const s = performance.now();
    const pq = prepareQuery(model, q.tokens, q.rows);
    const got = exactTopK(dec, cd, members.get(q.bank)!, pq, q.rows, k);
    exactLat.push(performance.now() - s);
    exactRecall += recallAt(got, ref[i]!, q.rows, k) / bank.queries.length;
  });
  t0 = performance.now();
  const banked = await buildBankedHnsw(dec, bank.n, cd, bank.tokenBank, params, { threads: 1 });
  const buildS = (performance.now() - t0) / 1000;
  const hnswLat: number[] = [];
  let hnswRecall = 0;
  bank.queries.forEach((q, i) => {
    const s = performance.now();
    const pq = prepareQuery(model, q.tokens, q.rows);
    const res = banked.search(pq, q.rows, k, q.bank);
    const got = rescore(dec, cd, pq, q.rows, k, res.indices);
    hnswLat.push(performance.now() - s);
    hnswRecall += recallAt(got, ref[i]!, q.rows, k) / bank.queries.length;
  });
  banked.dispose();
  return [
    { ...base, search: 'exact', recall: exactRecall, buildS: codecS, latencies: exactLat },
    { ...base, search: 'hnsw', recall: hnswRecall, buildS: codecS + buildS, latencies: hnswLat },
  ];
}
