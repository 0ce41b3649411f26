import { describe, expect, it } from 'vitest';
import {
  EMPTY_MEMORY_SIMILARITY,
  maxSim,
  maxSimBackward,
  multiPositiveCrossEntropy,
  queryLoss,
} from './loss.js';
import { applyAdapterInto, type AdapterParams } from '../model.js';
import { Prng } from '../prng.js';
import {
  finiteDifferences,
  memoriesOf,
  normals,
  randomSegments,
  referenceCrossEntropy,
  referenceMaxSim,
  relativeError,
  row,
  unitRows,
} from '../testing/reference.js';

const COUNTS = [4, 2, 5, 0, 3, 6, 1];

describe('maxSim', () => {
  it('matches per-memory nested loops (float64 and float32 storage), empty memory = −1', () => {
    const dim = 13;
    const rows = 7; // one block of four rows and three single rows
    const prng = new Prng(1);
    const query = unitRows(rows, dim, prng);
    const { tokenVectors, memoryOffsets } = randomSegments(COUNTS, dim, prng);
    const ref = referenceMaxSim(
      Array.from({ length: rows }, (_, i) => row(query, i, dim)),
      memoriesOf(tokenVectors, memoryOffsets, dim),
    );
    const r64 = maxSim(query, rows, dim, { tokenVectors, memoryOffsets });
    const r32 = maxSim(new Float32Array(query), rows, dim, {
      tokenVectors: new Float32Array(tokenVectors),
      memoryOffsets,
    });
    expect(r64.scores.length).toBe(COUNTS.length);
    for (let m = 0; m < COUNTS.length; m++) {
      expect(r64.scores[m]).toBeCloseTo(ref.scores[m]!, 13);
      expect(Math.abs(r32.scores[m]! - ref.scores[m]!)).toBeLessThan(1e-6);
    }
    expect(r64.scores[3]).toBe(EMPTY_MEMORY_SIMILARITY);
    for (let i = 0; i < rows; i++) expect(r64.argmax[i * COUNTS.length + 3]).toBe(-1);
    // each argmax is a token of its own memory
    for (let i = 0; i < rows; i++) {
      for (let m = 0; m < COUNTS.length; m++) {
        const t = r64.argmax[i * COUNTS.length + m]!;
        if (COUNTS[m] === 0) continue;
        expect(t).toBeGreaterThanOrEqual(memoryOffsets[m]!);
        expect(t).toBeLessThan(memoryOffsets[m + 1]!);
      }
    }
  });

  it('breaks exact ties toward the smallest token index, in blocked and single rows', () => {
    const dim = 4;
    const v = [1, 0, 0, 0];
    const w = [0, 1, 0, 0];
    // memory 0: w, v, v; memory 1: v, v
    const tokenVectors = Float32Array.from([...w, ...v, ...v, ...v, ...v]);
    const memoryOffsets = [0, 3, 5];
    const query = Float32Array.from(Array.from({ length: 5 }, () => v).flat());
    const r = maxSim(query, 5, dim, { tokenVectors, memoryOffsets });
    for (let i = 0; i < 5; i++) {
      expect(r.argmax[i * 2]).toBe(1);
      expect(r.argmax[i * 2 + 1]).toBe(3);
    }
  });

  it('backward matches finite differences w.r.t. the query tokens (float64, rel. < 1e-6)', () => {
    const dim = 9;
    const rows = 6;
    const prng = new Prng(3);
    const query = unitRows(rows, dim, prng);
    const segments = randomSegments(COUNTS, dim, prng);
    const { margins } = referenceMaxSim(
      Array.from({ length: rows }, (_, i) => row(query, i, dim)),
      memoriesOf(segments.tokenVectors, segments.memoryOffsets, dim),
    );
    expect(Math.min(...margins)).toBeGreaterThan(1e-4); // no near-ties: max is differentiable
    const w = normals(COUNTS.length, 1, prng);
    const objective = (): number => {
      const { scores } = maxSim(query, rows, dim, segments);
      return scores.reduce((s, x, m) => s + w[m]! * x, 0);
    };
    const result = maxSim(query, rows, dim, segments);
    const grad = maxSimBackward(result, w, dim, segments, new Float64Array(rows * dim));
    const err = relativeError(grad, finiteDifferences(objective, query));
    console.log(`MaxSim gradient check: rel. error ${err.toExponential(2)}`);
    expect(err).toBeLessThan(1e-6);
  });
});

