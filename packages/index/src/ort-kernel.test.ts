import { afterAll, describe, expect, it } from 'vitest';
import { JsSimilarityKernel } from './js-kernel.js';
import { NonFiniteScoresError } from './kernel.js';
import { OrtSimilarityKernel } from './ort-kernel.js';
import { INT8_BANK_LEVELS, quantizeBank, similarityGraph } from './onnx-graph.js';
import { rng, unitVectors } from './testing/random.js';
import { referenceTopK } from './testing/reference.js';
import { exactTopK, flatBankSource } from './top-k.js';

const ort = new OrtSimilarityKernel({ threads: 1 });
const js = new JsSimilarityKernel();
afterAll(() => ort.dispose());

describe('OrtSimilarityKernel options', () => {
  it('runs with spinning off and refuses a bad thread count', async () => {
    const quiet = new OrtSimilarityKernel({ threads: 2, spin: false });
    const random = rng(17);
    const q = unitVectors(3, 16, random);
    const x = unitVectors(200, 16, random);
    const a = await quiet.topK(q, 3, x, 200, 16, 8);
    const b = await ort.topK(q, 3, x, 200, 16, 8);
    expect(a.indices).toEqual(b.indices);
    await quiet.dispose();
    await expect(quiet.topK(q, 3, x, 200, 16, 8)).rejects.toThrow(/after dispose/);
    expect(() => new OrtSimilarityKernel({ threads: 0 })).toThrow(/threads/);
  });

  it('serves concurrent calls with different k', async () => {
    const random = rng(18);
    const q = unitVectors(2, 16, random);
    const x = unitVectors(300, 16, random);
    const ks = [1, 5, 17, 64, 3, 40];
    const tops = await Promise.all(ks.map((k) => ort.topK(q, 2, x, 300, 16, k)));
    tops.forEach((t, i) => expect(t.kOut).toBe(ks[i]));
    tops.forEach((t, i) =>
      expect(Array.from(t.indices.subarray(0, ks[i]!))).toEqual(
        referenceTopK(q, x, 16, ks[i]!).indices[0],
      ),
    );
  });
});

describe('similarityGraph', () => {
  it('serialises a ModelProto that starts with ir_version 8', () => {
    const bytes = similarityGraph({ dim: 8, topK: true, scores: false });
    expect(bytes).toBeInstanceOf(Uint8Array);
    // field 1 (ir_version), varint: tag 0x08, value 8
    expect([bytes[0], bytes[1]]).toEqual([0x08, 8]);
  });

  it('refuses a graph with no output or a bad dim', () => {
    expect(() => similarityGraph({ dim: 8, topK: false, scores: false })).toThrow(/no output/);
    expect(() => similarityGraph({ dim: 0, topK: true, scores: false })).toThrow(/bad dim/);
  });
});

describe.each([
  ['onnxruntime', ort],
  ['js', js],
] as const)('%s kernel', (_name, kernel) => {
  it('returns the float64 reference top-k, values within float32 precision', async () => {
    const random = rng(7);
    const dim = 48;
    const q = unitVectors(5, dim, random);
    const x = unitVectors(700, dim, random);
    const top = await kernel.topK(q, 5, x, 700, dim, 16);
    const ref = referenceTopK(q, x, dim, 16);
    expect(top.kOut).toBe(16);
    expect(top.values).toBeInstanceOf(Float32Array);
    expect(top.indices).toBeInstanceOf(Int32Array);
    expect(top.values.length).toBe(5 * 16);
    for (let r = 0; r < 5; r++) {
      expect(Array.from(top.indices.subarray(r * 16, r * 16 + 16))).toEqual(ref.indices[r]);
      for (let o = 0; o < 16; o++) {
        expect(top.values[r * 16 + o]).toBeCloseTo(ref.values[r]![o]!, 6);
      }
    }
    expect(top.scores).toBeUndefined();
  });

  it('orders equal scores by ascending index, also across the top-k boundary', async () => {
    const dim = 4;
    const n = 5000;
    const x = new Float32Array(n * dim);
    // every 7th token equals the query direction, all others are orthogonal to it
    for (let i = 0; i < n; i++) x[i * dim + (i % 7 === 0 ? 0 : 1)] = 1;
    const q = Float32Array.of(1, 0, 0, 0, 0, 0, 1, 0);
    const top = await kernel.topK(q, 2, x, n, dim, 64);
    expect(Array.from(top.indices.subarray(0, 64))).toEqual(
      Array.from({ length: 64 }, (_, i) => 7 * i),
    );
    // second row: all scores are 0, so the 64 smallest indices
    expect(Array.from(top.indices.subarray(64))).toEqual(Array.from({ length: 64 }, (_, i) => i));
  });

  it('returns min(k, n) entries and, when asked, the full score matrix', async () => {
    const random = rng(3);
    const q = unitVectors(3, 8, random);
    const x = unitVectors(10, 8, random);
    const top = await kernel.topK(q, 3, x, 10, 8, 64, true);
    expect(top.kOut).toBe(10);
    expect(top.scores?.length).toBe(30);
    const direct = await kernel.scores(q, 3, x, 10, 8);
    for (let i = 0; i < 30; i++) expect(top.scores![i]).toBeCloseTo(direct[i]!, 6);
  });

  it('reads a bank passed as a view with a byte offset', async () => {
    const random = rng(11);
    const whole = unitVectors(100, 8, random);
    const view = whole.subarray(40 * 8, 60 * 8);
    const q = whole.slice(45 * 8, 46 * 8);
    const top = await kernel.topK(q, 1, view, 20, 8, 1);
    expect(top.indices[0]).toBe(5);
    expect(top.values[0]).toBeCloseTo(1, 6);
  });

  it.each([NaN, Infinity, -Infinity])('refuses a %s component', async (bad) => {
    const random = rng(5);
    const q = unitVectors(2, 8, random);
    const x = unitVectors(30, 8, random);
    x[17 * 8 + 3] = bad;
    await expect(kernel.topK(q, 2, x, 30, 8, 4)).rejects.toBeInstanceOf(NonFiniteScoresError);
    await expect(kernel.scores(q, 2, x, 30, 8)).rejects.toBeInstanceOf(NonFiniteScoresError);
  });

  it('refuses shapes that do not match', async () => {
    const x = new Float32Array(10 * 8);
    await expect(kernel.topK(new Float32Array(8), 1, x, 10, 4, 2)).rejects.toThrow(/queries/);
    await expect(kernel.topK(new Float32Array(8), 1, x, 11, 8, 2)).rejects.toThrow(/bank/);
  });
});

