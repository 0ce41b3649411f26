import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { ScorerInputError } from './errors.js';
import { JsSimilarityKernel } from './js-kernel.js';
import { OrtSimilarityKernel } from './ort-kernel.js';
import { testTopK } from './testing/fake-kernel.js';
import { rng, unitVectors } from './testing/random.js';
import { referenceTopK } from './testing/reference.js';
import { dot64, dotsInto, dotsIntoJs, dotsIntoWasm } from './dots.js';
import { RunningTopK } from './running-top-k.js';
import { effectiveChunkSize, exactTopK, flatBankSource, type BankChunkSource } from './top-k.js';

const ort = new OrtSimilarityKernel({ threads: 1 });
afterAll(() => ort.dispose());

describe('exactTopK', () => {
  it.each([
    [64, 65_536],
    [64, 1000],
    [64, 37],
    [64, 10],
    [5, 3],
    [1, 1],
  ])('k = %i, chunk = %i: equals the float64 reference', async (k, chunkSize) => {
    const random = rng(k * 1000 + chunkSize);
    const dim = 32;
    const q = unitVectors(6, dim, random);
    const x = unitVectors(2500, dim, random);
    const top = await exactTopK(ort, q, 6, flatBankSource(x, dim), { k, chunkSize });
    const ref = referenceTopK(q, x, dim, k);
    expect(top.k).toBe(k);
    for (let r = 0; r < 6; r++) {
      expect(Array.from(top.indices.subarray(r * k, (r + 1) * k))).toEqual(ref.indices[r]);
      for (let o = 0; o < k; o++) {
        // the returned hits are rescored in float64
        expect(Math.abs(top.values[r * k + o]! - ref.values[r]![o]!)).toBeLessThan(1e-12);
      }
    }
  });

  it('gives the same result with the js and onnxruntime kernels', async () => {
    const random = rng(99);
    const q = unitVectors(4, 16, random);
    const x = unitVectors(3000, 16, random);
    const source = flatBankSource(x, 16);
    const a = await exactTopK(ort, q, 4, source, { k: 64, chunkSize: 700 });
    const b = await exactTopK(new JsSimilarityKernel(), q, 4, source, { k: 64, chunkSize: 700 });
    expect(a.indices).toEqual(b.indices);
  });

  it('keeps the smaller bank index first for duplicate vectors in different chunks', async () => {
    const random = rng(4);
    const dim = 16;
    const x = unitVectors(500, dim, random);
    const q = x.slice(0, dim);
    // tokens 0, 130, 260, 390 are copies of the query: the top-4 are exactly these, in order
    for (const at of [390, 130, 260]) x.set(q, at * dim);
    for (const chunkSize of [1, 7, 100, 130, 1000]) {
      const top = await exactTopK(ort, q, 1, flatBankSource(x, dim), { k: 6, chunkSize });
      expect(Array.from(top.indices.subarray(0, 4))).toEqual([0, 130, 260, 390]);
    }
  });

  it.each([
    ['onnxruntime', ort],
    ['js', new JsSimilarityKernel()],
  ] as const)(
    '%s: many duplicates across the k-th place: the smallest indices, whatever the chunking',
    async (_name, kernel) => {
      const random = rng(21);
      const dim = 24;
      const x = unitVectors(3000, dim, random);
      const q = unitVectors(2, dim, random);
      // 150 copies of one vector, scattered; it is the best match of query row 0
      const copy = q.slice(0, dim);
      const copies = Array.from({ length: 150 }, (_, i) => 7 + 19 * i);
      for (const at of copies) x.set(copy, at * dim);
      for (const chunkSize of [10, 333, 4096]) {
        const top = await exactTopK(kernel, q, 2, flatBankSource(x, dim), { k: 64, chunkSize });
        expect(Array.from(top.indices.subarray(0, 64))).toEqual(copies.slice(0, 64));
        expect(new Set(top.values.subarray(0, 64)).size).toBe(1);
        expect(top.widenedRows).toBeGreaterThanOrEqual(1);
        expect(Array.from(top.indices.subarray(64))).toEqual(
          referenceTopK(q.subarray(dim), x, dim, 64).indices[0],
        );
      }
    },
  );

  it.each([
    ['onnxruntime', ort],
    ['js', new JsSimilarityKernel()],
  ] as const)(
    '%s: with a tie order, duplicates across the k-th place are taken in that order',
    async (_name, kernel) => {
      const random = rng(22);
      const dim = 24;
      const x = unitVectors(3000, dim, random);
      const q = unitVectors(1, dim, random);
      const copies = Array.from({ length: 150 }, (_, i) => 7 + 19 * i);
      for (const at of copies) x.set(q, at * dim);
      // Places: the reverse of the index order, so the largest indices come first.
      const tieOrder = Int32Array.from({ length: 3000 }, (_, i) => 2999 - i);
      for (const chunkSize of [10, 333, 4096]) {
        const top = await exactTopK(kernel, q, 1, flatBankSource(x, dim), {
          k: 64,
          chunkSize,
          tieOrder,
        });
        expect(Array.from(top.indices), `chunk ${chunkSize}`).toEqual(
          [...copies].reverse().slice(0, 64),
        );
      }
      await expect(
        exactTopK(kernel, q, 1, flatBankSource(x, dim), { k: 4, tieOrder: new Int32Array(5) }),
      ).rejects.toThrow(/tieOrder has 5 places for 3000 tokens/);
    },
  );

  it('refuses k larger than the bank, or clamps when asked', async () => {
    const random = rng(1);
    const source = flatBankSource(unitVectors(10, 8, random), 8);
    const q = unitVectors(2, 8, random);
    const error = await exactTopK(ort, q, 2, source, { k: 64 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ScorerInputError);
    expect((error as ScorerInputError).reason).toBe('k-exceeds-bank');
    expect((error as Error).message).toBe('k = 64 is larger than the bank of 10 tokens');
    const top = await exactTopK(ort, q, 2, source, { k: 64, clampK: true });
    expect(top.k).toBe(10);
    expect(new Set(top.indices.subarray(0, 10)).size).toBe(10);
  });

  it('refuses an empty bank', async () => {
    const q = unitVectors(1, 8, rng(2));
    await expect(
      exactTopK(ort, q, 1, flatBankSource(new Float32Array(0), 8), { k: 4 }),
    ).rejects.toThrow(/the bank to search holds no tokens/);
  });

  it('names the first non-finite bank token, and a non-finite query row', async () => {
    const random = rng(8);
    const x = unitVectors(300, 8, random);
    x[211 * 8 + 2] = NaN;
    const q = unitVectors(2, 8, random);
    const error = await exactTopK(ort, q, 2, flatBankSource(x, 8), {
      k: 4,
      chunkSize: 100,
    }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ScorerInputError);
    expect((error as ScorerInputError).reason).toBe('non-finite');
    expect((error as Error).message).toBe(
      'bank token 211 has a non-finite component (NaN at dimension 2)',
    );
    q[8 + 5] = Infinity;
    await expect(
      exactTopK(ort, q, 2, flatBankSource(unitVectors(9, 8, random), 8), { k: 4 }),
    ).rejects.toThrow('query row 1 has a non-finite component (Infinity at dimension 5)');
  });

  it('accepts an asynchronous source and keeps memory to one chunk', async () => {
    const random = rng(12);
    const dim = 8;
    const x = unitVectors(1000, dim, random);
    const q = unitVectors(3, dim, random);
    let largest = 0;
    const source: BankChunkSource = {
      size: 1000,
      dim,
      read: async (start, end) => {
        largest = Math.max(largest, end - start);
        return x.slice(start * dim, end * dim);
      },
      dots: (indices, from, count, query, at, out) => {
        for (let h = 0; h < count; h++) out[h] = dot64(x, indices[from + h]! * dim, query, at, dim);
      },
    };
    const top = await exactTopK(ort, q, 3, source, { k: 8, chunkSize: 128 });
    expect(largest).toBe(128);
    expect(Array.from(top.indices.subarray(0, 8))).toEqual(referenceTopK(q, x, dim, 8).indices[0]);
  });
});

describe('dotsInto', () => {
  it('scores equal vectors bit-identically at every position, within 1e-12 of dot64', () => {
    const random = rng(5);
    const dim = 37;
    const x = unitVectors(20, dim, random);
    const q = unitVectors(1, dim, random);
    // rows 3..13 are all copies of row 0: in the 8-wide block and in the remainder alike
    for (let i = 3; i < 14; i++) x.set(x.subarray(0, dim), i * dim);
    const offsets = Int32Array.from({ length: 14 }, (_, i) => i * dim);
    const out = new Float64Array(14);
    dotsInto(x, offsets, 14, q, 0, out, dim);
    for (let i = 3; i < 14; i++) expect(out[i]).toBe(out[0]);
    for (let i = 0; i < 14; i++)
      expect(Math.abs(out[i]! - dot64(x, i * dim, q, 0, dim))).toBeLessThan(1e-12);
  });
});

describe('dotsInto, a query row at an offset', () => {
  it('is the float64 sum in order of j, bit for bit, for every row count and offset', () => {
    const random = rng(9);
    const dim = 29;
    const x = unitVectors(23, dim, random);
    const q = unitVectors(4, dim, random);
    for (const count of [1, 7, 8, 9, 23]) {
      for (const row of [0, 1, 3]) {
        const offsets = Int32Array.from({ length: count }, (_, h) => ((h * 5) % 23) * dim);
        const out = new Float64Array(count);
        dotsInto(x, offsets, count, q, row * dim, out, dim);
        for (let h = 0; h < count; h++) {
          let s = 0;
          for (let j = 0; j < dim; j++) s += q[row * dim + j]! * x[offsets[h]! + j]!;
          expect(out[h]).toBe(s);
        }
      }
    }
  });
});

describe('dotsInto, each path (WebAssembly, JavaScript, and the choice between them)', () => {
  it.each([
    ['dotsInto', dotsInto],
    ['the WebAssembly kernel', dotsIntoWasm],
    ['the JavaScript loop', dotsIntoJs],
  ])(
    '%s: the float64 sum in order of j, bit for bit, for dimensions off the 4-wide step, row counts off the 8-row block, runs, jumps, and more rows than one kernel call',
    (_name, dots) => {
      const random = rng(17);
      const n = 1100;
      for (const dim of [1, 3, 4, 5, 8, 16, 29, 384]) {
        // Values over twenty binary orders of magnitude, so the float64 sums round.
        const wide = (): number => (random() - 0.5) * 2 ** Math.floor(random() * 20 - 10);
        const x = Float32Array.from({ length: n * dim }, wide);
        const q = Float32Array.from({ length: 2 * dim }, wide);
        for (const count of [0, 1, 2, 7, 8, 9, 17, 1030]) {
          for (const jumps of [0, 1, 5]) {
            // One run (jumps 0), runs broken by a jump every 9 rows, or every row at random.
            const offsets = Int32Array.from({ length: count }, (_, h) => {
              const jump = jumps === 5 || (jumps === 1 && h % 9 === 8);
              return (jump ? (h * 37 + 11) % n : (h + 3) % n) * dim;
            });
            const backing = new Float64Array(count + 2).fill(7);
            const out = backing.subarray(1, count + 1);
            dots(x, offsets, count, q, dim, out, dim);
            for (let h = 0; h < count; h++) {
              let s = 0;
              for (let j = 0; j < dim; j++) s += q[dim + j]! * x[offsets[h]! + j]!;
              if (out[h] !== s) expect(out[h], `dim ${dim} count ${count} row ${h}`).toBe(s);
            }
            expect([backing[0], backing[count + 1]]).toEqual([7, 7]);
          }
        }
      }
    },
  );
});

describe('effectiveChunkSize', () => {
  it('shrinks the chunk to the score budget but not below 1,024 tokens', () => {
    expect(effectiveChunkSize(20)).toBe(65_536);
    expect(effectiveChunkSize(2400)).toBe(Math.floor(2 ** 24 / 2400));
    expect(effectiveChunkSize(1e6)).toBe(1024);
    expect(effectiveChunkSize(1e6, 10)).toBe(10);
  });
});

describe('RunningTopK', () => {
  it('merging chunks of any size equals one sort by (score desc, index asc)', () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: -5, max: 5 }), { minLength: 1, maxLength: 60 }),
        fc.integer({ min: 1, max: 12 }),
        fc.integer({ min: 1, max: 20 }),
        (scores, k, chunk) => {
          const running = new RunningTopK(1, k);
          for (let start = 0; start < scores.length; start += chunk) {
            running.merge(testTopK(scores.slice(start, start + chunk), k), start);
          }
          const expected = scores
            .map((s, i) => ({ s, i }))
            .sort((a, b) => b.s - a.s || a.i - b.i)
            .slice(0, k);
          expect(running.count).toBe(expected.length);
          expect(Array.from(running.indices.subarray(0, running.count))).toEqual(
            expected.map((e) => e.i),
          );
          expect(Array.from(running.values.subarray(0, running.count))).toEqual(
            expected.map((e) => e.s),
          );
        },
      ),
    );
  });
});