describe('multiPositiveCrossEntropy', () => {
  it('matches the naive formula, and its gradient sums to zero', () => {
    const scores = [0.31, 0.05, 0.42, -0.2, 0.38];
    const positives = [0, 4];
    const grad = new Float64Array(5);
    const loss = multiPositiveCrossEntropy(scores, positives, 0.07, grad);
    expect(loss).toBeCloseTo(referenceCrossEntropy(scores, positives, 0.07), 12);
    expect(Math.abs(grad.reduce((s, x) => s + x, 0))).toBeLessThan(1e-12);
    const x = Float64Array.from(scores);
    const fd = finiteDifferences(() => multiPositiveCrossEntropy(x, positives, 0.07), x);
    expect(relativeError(grad, fd)).toBeLessThan(1e-6);
  });

  it('stays finite and exact where the naive formula overflows', () => {
    const scores = [1000, -1000, 999];
    expect(referenceCrossEntropy(scores, [2], 0.07)).toBeNaN(); // Infinity / Infinity
    const loss = multiPositiveCrossEntropy(scores, [2], 0.07);
    expect(loss).toBeCloseTo(Math.log1p(Math.exp(1 / 0.07)) - 0, 9);
    expect(multiPositiveCrossEntropy(scores, [0, 1, 2], 0.07)).toBe(0);
  });

  it('refuses an empty or out-of-range positive set', () => {
    expect(() => multiPositiveCrossEntropy([0.1, 0.2], [], 0.07)).toThrow(/no positive/);
    expect(() => multiPositiveCrossEntropy([0.1, 0.2], [2], 0.07)).toThrow(/positive 2/);
  });
});

/** A small random problem: adapter with non-zero B, one query, its candidates. */
function problem(seed: number, dim: number, rank: number, rows: number) {
  const prng = new Prng(seed);
  const params: AdapterParams<Float64Array> = {
    dim,
    rank,
    a: normals(rank * dim, 0.3, prng),
    b: normals(dim * rank, 0.3, prng),
  };
  const tokens = unitRows(rows, dim, prng);
  const candidates = randomSegments(COUNTS, dim, prng);
  return { params, tokens, candidates, positives: [1, 4] };
}

describe('queryLoss', () => {
  it('end to end gradient w.r.t. A and B matches finite differences (float64, rel. < 1e-6)', () => {
    const dim = 8;
    const rank = 3;
    const rows = 5;
    const { params, tokens, candidates, positives } = problem(7, dim, rank, rows);
    const adapted = applyAdapterInto(new Float64Array(rows * dim), params, tokens, rows);
    const { margins } = referenceMaxSim(
      Array.from({ length: rows }, (_, i) => row(adapted, i, dim)),
      memoriesOf(candidates.tokenVectors, candidates.memoryOffsets, dim),
    );
    expect(Math.min(...margins)).toBeGreaterThan(1e-4);
    const query = { tokens, rows, candidates, positives };
    const grads = { a: new Float64Array(rank * dim), b: new Float64Array(dim * rank) };
    const loss = queryLoss(params, query, 0.07, grads);
    expect(loss).toBeGreaterThan(0);
    const objective = (): number => queryLoss(params, query, 0.07);
    const errA = relativeError(grads.a, finiteDifferences(objective, params.a));
    const errB = relativeError(grads.b, finiteDifferences(objective, params.b));
    console.log(
      `cross-entropy gradient check: rel. error A ${errA.toExponential(2)}, B ${errB.toExponential(2)}`,
    );
    expect(errA).toBeLessThan(1e-6);
    expect(errB).toBeLessThan(1e-6);
  });

  it('adds into the gradient buffers (a batch is a sum)', () => {
    const { params, tokens, candidates, positives } = problem(8, 8, 3, 5);
    const query = { tokens, rows: 5, candidates, positives };
    const once = { a: new Float64Array(24), b: new Float64Array(24) };
    const twice = { a: new Float64Array(24), b: new Float64Array(24) };
    queryLoss(params, query, 0.07, once);
    queryLoss(params, query, 0.07, twice);
    queryLoss(params, query, 0.07, twice);
    for (let k = 0; k < 24; k++) expect(twice.b[k]).toBeCloseTo(2 * once.b[k]!, 14);
  });

  it('float32 storage agrees with float64 to 1e-5 (loss and gradients)', () => {
    const dim = 64;
    const rank = 8;
    const rows = 11;
    const { params, tokens, candidates, positives } = problem(9, dim, rank, rows);
    for (let i = 0; i < params.a.length; i++) params.a[i]! *= 0.2;
    const g64 = { a: new Float64Array(rank * dim), b: new Float64Array(dim * rank) };
    const g32 = { a: new Float64Array(rank * dim), b: new Float64Array(dim * rank) };
    const l64 = queryLoss(params, { tokens, rows, candidates, positives }, 0.07, g64);
    const p32 = { dim, rank, a: new Float32Array(params.a), b: new Float32Array(params.b) };
    const q32 = {
      tokens: new Float32Array(tokens),
      rows,
      candidates: {
        tokenVectors: new Float32Array(candidates.tokenVectors),
        memoryOffsets: candidates.memoryOffsets,
      },
      positives,
    };
    const l32 = queryLoss(p32, q32, 0.07, g32);
    expect(Math.abs(l32 - l64) / l64).toBeLessThan(1e-5);
    expect(relativeError(g32.a, g64.a)).toBeLessThan(1e-5);
    expect(relativeError(g32.b, g64.b)).toBeLessThan(1e-5);
  });
});