describe('OrtSimilarityKernel resident bank', () => {
  it('returns the same top-k as the streamed path, and only for that exact bank', async () => {
    const random = rng(31);
    const dim = 24;
    const x = unitVectors(3000, dim, random);
    const other = Float32Array.from(x); // same values, different memory: not resident
    const q = unitVectors(7, dim, random);
    const kernel = new OrtSimilarityKernel({ threads: 1 });
    const plain = await kernel.topK(q, 7, x, 3000, dim, 40);
    await kernel.makeResident(x, 3000, dim);
    const resident = await kernel.topK(q, 7, x, 3000, dim, 40);
    expect(kernel.residentHits).toBe(1);
    expect(Array.from(resident.indices)).toEqual(Array.from(plain.indices));
    expect(Array.from(resident.values)).toEqual(Array.from(plain.values));
    // exactTopK over a bank that fits one chunk hands the kernel a view of the same memory.
    const exact = await exactTopK(kernel, q, 7, flatBankSource(x, dim), { k: 32 });
    expect(kernel.residentHits).toBeGreaterThanOrEqual(2);
    const reference = referenceTopK(q, x, dim, 32);
    for (let r = 0; r < 7; r++) {
      expect(Array.from(exact.indices.subarray(r * 32, (r + 1) * 32))).toEqual(
        reference.indices[r],
      );
    }
    // A bank with other memory, or a part of the resident one, goes the ordinary way.
    const hits = kernel.residentHits;
    const fromOther = await kernel.topK(q, 7, other, 3000, dim, 40);
    expect(Array.from(fromOther.indices)).toEqual(Array.from(plain.indices));
    const part = await kernel.topK(q, 7, x.subarray(0, 1000 * dim), 1000, dim, 40);
    expect(Array.from(part.indices)).toEqual(
      Array.from((await js.topK(q, 7, x.subarray(0, 1000 * dim), 1000, dim, 40)).indices),
    );
    expect(kernel.residentHits).toBe(hits);
    await kernel.releaseResident();
    expect(Array.from((await kernel.topK(q, 7, x, 3000, dim, 40)).indices)).toEqual(
      Array.from(plain.indices),
    );
    expect(kernel.residentHits).toBe(hits);
    await kernel.dispose();
  });

  it('refuses a resident bank of the wrong shape', async () => {
    const kernel = new OrtSimilarityKernel({ threads: 1 });
    await expect(kernel.makeResident(new Float32Array(10), 3, 4)).rejects.toThrow(/bank/);
    await kernel.dispose();
    await expect(kernel.makeResident(new Float32Array(12), 3, 4)).rejects.toThrow(/dispose/);
  });
});

/** Rows × bank rows × dim of the constant-score tests: the clustered index's, and a small one. */
const CONSTANT_SHAPES = [
  [32, 4096, 384],
  [3, 17, 16],
] as const;

