import { afterAll, describe, expect, it } from 'vitest';
import { INT8_RESIDENT_MARGIN, quantizeRows } from './int8-top-k.js';
import { NonFiniteScoresError } from './kernel.js';
import { OrtSimilarityKernel } from './ort-kernel.js';
import { rng, unitVectors } from './testing/random.js';
import { referenceDot, referenceTopK } from './testing/reference.js';
import { exactTopK, flatBankSource } from './top-k.js';

const DIM = 48;
const N = 3000;
const random = rng(41);
const bank = unitVectors(N, DIM, random);
const queries = unitVectors(9, DIM, random);
const kernel = new OrtSimilarityKernel({ threads: 1, spin: false });
afterAll(() => kernel.dispose());

const maxAbs = (v: Float32Array, at: number, dim: number): number => {
  let m = 0;
  for (let d = 0; d < dim; d++) m = Math.max(m, Math.abs(v[at + d]!));
  return m;
};

describe('quantizeRows', () => {
  it('scales each row by 127 / max|row| around 128', () => {
    const { codes, scales } = quantizeRows(Float32Array.of(0.5, -1, 0.25, 0, 0, 0), 2, 3);
    // 0.5 · 127 = 63.5 → 64; −1 → −127; 0.25 · 127 = 31.75 → 32; a zero row stays at 128.
    expect(Array.from(codes)).toEqual([192, 1, 160, 128, 128, 128]);
    expect(scales[0]).toBeCloseTo(1 / 127, 9);
    expect(scales[1]).toBe(1);
  });

  it('refuses a non-finite value', () => {
    expect(() => quantizeRows(Float32Array.of(0, Number.NaN), 1, 2)).toThrow(NonFiniteScoresError);
    expect(() => quantizeRows(Float32Array.of(Infinity, 0), 1, 2)).toThrow(NonFiniteScoresError);
  });
});

describe('an int8 resident bank', () => {
  it('estimates every score within the bound of its two roundings', async () => {
    await kernel.makeResident(bank, N, DIM, 'int8');
    const k = 40;
    const top = await kernel.topK(queries, 9, bank, N, DIM, k);
    expect(top.approximate).toBe(true);
    expect(kernel.residentHits).toBe(1);
    for (let r = 0; r < 9; r++) {
      // |q·x − q̂·x̂| ≤ ‖q‖₁ · max|x − x̂| + Σ|q − q̂| · max|x̂|: half a step of 63 levels of
      // the bank row, of 127 levels of the query row.
      const qMax = maxAbs(queries, r * DIM, DIM);
      let q1 = 0;
      for (let d = 0; d < DIM; d++) q1 += Math.abs(queries[r * DIM + d]!);
      for (let h = 0; h < k; h++) {
        const i = top.indices[r * k + h]!;
        const xMax = maxAbs(bank, i * DIM, DIM);
        const bound = (q1 * xMax) / 126 + ((DIM * qMax) / 254) * xMax * (1 + 1 / 126) + 1e-6;
        const exact = referenceDot(queries, r, bank, i, DIM);
        expect(Math.abs(top.values[r * k + h]! - exact)).toBeLessThanOrEqual(bound);
      }
    }
  });

  it('gives a row the same proposals alone as stacked with others', async () => {
    await kernel.makeResident(bank, N, DIM, 'int8');
    const all = await kernel.topK(queries, 9, bank, N, DIM, 25);
    for (const r of [0, 4, 8]) {
      const one = await kernel.topK(queries.slice(r * DIM, (r + 1) * DIM), 1, bank, N, DIM, 25);
      expect(one.indices).toEqual(all.indices.slice(r * 25, (r + 1) * 25));
      expect(one.values).toEqual(all.values.slice(r * 25, (r + 1) * 25));
    }
  });

  it('through exactTopK with the store margin, returns the float64 top-k', async () => {
    await kernel.makeResident(bank, N, DIM, 'int8');
    const k = 64;
    const top = await exactTopK(kernel, queries, 9, flatBankSource(bank, DIM), {
      k,
      margin: INT8_RESIDENT_MARGIN,
    });
    expect(top.approximate).toBe(true);
    expect(top.passes).toBe(1);
    expect(top.widenedRows).toBe(0);
    const ref = referenceTopK(queries, bank, DIM, k);
    for (let r = 0; r < 9; r++) {
      expect(Array.from(top.indices.subarray(r * k, (r + 1) * k))).toEqual(ref.indices[r]);
      expect(Array.from(top.values.subarray(r * k, (r + 1) * k))).toEqual(ref.values[r]);
    }
  });

  it('refuses a non-finite query row, and another bank takes the float32 path', async () => {
    await kernel.makeResident(bank, N, DIM, 'int8');
    const bad = queries.slice(0, DIM);
    bad[3] = Number.NaN;
    await expect(kernel.topK(bad, 1, bank, N, DIM, 5)).rejects.toThrow(NonFiniteScoresError);
    const other = bank.slice(0, 500 * DIM);
    const plain = await kernel.topK(queries, 9, other, 500, DIM, 5);
    expect(plain.approximate).toBeUndefined();
    expect(Array.from(plain.indices.subarray(0, 5))).toEqual(
      referenceTopK(queries.slice(0, DIM), other, DIM, 5).indices[0],
    );
  });

  it('runs on the CPU provider only', async () => {
    const gpu = new OrtSimilarityKernel({ executionProvider: 'webgpu' });
    await expect(gpu.makeResident(bank, N, DIM, 'int8')).rejects.toThrow(/CPU provider only/);
    await gpu.dispose();
  });
});
