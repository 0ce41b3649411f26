/** Seeded test data: a small PRNG and random unit vectors. Not part of the package API. */

/** mulberry32: a 32-bit seeded PRNG returning floats in [0, 1). */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** `n` random unit vectors `[n * dim]` (Gaussian directions, Box–Muller). */
export function unitVectors(n: number, dim: number, random: () => number): Float32Array {
  const out = new Float32Array(n * dim);
  for (let i = 0; i < n; i++) {
    let norm = 0;
    for (let j = 0; j < dim; j++) {
      const g = Math.sqrt(-2 * Math.log(1 - random())) * Math.cos(2 * Math.PI * random());
      out[i * dim + j] = g;
      norm += g * g;
    }
    const inv = 1 / Math.sqrt(norm);
    for (let j = 0; j < dim; j++) out[i * dim + j]! *= inv;
  }
  return out;
}

/** A random bank side: `rows` rows with 0..maxTokens tokens each (some rows empty). */
export function randomBank(
  rows: number,
  maxTokens: number,
  dim: number,
  random: () => number,
  minTokens = 0,
): { dim: number; tokenVectors: Float32Array; tokenOffsets: Int32Array; pooled: Float32Array } {
  const tokenOffsets = new Int32Array(rows + 1);
  for (let i = 0; i < rows; i++) {
    const n = minTokens + Math.floor(random() * (maxTokens - minTokens + 1));
    tokenOffsets[i + 1] = tokenOffsets[i]! + n;
  }
  return {
    dim,
    tokenVectors: unitVectors(tokenOffsets[rows]!, dim, random),
    tokenOffsets,
    pooled: unitVectors(rows, dim, random),
  };
}

/**
 * A clustered bank for the clustered index's tests: `memories` memories of 4 tokens (the first
 * two) or 3–7, each token a hub (`hubs(random)`, drawn after the token counts) plus 0.6 of a
 * random unit vector, normalised; memory 1's tokens copy memory 0's (exact ties).
 */
export function clusteredTokens(
  random: () => number,
  memories: number,
  dim: number,
  hubs: (random: () => number) => Float32Array,
): { vectors: Float32Array; tokenOffsets: Int32Array; n: number } {
  const tokenOffsets = new Int32Array(memories + 1);
  for (let m = 0; m < memories; m++) {
    tokenOffsets[m + 1] = tokenOffsets[m]! + (m < 2 ? 4 : 3 + Math.floor(random() * 5));
  }
  const n = tokenOffsets[memories]!;
  const centers = hubs(random);
  const noise = unitVectors(n, dim, random);
  const vectors = new Float32Array(n * dim);
  for (let t = 0; t < n; t++) {
    const h = Math.floor(random() * (centers.length / dim));
    let ss = 0;
    for (let j = 0; j < dim; j++) {
      const v = centers[h * dim + j]! + 0.6 * noise[t * dim + j]!;
      vectors[t * dim + j] = v;
      ss += v * v;
    }
    for (let j = 0; j < dim; j++) vectors[t * dim + j]! /= Math.sqrt(ss);
  }
  vectors.copyWithin(4 * dim, 0, 4 * dim);
  return { vectors, tokenOffsets, n };
}
