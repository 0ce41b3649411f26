/**
 * Slow, obviously correct float64 references and seeded random data for the tests. Not part
 * of the package API (excluded from the build).
 */
import type { Prng } from '../prng.js';

/** `n` random unit vectors `[n * dim]` in float64 (Gaussian directions). */
export function unitRows(n: number, dim: number, prng: Prng): Float64Array {
  const out = new Float64Array(n * dim);
  for (let i = 0; i < n; i++) {
    let ss = 0;
    for (let k = 0; k < dim; k++) {
      const g = prng.normal();
      out[i * dim + k] = g;
      ss += g * g;
    }
    const inv = 1 / Math.sqrt(ss);
    for (let k = 0; k < dim; k++) out[i * dim + k]! *= inv;
  }
  return out;
}

/** Random normal entries with standard deviation `std`. */
export function normals(n: number, std: number, prng: Prng): Float64Array {
  const out = new Float64Array(n);
  for (let i = 0; i < n; i++) out[i] = std * prng.normal();
  return out;
}

/** `T(h)` of one row by the textbook formula, float64, nested arrays. */
export function referenceT(
  a: ArrayLike<number>,
  b: ArrayLike<number>,
  dim: number,
  rank: number,
  h: readonly number[],
): number[] {
  const u: number[] = [];
  for (let j = 0; j < rank; j++) {
    let s = 0;
    for (let k = 0; k < dim; k++) s += a[j * dim + k]! * h[k]!;
    u.push(s);
  }
  const z: number[] = [];
  for (let k = 0; k < dim; k++) {
    let s = h[k]!;
    for (let j = 0; j < rank; j++) s += b[k * rank + j]! * u[j]!;
    z.push(s);
  }
  const norm = (v: readonly number[]): number => Math.sqrt(v.reduce((acc, x) => acc + x * x, 0));
  const scale = norm(h) / Math.max(norm(z), 1e-12);
  return z.map((x) => x * scale);
}

/** Row `i` of a flat `[n × dim]` matrix as a plain array. */
export function row(m: ArrayLike<number>, i: number, dim: number): number[] {
  return Array.from({ length: dim }, (_, k) => m[i * dim + k]!);
}

/** Per-memory MaxSim by nested loops: memories given as lists of token rows. */
export function referenceMaxSim(
  query: readonly (readonly number[])[],
  memories: readonly (readonly (readonly number[])[])[],
): { scores: number[]; margins: number[] } {
  const margins: number[] = [];
  const scores = memories.map((tokens) => {
    if (tokens.length === 0) return -1;
    let sum = 0;
    for (const q of query) {
      const sims = tokens.map((t) => t.reduce((acc, x, k) => acc + x * q[k]!, 0));
      const sorted = [...sims].sort((x, y) => y - x);
      sum += sorted[0]!;
      if (sorted.length > 1) margins.push(sorted[0]! - sorted[1]!);
    }
    return sum / query.length;
  });
  return { scores, margins };
}

/** `−log(Σ_P e^{s/τ} / Σ_C e^{s/τ})` computed naively (moderate scores only). */
export function referenceCrossEntropy(
  scores: readonly number[],
  positives: readonly number[],
  tau: number,
): number {
  const all = scores.reduce((acc, s) => acc + Math.exp(s / tau), 0);
  const pos = positives.reduce((acc, m) => acc + Math.exp(scores[m]! / tau), 0);
  return -Math.log(pos / all);
}

/** A flat token matrix and offsets for a list of memories with these token counts. */
export function randomSegments(
  counts: readonly number[],
  dim: number,
  prng: Prng,
): { tokenVectors: Float64Array; memoryOffsets: Int32Array } {
  const memoryOffsets = new Int32Array(counts.length + 1);
  for (let m = 0; m < counts.length; m++) memoryOffsets[m + 1] = memoryOffsets[m]! + counts[m]!;
  return { tokenVectors: unitRows(memoryOffsets[counts.length]!, dim, prng), memoryOffsets };
}

/** Memories of a flat token matrix as nested arrays. */
export function memoriesOf(
  tokenVectors: ArrayLike<number>,
  memoryOffsets: ArrayLike<number>,
  dim: number,
): number[][][] {
  const out: number[][][] = [];
  for (let m = 0; m + 1 < memoryOffsets.length; m++) {
    const tokens: number[][] = [];
    for (let t = memoryOffsets[m]!; t < memoryOffsets[m + 1]!; t++) {
      tokens.push(row(tokenVectors, t, dim));
    }
    out.push(tokens);
  }
  return out;
}

/**
 * Central finite differences of `f` with respect to every entry of `x` (changed in place and
 * restored), step `h`.
 */
export function finiteDifferences(f: () => number, x: Float64Array, h = 1e-6): Float64Array {
  const out = new Float64Array(x.length);
  for (let i = 0; i < x.length; i++) {
    const keep = x[i]!;
    x[i] = keep + h;
    const plus = f();
    x[i] = keep - h;
    const minus = f();
    x[i] = keep;
    out[i] = (plus - minus) / (2 * h);
  }
  return out;
}

/** `‖x − y‖ / max(‖x‖, ‖y‖)`: the relative error of a gradient as a whole. */
export function relativeError(x: ArrayLike<number>, y: ArrayLike<number>): number {
  let diff = 0;
  let nx = 0;
  let ny = 0;
  for (let i = 0; i < x.length; i++) {
    diff += (x[i]! - y[i]!) ** 2;
    nx += x[i]! ** 2;
    ny += y[i]! ** 2;
  }
  return Math.sqrt(diff) / Math.max(Math.sqrt(nx), Math.sqrt(ny), 1e-300);
}
