import { openBank } from '@bfe/encoder';
import { uniformFloat64 } from 'pure-rand/distribution/uniformFloat64';
import { xoroshiro128plus } from 'pure-rand/generator/xoroshiro128plus';
import type { BenchBank } from './measure.js';

/** An encoded LoCoMo bank: a query may search its own conversation; `queries` evenly spaced ones. */
export async function locomoBank(dir: string, queries: number): Promise<BenchBank> {
  const b = await openBank(dir, { verifyHashes: false });
  const m = b.memories;
  const convs = [...new Set(m.bankIds ?? [])].sort();
  const convIndex = new Map(convs.map((c, i) => [c, i]));
  const n = m.tokenOwner.length;
  const tokenMemory = m.tokenOwner;
  const tokenBank = Int32Array.from(tokenMemory, (row) => convIndex.get(m.bankIds![row]!)!);
  const qs = b.queries;
  const step = Math.max(1, Math.floor(qs.ids.length / queries));
  const picked = [];
  for (let i = 0; i < qs.ids.length && picked.length < queries; i += step) {
    const from = qs.tokenOffsets[i]!;
    const to = qs.tokenOffsets[i + 1]!;
    if (to === from) continue;
    picked.push({
      tokens: qs.tokenVectors.slice(from * b.dim, to * b.dim),
      rows: to - from,
      bank: convIndex.get(qs.ids[i]!.split(':')[0]!)!,
    });
  }
  return {
    name: 'locomo',
    vectors: m.tokenVectors,
    n,
    dim: b.dim,
    tokenBank,
    tokenMemory,
    queries: picked,
  };
}

function gaussian(rng: ReturnType<typeof xoroshiro128plus>): number {
  return (
    Math.sqrt(-2 * Math.log(1 - uniformFloat64(rng))) * Math.cos(2 * Math.PI * uniformFloat64(rng))
  );
}

function normalise(x: Float32Array, o: number, dim: number): void {
  let s = 0;
  for (let d = 0; d < dim; d++) s += x[o + d]! ** 2;
  const f = 1 / Math.sqrt(s);
  for (let d = 0; d < dim; d++) x[o + d] = x[o + d]! * f;
}

/**
 * Synthetic unit token vectors with the clustered shape of contextual states: a shared
 * offset, 256 topic centroids, Gaussian noise. `banks` banks of equal size; memories of 20
 * tokens; `queries` queries of 16 tokens drawn near random bank tokens of their own bank.
 */
export function syntheticBank(
  name: string,
  n: number,
  dim: number,
  banks: number,
  queries: number,
  seed: number,
): BenchBank {
  const rng = xoroshiro128plus(seed);
  const centroids = new Float32Array(256 * dim);
  for (let i = 0; i < centroids.length; i++) centroids[i] = gaussian(rng);
  for (let c = 0; c < 256; c++) normalise(centroids, c * dim, dim);
  const vectors = new Float32Array(n * dim);
  const per = Math.ceil(n / banks);
  for (let t = 0; t < n; t++) {
    const c = Math.floor(uniformFloat64(rng) * 256) * dim;
    for (let d = 0; d < dim; d++)
      vectors[t * dim + d] = 0.3 + centroids[c + d]! + 0.9 * gaussian(rng);
    normalise(vectors, t * dim, dim);
  }
  const tokenBank = Int32Array.from({ length: n }, (_, t) => Math.floor(t / per));
  const tokenMemory = Int32Array.from({ length: n }, (_, t) => Math.floor(t / 20));
  const qs = [];
  for (let q = 0; q < queries; q++) {
    const bank = q % banks;
    const rows = 16;
    const tokens = new Float32Array(rows * dim);
    for (let r = 0; r < rows; r++) {
      const t = Math.min(n - 1, bank * per + Math.floor(uniformFloat64(rng) * per));
      for (let d = 0; d < dim; d++)
        tokens[r * dim + d] = vectors[t * dim + d]! + (0.5 * gaussian(rng)) / Math.sqrt(dim);
      normalise(tokens, r * dim, dim);
    }
    qs.push({ tokens, rows, bank });
  }
  return { name, vectors, n, dim, tokenBank, tokenMemory, queries: qs };
}
