import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { CodecSide } from '../codec-index.js';
import { encodeTokens, trainCodec } from '../codecs/codec.js';
import { IvfTokenIndex } from '../ivf-index.js';
import { JsSimilarityKernel } from '../js-kernel.js';
import { rng, unitVectors } from '../testing/random.js';
import type { TokenHits } from '../token-index.js';
import { blockedCodeBytes } from './layout.js';

const DIM = 32;
const js = new JsSimilarityKernel();
const dir = mkdtempSync(join(tmpdir(), 'bfe-ivf-paged-'));
const opened: IvfTokenIndex[] = [];
const kept = (index: IvfTokenIndex): IvfTokenIndex => (opened.push(index), index);
afterAll(async () => {
  await Promise.all(opened.map((i) => i.close()));
  rmSync(dir, { recursive: true, force: true });
});

/** Memories of 3..9 tokens around 10 topics of skewed frequency (clusters of unequal sizes). */
function sideOf(seed: number, memories: number, keep = memories): CodecSide {
  const random = rng(seed);
  const tokenOffsets = new Int32Array(memories + 1);
  for (let m = 0; m < memories; m++)
    tokenOffsets[m + 1] = tokenOffsets[m]! + 3 + ((random() * 7) | 0);
  const n = tokenOffsets[memories]!;
  const hubs = unitVectors(10, DIM, rng(seed + 1));
  const noise = unitVectors(n, DIM, random);
  const vectors = new Float32Array(n * DIM);
  for (let t = 0; t < n; t++) {
    const h = Math.floor(10 * random() ** 2);
    let ss = 0;
    for (let j = 0; j < DIM; j++) {
      vectors[t * DIM + j] = hubs[h * DIM + j]! + 0.5 * noise[t * DIM + j]!;
      ss += vectors[t * DIM + j]! ** 2;
    }
    for (let j = 0; j < DIM; j++) vectors[t * DIM + j]! /= Math.sqrt(ss);
  }
  const model = trainCodec('fp32', vectors, n, DIM);
  const codes = encodeTokens(model, vectors, n);
  return {
    model,
    codes: codes.subarray(0, tokenOffsets[keep]! * model.bytesPerToken),
    tokenOffsets: tokenOffsets.subarray(0, keep + 1),
    ids: Array.from({ length: keep }, (_, m) => `p:${m}`),
  };
}

function expectSameHits(got: TokenHits, want: TokenHits): void {
  expect(Array.from(got.tokens)).toEqual(Array.from(want.tokens));
  expect(Array.from(got.values)).toEqual(Array.from(want.values));
  expect(Array.from(got.slots)).toEqual(Array.from(want.slots));
}

const range = (n: number): Int32Array => Int32Array.from({ length: n }, (_, i) => i);

