import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { CodecExactTokenIndex, codecTokenStore } from './codec-index.js';
import { GATHER_GAP_BYTES, arrayCodeSource, fileCodeSource } from './code-source.js';
import { encodeTokens, trainCodec } from './codecs/codec.js';
import type { CodecName } from './codecs/model.js';
import { HnswTokenIndex, type HnswSide } from './hnsw-index.js';
import { OrtSimilarityKernel } from './ort-kernel.js';
import { rng, unitVectors } from './testing/random.js';
import type { TokenHits } from './token-index.js';

// Codes read by position (`fileCodeSource`: codes.bin, or fp32 rows of a bank file laid out in
// segments) and graphs memory-mapped (`view`) score exactly as codes and graphs held in memory.

const DIM = 160;
const ort = new OrtSimilarityKernel({ threads: 1 });
const dirs: string[] = [];
afterAll(async () => {
  ort.dispose();
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

async function tempDir(): Promise<string> {
  const d = await mkdtemp(join(tmpdir(), 'code-source-'));
  dirs.push(d);
  return d;
}

/** 30 memories of 3..14 tokens, and three overlapping candidate sets. */
function fixture(name: CodecName, seed: number) {
  const random = rng(seed);
  const count = 30;
  const tokenOffsets = new Int32Array(count + 1);
  for (let m = 0; m < count; m++)
    tokenOffsets[m + 1] = tokenOffsets[m]! + 3 + Math.floor(random() * 12);
  const n = tokenOffsets[count]!;
  const vectors = unitVectors(n, DIM, random);
  const model = trainCodec(name, vectors, n, DIM, { seed: 3 });
  const codes = encodeTokens(model, vectors, n).slice();
  const range = (a: number, b: number) => Int32Array.from({ length: b - a }, (_, i) => a + i);
  const sets = [range(0, 12), range(8, 22), range(18, 30)];
  const ids = Array.from({ length: count }, (_, m) => `m${m}`);
  return { model, codes, tokenOffsets, n, sets, ids };
}

/**
 * Writes `codes` as a file of three segments with gaps and a header before them (the shape of
 * an Arrow file's record batches); returns its layout.
 */
async function segmentedFile(codes: Uint8Array, bpt: number, n: number) {
  const cuts = [0, Math.floor(n / 3), Math.floor((2 * n) / 3), n];
  const parts: Uint8Array[] = [new Uint8Array(40)];
  const segments: { offset: number; rows: number }[] = [];
  let at = 40;
  for (let i = 0; i < 3; i++) {
    const piece = codes.subarray(cuts[i]! * bpt, cuts[i + 1]! * bpt);
    segments.push({ offset: at, rows: cuts[i + 1]! - cuts[i]! });
    parts.push(piece, new Uint8Array(24).fill(7));
    at += piece.length + 24;
  }
  const path = join(await tempDir(), 'codes.bin');
  await writeFile(path, Buffer.concat(parts));
  return { path, bytesPerToken: bpt, segments };
}

function same(a: TokenHits, b: TokenHits): void {
  expect(a.k).toBe(b.k);
  expect(Array.from(a.tokens)).toEqual(Array.from(b.tokens));
  expect(Array.from(a.values)).toEqual(Array.from(b.values));
  expect(Array.from(a.memories)).toEqual(Array.from(b.memories));
  expect(a.best === undefined ? undefined : Array.from(a.best)).toEqual(
    b.best === undefined ? undefined : Array.from(b.best),
  );
}

describe('fileCodeSource', () => {
  it('reads the same bytes as the codes in memory, across segments, by range and by row', async () => {
    const f = fixture('sq4', 1);
    const bpt = f.model.bytesPerToken;
    const file = fileCodeSource(await segmentedFile(f.codes, bpt, f.n), { cacheRows: 5 });
    const mem = arrayCodeSource(f.codes, bpt);
    expect(file.tokens).toBe(f.n);
    for (const [a, b] of [
      [0, f.n],
      [3, 40],
      [Math.floor(f.n / 3) - 2, Math.floor(f.n / 3) + 2],
      [f.n - 1, f.n],
    ] as const) {
      expect(Array.from(file.bytes(a, b))).toEqual(Array.from(mem.bytes(a, b)));
    }
    for (const t of [0, 7, 12, 7, f.n - 1, 5, 0]) {
      expect(Array.from(file.row(t))).toEqual(Array.from(mem.row(t)));
    }
    expect(() => file.bytes(0, f.n + 1)).toThrow(RangeError);
    file.close();
    expect(() => file.row(0)).toThrow(/closed/);
  });

  it('gathers rows in the asked order: ascending neighbours in one read, cached rows in none', async () => {
    const f = fixture('sq8', 7);
    const bpt = f.model.bytesPerToken; // 160: 25 rows a 4 KiB gap
    expect(Math.floor(GATHER_GAP_BYTES / bpt)).toBe(25);
    const layout = await segmentedFile(f.codes, bpt, f.n);
    const cut = layout.segments[0]!.rows;
    expect(cut).toBeGreaterThan(45);
    const mem = arrayCodeSource(f.codes, bpt);
    const expected = (tokens: number[]) => tokens.flatMap((t) => Array.from(mem.row(t)));
    const gather = (src: ReturnType<typeof fileCodeSource>, tokens: number[]) => {
      const out = new Uint8Array(tokens.length * bpt);
      src.rows(tokens, tokens.length, out);
      return Array.from(out);
    };

    const stats = { bytes: 0, reads: 0 };
    const uncached = fileCodeSource(layout, { cacheRows: 1, stats });
    // Ascending: 2, 3, 5 in one read (gaps of 1 and 2 rows), the repeat free, 40 in another.
    expect(gather(uncached, [2, 3, 5, 5, 40])).toEqual(expected([2, 3, 5, 5, 40]));
    expect(stats).toEqual({ reads: 2, bytes: 5 * bpt });
    // 30 after 4 is 26 rows on: two reads.
    stats.reads = stats.bytes = 0;
    expect(gather(uncached, [4, 30])).toEqual(expected([4, 30]));
    expect(stats).toEqual({ reads: 2, bytes: 2 * bpt });
    // Neighbours on either side of a segment's end: a read each.
    stats.reads = stats.bytes = 0;
    expect(gather(uncached, [cut - 1, cut])).toEqual(expected([cut - 1, cut]));
    expect(stats).toEqual({ reads: 2, bytes: 2 * bpt });
    // Not ascending: a token at a time.
    stats.reads = stats.bytes = 0;
    expect(gather(uncached, [5, 2, 3])).toEqual(expected([5, 2, 3]));
    expect(stats).toEqual({ reads: 3, bytes: 3 * bpt });
    uncached.close();

    const counted = { bytes: 0, reads: 0 };
    const cachedSource = fileCodeSource(layout, { cacheRows: 1024, stats: counted });
    expect(gather(cachedSource, [7, 9])).toEqual(expected([7, 9]));
    expect(counted.reads).toBe(1);
    expect(gather(cachedSource, [9, 7, 9])).toEqual(expected([9, 7, 9]));
    expect(gather(cachedSource, [7, 8, 9])).toEqual(expected([7, 8, 9]));
    expect(counted.reads).toBe(2); // 8 alone
    // Any order, repeats and segments, through a small cache: the bytes in memory.
    const random = rng(8);
    const some = Array.from({ length: 300 }, () => Math.floor(random() * f.n));
    const sorted = [...some].sort((a, b) => a - b);
    const small = fileCodeSource(layout, { cacheRows: 7 });
    expect(gather(small, some)).toEqual(expected(some));
    expect(gather(small, sorted)).toEqual(expected(sorted));
    expect(() => gather(small, [f.n])).toThrow(RangeError);
    small.close();
    cachedSource.close();
  });

  it('refuses a segment past the end of the file', async () => {
    const f = fixture('sq8', 2);
    const layout = await segmentedFile(f.codes, f.model.bytesPerToken, f.n);
    const bad = { ...layout, segments: [{ offset: 40, rows: f.n + 50 }] };
    expect(() => fileCodeSource(bad)).toThrow(/past its end/);
  });

  for (const name of ['fp32', 'fp16', 'sq8', 'sq4', 'rp128+sq4'] as const) {
    it(`${name}: codec store and exact index over a file give the in-memory scores bit for bit`, async () => {
      const f = fixture(name, 3);
      const bpt = f.model.bytesPerToken;
      const layout = await segmentedFile(f.codes, bpt, f.n);
      const source = fileCodeSource(layout, { cacheRows: 7 });
      const inMemory = codecTokenStore(f.model, f.codes);
      const byPosition = codecTokenStore(f.model, source);
      const q = unitVectors(5, f.model.codeDim, rng(4));
      const tokens = Int32Array.from([0, 9, 3, 9, f.n - 1, 20, 1, 8, 15]);
      const a = new Float64Array(tokens.length);
      const b = new Float64Array(tokens.length);
      for (let r = 0; r < 5; r++) {
        inMemory.dots(tokens, tokens.length, q, r * f.model.codeDim, a);
        byPosition.dots(tokens, tokens.length, q, r * f.model.codeDim, b);
        expect(Array.from(b)).toEqual(Array.from(a));
      }
      expect(Array.from(byPosition.read(4, 30))).toEqual(Array.from(inMemory.read(4, 30)));
      const side = { model: f.model, tokenOffsets: f.tokenOffsets, ids: f.ids };
      const exactMem = new CodecExactTokenIndex({ ...side, codes: f.codes }, ort);
      const exactFile = new CodecExactTokenIndex({ ...side, codes: source }, ort);
      const qq = unitVectors(6, DIM, rng(5));
      const options = { memories: f.sets[1]!, bestPerMemory: true };
      same(await exactFile.search(qq, 6, 9, options), await exactMem.search(qq, 6, 9, options));
      source.close();
    });
  }
});

describe('HnswTokenIndex over viewed graphs and codes read by position', () => {
  for (const name of ['fp32', 'sq4'] as const) {
    it(`${name}: the loaded index's hits, bit for bit, with at most openGraphs mapped`, async () => {
      const f = fixture(name, 6);
      const dir = await tempDir();
      const side: HnswSide = {
        model: f.model,
        codes: f.codes,
        tokenOffsets: f.tokenOffsets,
        ids: f.ids,
        candidateSets: f.sets,
      };
      const params = { M: 8, efConstruction: 32, efSearch: 12 }; // approximate on purpose
      await HnswTokenIndex.buildFiles(dir, side, params, { threads: 1 });
      const source = fileCodeSource(await segmentedFile(f.codes, f.model.bytesPerToken, f.n));
      const loaded = await HnswTokenIndex.load(dir, side, params, { kernel: ort });
      const viewed = await HnswTokenIndex.load(dir, { ...side, codes: source }, params, {
        kernel: ort,
        view: true,
        openGraphs: 1,
      });
      const q = unitVectors(5, DIM, rng(8));
      // Each set twice, in an order that unmaps and maps graphs again.
      for (const s of [0, 1, 0, 2, 2, 1]) {
        const options = { memories: f.sets[s]!, bestPerMemory: true };
        same(await viewed.search(q, 5, 10, options), await loaded.search(q, 5, 10, options));
        expect(viewed.mappedGraphs).toBe(1);
      }
      // A subset of one set: the filtered search of a viewed graph.
      const part = f.sets[1]!.subarray(2, 9);
      same(
        await viewed.search(q, 5, 10, { memories: part }),
        await loaded.search(q, 5, 10, { memories: part }),
      );
      loaded.dispose();
      viewed.dispose();
      expect(viewed.mappedGraphs).toBe(0);
      source.close();
    });
  }

  it('per-bank viewed graphs, one mapped at a time: a search over several banks is the loaded hits', async () => {
    const f = fixture('fp32', 11);
    const dir = await tempDir();
    const memoryBank = Int32Array.from({ length: 30 }, (_, m) => m % 4); // four graphs
    const side: HnswSide = { ...f, memoryBank };
    const params = { M: 8, efConstruction: 32, efSearch: 12 };
    await HnswTokenIndex.buildFiles(dir, side, params, { threads: 1 });
    const loaded = await HnswTokenIndex.load(dir, side, params, {});
    const viewed = await HnswTokenIndex.load(dir, side, params, { view: true, openGraphs: 1 });
    const q = unitVectors(5, DIM, rng(12));
    // Banks 0 and 2 whole, then every bank: proposals gathered from 2, then 4 graphs per row,
    // each graph unmapped as the next is mapped.
    const two = Int32Array.from({ length: 15 }, (_, i) => 2 * i);
    for (const memories of [two, Int32Array.from({ length: 30 }, (_, m) => m)]) {
      const hits = await viewed.search(q, 5, 10, { memories });
      same(hits, await loaded.search(q, 5, 10, { memories }));
      expect(hits.widenedRows).toBe(0);
      expect(viewed.mappedGraphs).toBe(1);
    }
    loaded.dispose();
    viewed.dispose();
  });

  it('a viewed graph of another kind is refused at load', async () => {
    const f = fixture('sq8', 9);
    const dir = await tempDir();
    const side: HnswSide = { model: f.model, codes: f.codes, tokenOffsets: f.tokenOffsets };
    const params = { M: 8, efConstruction: 32, efSearch: 12 };
    await HnswTokenIndex.buildFiles(dir, side, params, { threads: 1 }); // i8
    await expect(
      HnswTokenIndex.load(dir, side, params, { view: true, kind: 'f32' }),
    ).rejects.toThrow(/does not store f32/);
  });
});