describe('OrtSimilarityKernel constant scores', () => {
  it('scores a constant bank within float32 rounding of the float64 products, the same every call', async () => {
    for (const threads of [1, 2]) {
      const kernel = new OrtSimilarityKernel({ threads, spin: false });
      const random = rng(41 + threads);
      for (const [rows, n, dim] of CONSTANT_SHAPES) {
        const q = unitVectors(rows, dim, random);
        const x = unitVectors(n, dim, random);
        const constant = await kernel.constantScores(x, n, dim);
        const got = await constant.scores(q, rows);
        // Packed once, its GEMM may sum in another order than the fed path's: the same values
        // call after call, not necessarily the fed path's last bits.
        expect(await constant.scores(q, rows)).toEqual(got);
        // The float64 inner products, written out.
        for (let r = 0; r < rows; r += 7) {
          for (let i = 0; i < n; i += 13) {
            let s = 0;
            for (let d = 0; d < dim; d++) s += q[r * dim + d]! * x[i * dim + d]!;
            expect(Math.abs(got[r * n + i]! - s)).toBeLessThan(1e-5);
          }
        }
        await constant.release();
        await expect(constant.scores(q, rows)).rejects.toThrow(/after release/);
      }
      await kernel.dispose();
    }
  });

  it('refuses non-finite scores and a query of the wrong shape', async () => {
    const x = unitVectors(8, 4, rng(5));
    const constant = await ort.constantScores(x, 8, 4);
    await expect(constant.scores(new Float32Array(4).fill(Number.NaN), 1)).rejects.toThrow(
      NonFiniteScoresError,
    );
    await expect(constant.scores(new Float32Array(5), 1)).rejects.toThrow();
    await constant.release();
  });
});

describe('OrtSimilarityKernel int8 constant scores', () => {
  it('quantises each bank row to ±63 with its own scale, rounding half away from zero', () => {
    // Rows [1, −0.5, 0.25] and [0, 0, 0] (a zero row keeps scale 1), stored transposed.
    const b = quantizeBank(Float32Array.of(1, -0.5, 0.25, 0, 0, 0), 2, 3);
    expect(Array.from(b.weights)).toEqual([63, 0, -32, 0, 16, 0]);
    expect(Array.from(b.scales)).toEqual([Math.fround(1 / 63), 1]);
    expect(INT8_BANK_LEVELS).toBe(63);
    expect(() => quantizeBank(Float32Array.of(1, Number.NaN), 1, 2)).toThrow(/not finite/);
  });

  it('scores within the two quantisations’ bound of the float64 products, the same every call', async () => {
    const random = rng(61);
    for (const [rows, n, dim] of CONSTANT_SHAPES) {
      const q = unitVectors(rows, dim, random);
      const x = unitVectors(n, dim, random);
      const constant = await ort.constantScores(x, n, dim, 'int8');
      const got = await constant.scores(q, rows);
      expect(await constant.scores(q, rows)).toEqual(got);
      // The query batch quantised to uint8 over [min(0, least), max(0, largest)]: a step `sa`;
      // row i of the bank to ±63: a step `sb` = max|x_i| / 63. Each product is off by at most
      // |q|·sb/2 + |x|·sa/2 + sa·sb/4 a dimension.
      let least = 0;
      let largest = 0;
      for (const v of q) [least, largest] = [Math.min(least, v), Math.max(largest, v)];
      const sa = (largest - least) / 255;
      const steps = Array.from({ length: n }, (_, i) => {
        let max = 0;
        for (let d = 0; d < dim; d++) max = Math.max(max, Math.abs(x[i * dim + d]!));
        return max / 63;
      });
      let worst = 0;
      for (let r = 0; r < rows; r++) {
        for (let i = 0; i < n; i++) {
          const sb = steps[i]!;
          let s = 0;
          let bound = 1e-5;
          for (let d = 0; d < dim; d++) {
            const [a, w] = [q[r * dim + d]!, x[i * dim + d]!];
            s += a * w;
            bound += (Math.abs(a) * sb) / 2 + (Math.abs(w) * sa) / 2 + (sa * sb) / 4;
          }
          expect(Math.abs(got[r * n + i]! - s)).toBeLessThanOrEqual(bound);
          worst = Math.max(worst, Math.abs(got[r * n + i]! - s));
        }
      }
      // Not float32's scores: the integer product is coarser.
      expect(worst).toBeGreaterThan(1e-4);
      await constant.release();
    }
  });

  it('refuses a non-finite query row', async () => {
    const x = unitVectors(8, 4, rng(62));
    const constant = await ort.constantScores(x, 8, 4, 'int8');
    const q = unitVectors(2, 4, rng(63));
    q[5] = Number.POSITIVE_INFINITY;
    await expect(constant.scores(q, 2)).rejects.toThrow(NonFiniteScoresError);
    await constant.release();
  });
});
