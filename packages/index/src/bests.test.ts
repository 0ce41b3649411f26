import { describe, expect, it } from 'vitest';
import { bestTokensInto } from './dots.js';

/** A seeded generator of floats in [-0.5, 0.5). */
function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1103515245) + 12345) >>> 0;
    return s / 2 ** 32 - 0.5;
  };
}

/**
 * The reference: for each quadruple, the first row of the range with the largest float64 sum of
 * products in order of the dimension (what the evidence's bests are), written out plainly.
 */
function reference(
  vectors: Float32Array,
  dim: number,
  queries: Float32Array,
  quads: Int32Array,
): { token: number[]; similarity: number[] } {
  const token: number[] = [];
  const similarity: number[] = [];
  for (let q = 0; 4 * q < quads.length; q++) {
    const [row, start, end] = [quads[4 * q + 1]!, quads[4 * q + 2]!, quads[4 * q + 3]!];
    let best = -1;
    let bestSim = Number.NaN;
    for (let t = start; t < end; t++) {
      let s = 0;
      for (let j = 0; j < dim; j++) s += queries[row * dim + j]! * vectors[t * dim + j]!;
      if (best === -1 || s > bestSim) {
        best = t - start;
        bestSim = s;
      }
    }
    token.push(best);
    similarity.push(bestSim);
  }
  return { token, similarity };
}

function run(
  vectors: Float32Array,
  dim: number,
  queries: Float32Array,
  quads: Int32Array,
  maxAbs?: number,
) {
  const count = quads.length / 4;
  const token = new Int32Array(count);
  const similarity = new Float64Array(count);
  bestTokensInto(vectors, dim, queries, quads, token, similarity, maxAbs);
  return { token: Array.from(token), similarity: Array.from(similarity) };
}

const maxAbsOf = (v: Float32Array): number => v.reduce((m, x) => Math.max(m, Math.abs(x)), 0);

describe('bestTokensInto', () => {
  it('with and without maxAbs (float32 proposals), equals the float64 reference bit for bit', () => {
    const dim = 384;
    const n = 3000;
    const r = rng(7);
    const vectors = Float32Array.from({ length: n * dim }, r);
    const rows = 6;
    const queries = Float32Array.from({ length: rows * dim }, r);
    // Ranges of 1 to 200 rows (the float64 path below 8 rows), each asked by several rows.
    const quads: number[] = [];
    let slot = 0;
    for (let start = 0; start + 200 < n; start += 211) {
      const size = 1 + ((start * 7) % 200);
      for (let row = 0; row < rows; row += 1 + (start % 2))
        quads.push(slot++, row, start, start + size);
    }
    quads.push(slot, 0, 50, 50); // an empty range
    const q = Int32Array.from(quads);
    const want = reference(vectors, dim, queries, q);
    expect(run(vectors, dim, queries, q)).toEqual(want);
    expect(run(vectors, dim, queries, q, maxAbsOf(vectors))).toEqual(want);
  });

  it('with maxAbs, keeps the first of equal rows and the float64 winner of a near-tie', () => {
    const dim = 64;
    const r = rng(11);
    const query = Float32Array.from({ length: dim }, r);
    // The query itself: no noise row comes near it.
    const base = query.slice();
    // 40 rows: noise, then at 10 and 25 the same vector (a tie: the first wins), at 30 that
    // vector with one component moved by one float32 step (a difference below float32's sum
    // error, but not float64's), and random rows elsewhere.
    const vectors = new Float32Array(40 * dim);
    for (let t = 0; t < 40; t++)
      for (let j = 0; j < dim; j++) vectors[t * dim + j] = 0.1 * r() * (t % 3);
    vectors.set(base, 10 * dim);
    vectors.set(base, 25 * dim);
    const nudged = base.slice();
    const j0 = query.findIndex((x) => x > 0.1);
    nudged[j0] = Math.fround(nudged[j0]! * (1 + 2 ** -23) + 2 ** -30);
    vectors.set(nudged, 30 * dim);
    const quads = Int32Array.from([0, 0, 0, 40, 1, 0, 5, 28, 2, 0, 20, 40]);
    const want = reference(vectors, dim, query, quads);
    const got = run(vectors, dim, query, quads, maxAbsOf(vectors));
    expect(got).toEqual(want);
    expect(got).toEqual(run(vectors, dim, query, quads));
    // 5..27 holds both copies: the first (row 10) wins; 20..39 holds a copy and the nudged
    // vector, which wins by less than float32 can tell (row 30).
    expect(got.token[1]).toBe(5);
    expect(got.token[2]).toBe(10);
  });

  it('with maxAbs, finds the float64 best where float32 ranks another row first', () => {
    // Two rows whose float32 sums (the kernel's: four lanes by j mod 4, then (0 + 1) + (2 + 3),
    // emulated here with Math.fround) order them one way and whose float64 sums order them the
    // other: found by nudging a few components of a copy until that happens.
    const dim = 96;
    const r = rng(5);
    const f = Math.fround;
    const sum32 = (q: Float32Array, t: Float32Array): number => {
      const lane = [0, 0, 0, 0];
      for (let j = 0; j < dim; j++) lane[j % 4] = f(lane[j % 4]! + f(q[j]! * t[j]!));
      return f(f(lane[0]! + lane[1]!) + f(lane[2]! + lane[3]!));
    };
    const sum64 = (q: Float32Array, t: Float32Array): number => {
      let s = 0;
      for (let j = 0; j < dim; j++) s += q[j]! * t[j]!;
      return s;
    };
    const query = Float32Array.from({ length: dim }, r);
    let pair: [Float32Array, Float32Array] | undefined;
    for (let tries = 0; tries < 20_000 && pair === undefined; tries++) {
      const a = Float32Array.from(query, (x) => f(x + 0.05 * r()));
      const b = a.slice();
      for (let m = 0; m < 6; m++) {
        const j = Math.floor((r() + 0.5) * dim);
        b[j] = f(b[j]! * (1 + r() * 2 ** -20));
      }
      if (sum32(query, a) > sum32(query, b) && sum64(query, a) < sum64(query, b)) pair = [a, b];
    }
    expect(pair).toBeDefined();
    const vectors = new Float32Array(12 * dim);
    for (let i = 0; i < vectors.length; i++) vectors[i] = 0.01 * r();
    vectors.set(pair![0], 3 * dim);
    vectors.set(pair![1], 8 * dim);
    const quads = Int32Array.from([0, 0, 0, 12]);
    const got = run(vectors, dim, query, quads, maxAbsOf(vectors));
    expect(got).toEqual(reference(vectors, dim, query, quads));
    expect(got.token[0]).toBe(8);
  });

  it('scores every row in float64 when the bound is not finite', () => {
    const dim = 16;
    const vectors = new Float32Array(12 * dim).fill(1);
    vectors[5 * dim] = 2;
    const query = new Float32Array(dim).fill(1);
    const quads = Int32Array.from([0, 0, 0, 12]);
    expect(run(vectors, dim, query, quads, Number.POSITIVE_INFINITY)).toEqual(
      reference(vectors, dim, query, quads),
    );
  });
});
