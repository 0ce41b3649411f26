import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { tmpDir } from '@bfe/core/testing';
import { fromHalfInto, toHalfInto } from './codecs/fp16.js';
import { fileTokenStore, type MatrixFileLayout } from './file-store.js';
import { JsSimilarityKernel } from './js-kernel.js';
import { OrtSimilarityKernel } from './ort-kernel.js';
import { rng, unitVectors } from './testing/random.js';
import { ExactTokenIndex } from './token-index.js';
import { flatTokenStore } from './token-store.js';

const DIM = 24;
const SEGMENTS = [37, 0, 120, 1, 242]; // rows per segment (an empty one included)
const ort = new OrtSimilarityKernel({ threads: 1 });
afterAll(() => ort.dispose());

let root: string;
beforeEach(() => {
  root = tmpDir('bfe-file-store-');
});

/**
 * Writes `vectors` as segments separated by junk bytes (odd lengths, so float32 rows are not
 * 4-byte aligned in the file), returning the layout and the vectors as a reader must see them.
 */
function writeMatrix(
  vectors: Float32Array,
  dtype: 'float32' | 'float16',
): { layout: MatrixFileLayout; expected: Float32Array; fileBytes: number } {
  const width = dtype === 'float32' ? 4 : 2;
  const parts: Buffer[] = [];
  const segments: Array<{ offset: number; rows: number }> = [];
  let at = 0;
  let row = 0;
  for (const [i, rows] of SEGMENTS.entries()) {
    const junk = Buffer.alloc(13 + 2 * i, 0xa5);
    parts.push(junk);
    at += junk.length;
    const values = vectors.subarray(row * DIM, (row + rows) * DIM);
    let bytes: Buffer;
    if (dtype === 'float32') {
      bytes = Buffer.from(values.slice().buffer);
    } else {
      const half = new Uint16Array(values.length);
      toHalfInto(half, values);
      bytes = Buffer.from(half.buffer);
    }
    segments.push({ offset: at, rows });
    parts.push(bytes);
    at += bytes.length;
    row += rows;
  }
  parts.push(Buffer.alloc(9, 0x5a));
  const path = join(root, `matrix-${dtype}.bin`);
  const file = Buffer.concat(parts);
  writeFileSync(path, file);
  let expected = vectors;
  if (dtype === 'float16') {
    const half = new Uint16Array(vectors.length);
    toHalfInto(half, vectors);
    expected = new Float32Array(vectors.length);
    fromHalfInto(expected, half);
  }
  expect(width * vectors.length).toBeLessThan(file.length);
  return { layout: { path, dim: DIM, dtype, segments }, expected, fileBytes: file.length };
}

const total = SEGMENTS.reduce((a, b) => a + b, 0);

describe('fileTokenStore', () => {
  it.each(['float32', 'float16'] as const)(
    '%s: reads the same rows and bit-identical float64 dots as flatTokenStore, and only those bytes',
    (dtype) => {
      const random = rng(dtype === 'float32' ? 1 : 2);
      const { layout, expected, fileBytes } = writeMatrix(unitVectors(total, DIM, random), dtype);
      const stats = { bytes: 0, reads: 0 };
      const store = fileTokenStore(layout, { stats });
      const flat = flatTokenStore(expected, DIM);
      expect(store.size).toBe(total);
      const rowBytes = DIM * (dtype === 'float32' ? 4 : 2);
      for (const [a, b] of [
        [0, total],
        [0, 37],
        [30, 40], // across a segment boundary
        [36, 158], // across the empty segment and two boundaries
        [157, 159],
        [100, 100],
        [total - 1, total],
      ] as const) {
        const before = stats.bytes;
        expect(Array.from(store.read(a, b))).toEqual(Array.from(flat.read(a, b)));
        expect(stats.bytes - before).toBe((b - a) * rowBytes);
      }
      const q = unitVectors(3, DIM, random);
      const tokens = Int32Array.from([5, 0, total - 1, 37, 157, 158, 5, 200, 36, 99, 12, 3, 8]);
      const distinct = new Set(tokens).size;
      // A 4-row cache: slots collide within one call (0, 8, 12, 36, 200 share slot 0).
      const small = fileTokenStore(layout, { cacheRows: 4 });
      for (let r = 0; r < 3; r++) {
        const a = new Float64Array(tokens.length);
        const b = new Float64Array(tokens.length);
        const c = new Float64Array(tokens.length);
        const before = stats.bytes;
        store.dots(tokens, tokens.length, q, r * DIM, a);
        flat.dots(tokens, tokens.length, q, r * DIM, b);
        small.dots(tokens, tokens.length, q, r * DIM, c);
        expect(a).toEqual(b);
        expect(c).toEqual(b);
        // each distinct row is read once, then served from the cache
        expect(stats.bytes - before).toBe(r === 0 ? distinct * rowBytes : 0);
      }
      small.close();
      expect(stats.bytes).toBeLessThan(2 * fileBytes); // no whole-file reads hidden anywhere
      store.close();
      expect(() => store.read(0, 1)).toThrow(/closed/);
    },
  );

  it.each(['float32', 'float16'] as const)(
    '%s: ExactTokenIndex gives identical hits (and MaxSim bests) from the file and from memory',
    async (dtype) => {
      const random = rng(dtype === 'float32' ? 3 : 4);
      const vectors = unitVectors(total, DIM, random);
      vectors.set(vectors.subarray(0, DIM), 300 * DIM); // a duplicate: ties across the file
      const { layout, expected } = writeMatrix(vectors, dtype);
      const tokenOffsets = Int32Array.from([0, 20, 37, 90, 157, 158, 250, 300, total]);
      const ids = Array.from({ length: tokenOffsets.length - 1 }, (_, i) => `m${i}`);
      const store = fileTokenStore(layout);
      const q = unitVectors(5, DIM, random);
      q.set(vectors.subarray(0, DIM), 0);
      for (const kernel of [ort, new JsSimilarityKernel()]) {
        const fromFile = new ExactTokenIndex({ tokens: store, tokenOffsets, ids }, kernel);
        const inMemory = new ExactTokenIndex(
          { tokens: flatTokenStore(expected, DIM), tokenOffsets, ids },
          kernel,
        );
        for (const memories of [Int32Array.of(0, 1, 2, 3, 4, 5, 6, 7), Int32Array.of(1, 3, 7)]) {
          const options = { memories, chunkSize: 50, bestPerMemory: true };
          const a = await fromFile.search(q, 5, 16, options);
          const b = await inMemory.search(q, 5, 16, options);
          expect(a.tokens).toEqual(b.tokens);
          expect(a.values).toEqual(b.values);
          expect(a.best).toEqual(b.best);
        }
      }
      store.close();
    },
  );

  it('refuses a layout that ends past the file, and rows outside the store', () => {
    const { layout } = writeMatrix(unitVectors(total, DIM, rng(5)), 'float32');
    const last = layout.segments.at(-1)!;
    expect(() =>
      fileTokenStore({
        ...layout,
        segments: [...layout.segments.slice(0, -1), { ...last, rows: last.rows + 1 }],
      }),
    ).toThrow(/ends past the file/);
    expect(() => fileTokenStore({ ...layout, dim: 0 })).toThrow();
    const store = fileTokenStore(layout);
    expect(() => store.read(total - 1, total + 1)).toThrow(RangeError);
    expect(() =>
      store.dots(Int32Array.of(total), 1, new Float32Array(DIM), 0, new Float64Array(1)),
    ).toThrow(RangeError);
    store.close();
  });
});
