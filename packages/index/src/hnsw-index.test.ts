import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { CodecExactTokenIndex } from './codec-index.js';
import { decodeTokens, encodeTokens, prepareQuery, trainCodec } from './codecs/codec.js';
import type { CodecName } from './codecs/model.js';
import { graphKindOf, HnswTokenIndex } from './hnsw-index.js';
import { hnswFileKind } from './hnsw/hnsw.js';
import { JsSimilarityKernel } from './js-kernel.js';
import { OrtSimilarityKernel } from './ort-kernel.js';
import { rng, unitVectors } from './testing/random.js';
import { tieOrder } from './ties.js';
import { flatTokenStore } from './token-store.js';
import { ExactTokenIndex, type TokenHits } from './token-index.js';

const DIM = 160;
const CODECS: CodecName[] = ['fp32', 'fp16', 'sq8', 'sq4', 'rp128+sq4'];
const PARAMS = { M: 16, efConstruction: 128, efSearch: 128 };
const ort = new OrtSimilarityKernel({ threads: 1 });
afterAll(() => ort.dispose());

/**
 * 6 banks × 8 memories of 3..7 tokens; memory rows interleave banks (row m is in bank m % 6),
 * and memories 1 and 7 (banks 1 and 1) and 2 and 8 (banks 2 and 2) repeat memory 0's vectors,
 * so equal similarities occur and the tie order decides.
 */
function bank(seed: number): {
  vectors: Float32Array;
  tokenOffsets: Int32Array;
  ids: string[];
  memoryBank: Int32Array;
} {
  const random = rng(seed);
  const rows = 48;
  const tokenOffsets = new Int32Array(rows + 1);
  for (let m = 0; m < rows; m++) {
    const n = m === 1 || m === 7 || m === 2 || m === 8 ? 4 : 3 + Math.floor(random() * 5);
    tokenOffsets[m + 1] = tokenOffsets[m]! + (m === 0 ? 4 : n);
  }
  const vectors = unitVectors(tokenOffsets[rows]!, DIM, random);
  for (const m of [1, 7, 2, 8]) {
    vectors.copyWithin(tokenOffsets[m]! * DIM, 0, 4 * DIM);
  }
  const ids = Array.from({ length: rows }, (_, m) => `conv-${m % 6}:D${m}`);
  const memoryBank = Int32Array.from({ length: rows }, (_, m) => m % 6);
  return { vectors, tokenOffsets, ids, memoryBank };
}

function coded(name: CodecName, b: ReturnType<typeof bank>) {
  const n = b.tokenOffsets[b.tokenOffsets.length - 1]!;
  const model = trainCodec(name, b.vectors, n, DIM, { seed: 7 });
  return { model, codes: encodeTokens(model, b.vectors, n), n };
}

const bankRows = (bk: number): Int32Array =>
  Int32Array.from({ length: 8 }, (_, i) => i * 6 + bk).sort();

function same(a: TokenHits, b: TokenHits): void {
  expect(a.k).toBe(b.k);
  expect(Array.from(a.tokens)).toEqual(Array.from(b.tokens));
  expect(Array.from(a.values)).toEqual(Array.from(b.values));
  expect(Array.from(a.memories)).toEqual(Array.from(b.memories));
  expect(Array.from(a.slots)).toEqual(Array.from(b.slots));
}

describe('CodecExactTokenIndex', () => {
  it('fp32 codes give exactly the ExactTokenIndex hits (values, ties, best)', async () => {
    const b = bank(1);
    const { model, codes } = coded('fp32', b);
    const q = unitVectors(5, DIM, rng(2));
    q.set(b.vectors.subarray(0, DIM), 0); // a query equal to memory 0's first token: ties
    const memories = Int32Array.from({ length: 48 }, (_, m) => m);
    const opts = { memories, bestPerMemory: true } as const;
    const plain = new ExactTokenIndex(
      { tokens: flatTokenStore(b.vectors, DIM), tokenOffsets: b.tokenOffsets, ids: b.ids },
      ort,
    );
    const codec = new CodecExactTokenIndex(
      { model, codes, tokenOffsets: b.tokenOffsets, ids: b.ids },
      ort,
    );
    const [x, y] = [await plain.search(q, 5, 12, opts), await codec.search(q, 5, 12, opts)];
    same(y, x);
    expect(Array.from(y.best!)).toEqual(Array.from(x.best!));
    expect(codec.codec).toBe('fp32');
  });

  it.each(CODECS)(
    '%s: the float64 top-k of the decoded codes, ties by the tie order',
    async (name) => {
      const b = bank(3);
      const { model, codes, n } = coded(name, b);
      const q = unitVectors(4, DIM, rng(4));
      q.set(b.vectors.subarray(0, DIM), 0);
      const memories = bankRows(1);
      const index = new CodecExactTokenIndex(
        { model, codes, tokenOffsets: b.tokenOffsets, ids: b.ids },
        new JsSimilarityKernel(),
      );
      const k = 10;
      const hits = await index.search(q, 4, k, { memories });
      // The reference: decode everything, project the queries, full sort.
      const x = decodeTokens(model, codes, 0, n);
      const pq = prepareQuery(model, q, 4);
      const rank = tieOrder(b.ids).rank;
      const memOf = (t: number): number => b.tokenOffsets.findLastIndex((o) => o <= t);
      const cand: number[] = [];
      for (const m of memories)
        for (let t = b.tokenOffsets[m]!; t < b.tokenOffsets[m + 1]!; t++) cand.push(t);
      for (let r = 0; r < 4; r++) {
        const s = (t: number): number => {
          let acc = 0;
          for (let j = 0; j < model.codeDim; j++)
            acc += x[t * model.codeDim + j]! * pq[r * model.codeDim + j]!;
          return acc;
        };
        const ref = [...cand].sort(
          (a, c) => s(c) - s(a) || rank[memOf(a)]! - rank[memOf(c)]! || a - c,
        );
        expect(Array.from(hits.tokens.subarray(r * k, (r + 1) * k))).toEqual(ref.slice(0, k));
        for (let h = 0; h < k; h++) expect(hits.values[r * k + h]).toBeCloseTo(s(ref[h]!), 12);
      }
    },
  );
});