describe('IvfTokenIndex.open: codes read by position', () => {
  for (const bits of [2, 4] as const) {
    it(`gives the in-memory index's hits byte for byte, reading only probed clusters (${bits}-bit)`, async () => {
      const side = sideOf(bits, 500);
      const params = { centroids: 24, residualBits: bits, iterations: 5 };
      const memoryIndex = kept(await IvfTokenIndex.build(side, params, js, { nprobe: 2 }));
      const file = join(dir, `ivf-${bits}.bin`);
      writeFileSync(file, memoryIndex.toBytes());
      const codesBytes = memoryIndex.data.codes.length;
      const queries = unitVectors(12, DIM, rng(3));
      // A cache of a few blocks (clusters streamed through it) and the default one.
      for (const cacheBytes of [1024, undefined]) {
        const paged = kept(
          IvfTokenIndex.open(
            file,
            side,
            js,
            { nprobe: 2 },
            cacheBytes === undefined ? {} : { cacheBytes },
          ),
        );
        expect(paged.data.codes.length).toBe(0); // no resident codes
        for (const nprobe of [1, 4]) {
          for (const memories of [
            range(500),
            Int32Array.from({ length: 250 }, (_, i) => 2 * i + 1),
          ]) {
            for (const threads of [1, 2]) {
              const got = await paged
                .withSearch({ nprobe, threads })
                .search(queries, 12, 16, { memories });
              const want = await memoryIndex
                .withSearch({ nprobe, threads })
                .search(queries, 12, 16, { memories });
              expectSameHits(got, want);
            }
          }
        }
      }
      // One row, one thread, one cluster probed: a part of the codes read, then none (cached).
      const one = kept(IvfTokenIndex.open(file, side, js, { nprobe: 1, threads: 1, margin: 1 }));
      const q = queries.subarray(0, DIM);
      await one.search(q, 1, 4, { memories: range(500) });
      const first = one.stats!.codeBytesRead;
      expect(first).toBeGreaterThan(0);
      expect(first).toBeLessThan(codesBytes / 4);
      await one.search(q, 1, 4, { memories: range(500) });
      expect(one.stats!.codeBytesRead).toBe(0);
      const tiny = kept(
        IvfTokenIndex.open(
          file,
          side,
          js,
          { nprobe: 1, threads: 1, margin: 1 },
          { cacheBytes: 512 },
        ),
      );
      await tiny.search(q, 1, 4, { memories: range(500) });
      await tiny.search(q, 1, 4, { memories: range(500) });
      expect(tiny.stats!.codeBytesRead).toBeGreaterThan(0); // streamed, not kept
      expect(statSync(file).size).toBeGreaterThan(codesBytes);
    });
  }

  it('appends, deletes and compacts over a file as over the index in memory', async () => {
    const full = sideOf(11, 400);
    const half = sideOf(11, 400, 200);
    const params = { centroids: 16, residualBits: 4 as const, iterations: 5 };
    const memoryIndex = kept(await IvfTokenIndex.build(half, params, js, { nprobe: 2 }));
    const file = join(dir, 'ivf-grow.bin');
    writeFileSync(file, memoryIndex.toBytes());
    const paged = kept(IvfTokenIndex.open(file, half, js, { nprobe: 2 }, { cacheBytes: 4096 }));
    const queries = unitVectors(8, DIM, rng(5));
    for (const index of [memoryIndex, paged]) {
      await index.append(full);
      await index.delete([0, 7, 150, 250, 399]);
    }
    const memories = range(400);
    expectSameHits(
      await paged.search(queries, 8, 10, { memories }),
      await memoryIndex.search(queries, 8, 10, { memories }),
    );
    for (const index of [memoryIndex, paged]) await index.compact({ recluster: false });
    expect(paged.data.codes.length).toBe(blockedCodeBytes(paged.liveTokens, DIM, 4));
    expect(Buffer.from(paged.toBytes()).equals(Buffer.from(memoryIndex.toBytes()))).toBe(true);
    expectSameHits(
      await paged.search(queries, 8, 10, { memories }),
      await memoryIndex.search(queries, 8, 10, { memories }),
    );
  });

  it('saves piece by piece the bytes toBytes gives, and reads them whole into memory when resident', async () => {
    const side = sideOf(21, 320, 300);
    const params = { centroids: 12, residualBits: 4 as const, iterations: 4 };
    const memoryIndex = kept(await IvfTokenIndex.build(side, params, js, { nprobe: 2 }));
    const file = join(dir, 'ivf-saved.bin');
    memoryIndex.save(file);
    expect(readFileSync(file).equals(Buffer.from(memoryIndex.toBytes()))).toBe(true);
    const built = join(dir, 'ivf-built.bin');
    await IvfTokenIndex.buildFile(side, params, js, built);
    expect(readFileSync(built).equals(readFileSync(file))).toBe(true);
    const resident = kept(IvfTokenIndex.open(file, side, js, { nprobe: 2 }, { resident: true }));
    expect(Buffer.from(resident.data.codes).equals(Buffer.from(memoryIndex.data.codes))).toBe(true);
    const queries = unitVectors(6, DIM, rng(8));
    for (const threads of [1, 2]) {
      const got = await resident.withSearch({ nprobe: 3, threads }).search(queries, 6, 12, {
        memories: range(300),
      });
      expect(resident.stats).toBeUndefined(); // the stats are each index's own
      const want = await memoryIndex
        .withSearch({ nprobe: 3, threads })
        .search(queries, 6, 12, { memories: range(300) });
      expectSameHits(got, want);
    }
    const one = kept(resident.withSearch({ nprobe: 1, threads: 1 }));
    await one.search(queries, 6, 12, { memories: range(300) });
    expect(one.stats!.codeBytesRead).toBe(0); // nothing read by position
    // A save of an index with appends not laid out is refused, as toBytes is.
    await memoryIndex.append(sideOf(21, 320));
    expect(() => memoryIndex.save(join(dir, 'refused.bin'))).toThrow(/compact/);
  });
});