describe('HnswTokenIndex', () => {
  it.each(CODECS)(
    '%s: per-bank and filtered search give the exact codec hits on a small bank',
    async (name) => {
      const b = bank(5);
      const { model, codes } = coded(name, b);
      const side = { model, codes, tokenOffsets: b.tokenOffsets, ids: b.ids };
      const q = unitVectors(6, DIM, rng(6));
      q.set(b.vectors.subarray(DIM, 2 * DIM), 0); // equals a token repeated in memories 0, 1, 7
      const exact = new CodecExactTokenIndex(side, ort);
      const banked = await HnswTokenIndex.build({ ...side, memoryBank: b.memoryBank }, PARAMS, {
        threads: 1,
      });
      const flat = await HnswTokenIndex.build(side, PARAMS, { threads: 1 });
      for (const memories of [bankRows(1), bankRows(4), Int32Array.of(0, 1, 7, 9, 20)]) {
        const ref = await exact.search(q, 6, 8, { memories });
        const viaBank = await banked.search(q, 6, 8, { memories });
        same(viaBank, ref);
        same(await flat.search(q, 6, 8, { memories }), ref);
        expect(viaBank.widenedRows).toBe(0);
      }
      banked.dispose();
      flat.dispose();
    },
  );

  it('every memory: the exact hits, unfiltered, whether or not the global graph exists', async () => {
    const b = bank(16);
    const { model, codes } = coded('fp32', b);
    const side = { model, codes, tokenOffsets: b.tokenOffsets, ids: b.ids };
    const q = unitVectors(5, DIM, rng(17));
    const every = Int32Array.from({ length: 48 }, (_, m) => m);
    const ref = await new CodecExactTokenIndex(side, ort).search(q, 5, 8, { memories: every });
    const flat = await HnswTokenIndex.build(side, PARAMS, { threads: 1 });
    same(await flat.search(q, 5, 8, { memories: every }), ref);
    const banked = await HnswTokenIndex.build({ ...side, memoryBank: b.memoryBank }, PARAMS, {
      threads: 1,
    });
    same(await banked.search(q, 5, 8, { memories: every }), ref);
    // A filtered search builds the global graph; every memory still searches the banks' graphs
    // once each (no token proposed twice, so the same hits).
    await banked.search(q, 5, 8, { memories: Int32Array.of(0, 1, 7, 9, 20) });
    same(await banked.search(q, 5, 8, { memories: every }), ref);
    flat.dispose();
    banked.dispose();
  });

  it.each(CODECS)(
    "%s: the graph stores the codec's kind, saves and loads it, proposes valid hits on a 3,000-token bank",
    async (name) => {
      const dir = await mkdtemp(join(tmpdir(), 'hnsw-kind-'));
      try {
        const random = rng(21);
        const n = 3000;
        const rows = 300;
        const tokenOffsets = Int32Array.from({ length: rows + 1 }, (_, m) => m * 10);
        const vectors = unitVectors(n, DIM, random);
        const model = trainCodec(name, vectors, n, DIM, { seed: 7 });
        const side = { model, codes: encodeTokens(model, vectors, n), tokenOffsets };
        const built = await HnswTokenIndex.build(side, PARAMS, { threads: 1 });
        const kind = { fp32: 'f32', fp16: 'f16', sq8: 'i8', sq4: 'i8', 'rp128+sq4': 'i8' }[name];
        expect(graphKindOf(name)).toBe(kind);
        expect(built.graphKind).toBe(kind);
        const files = await built.save(dir);
        expect(files).toEqual(['all.usearch']);
        expect(await hnswFileKind(join(dir, 'all.usearch'))).toBe(kind);
        const loaded = await HnswTokenIndex.load(dir, side, PARAMS, { threads: 1 });
        expect(loaded.graphKind).toBe(kind);
        // Another kind than the codec's is refused at load.
        await expect(
          HnswTokenIndex.load(dir, side, PARAMS, { kind: kind === 'f32' ? 'i8' : 'f32' }),
        ).rejects.toThrow(/expected/);
        const q = unitVectors(8, DIM, rng(22));
        const memories = Int32Array.from({ length: rows }, (_, m) => m);
        const hits = await loaded.search(q, 8, 32, { memories });
        same(hits, await built.search(q, 8, 32, { memories }));
        const ref = await new CodecExactTokenIndex(side, ort).search(q, 8, 32, { memories });
        let found = 0;
        for (let r = 0; r < 8; r++) {
          const want = new Set(ref.tokens.subarray(r * 32, (r + 1) * 32));
          const row = hits.tokens.subarray(r * 32, (r + 1) * 32);
          expect(new Set(row).size).toBe(32); // distinct bank tokens
          for (const t of row) if (want.has(t)) found++;
        }
        // Rescored from the codes: every returned value is the exact codec similarity.
        expect(found / (8 * 32)).toBeGreaterThan(0.9);
        expect(hits.values[0]).toBe(ref.values[0]);
        built.dispose();
        loaded.dispose();
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    },
  );

  it('the tail floor input: the k-th returned value is the minimum of the row', async () => {
    const b = bank(8);
    const { model, codes } = coded('sq4', b);
    const index = await HnswTokenIndex.build(
      { model, codes, tokenOffsets: b.tokenOffsets, ids: b.ids, memoryBank: b.memoryBank },
      PARAMS,
      { threads: 1 },
    );
    const hits = await index.search(unitVectors(3, DIM, rng(9)), 3, 16, { memories: bankRows(2) });
    for (let r = 0; r < 3; r++) {
      const row = Array.from(hits.values.subarray(r * 16, (r + 1) * 16));
      expect(row).toEqual([...row].sort((a, c) => c - a));
      expect(hits.values[r * 16 + 15]).toBe(Math.min(...row));
    }
  });

  it('clamps k to a small candidate set and refuses it without clampK', async () => {
    const b = bank(10);
    const { model, codes } = coded('sq8', b);
    const index = await HnswTokenIndex.build(
      { model, codes, tokenOffsets: b.tokenOffsets },
      PARAMS,
    );
    const memories = Int32Array.of(3);
    const size = b.tokenOffsets[4]! - b.tokenOffsets[3]!;
    const q = unitVectors(2, DIM, rng(11));
    await expect(index.search(q, 2, 64, { memories })).rejects.toThrow(/larger than the bank/);
    const hits = await index.search(q, 2, 64, { memories, clampK: true });
    expect(hits.k).toBe(size);
    expect(new Set(hits.tokens.subarray(0, size)).size).toBe(size);
  });

  it('bestPerMemory: exhaustive over the same codes with a kernel, absent without', async () => {
    const b = bank(12);
    const { model, codes } = coded('fp16', b);
    const side = {
      model,
      codes,
      tokenOffsets: b.tokenOffsets,
      ids: b.ids,
      memoryBank: b.memoryBank,
    };
    const q = unitVectors(3, DIM, rng(13));
    const memories = bankRows(0);
    const exact = await new CodecExactTokenIndex(side, ort).search(q, 3, 8, {
      memories,
      bestPerMemory: true,
    });
    const withKernel = await HnswTokenIndex.build(side, PARAMS, { kernel: ort });
    const without = await HnswTokenIndex.build(side, PARAMS);
    const a = await withKernel.search(q, 3, 8, { memories, bestPerMemory: true });
    expect(Array.from(a.best!)).toEqual(Array.from(exact.best!));
    expect((await without.search(q, 3, 8, { memories, bestPerMemory: true })).best).toBeUndefined();
  });

  it('save and load: one file per bank, the same hits', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'hnsw-index-'));
    try {
      const b = bank(14);
      const { model, codes } = coded('rp128+sq4', b);
      const side = {
        model,
        codes,
        tokenOffsets: b.tokenOffsets,
        ids: b.ids,
        memoryBank: b.memoryBank,
      };
      const built = await HnswTokenIndex.build(side, PARAMS);
      const files = await built.save(dir);
      expect(files.sort()).toEqual([0, 1, 2, 3, 4, 5].map((x) => `bank-${x}.usearch`));
      expect((await readdir(dir)).sort()).toEqual(files);
      const loaded = await HnswTokenIndex.load(dir, side, PARAMS);
      const q = unitVectors(4, DIM, rng(15));
      same(
        await loaded.search(q, 4, 8, { memories: bankRows(3) }),
        await built.search(q, 4, 8, { memories: bankRows(3) }),
      );
      await expect(
        HnswTokenIndex.load(dir, { model, codes, tokenOffsets: b.tokenOffsets }, PARAMS),
      ).rejects.toThrow();
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
