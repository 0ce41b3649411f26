import { mkdtemp, readFile, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { CodecExactTokenIndex } from './codec-index.js';
import { encodeTokens, trainCodec } from './codecs/codec.js';
import type { CodecName } from './codecs/model.js';
import { HnswTokenIndex, type HnswSide } from './hnsw-index.js';
import { OrtSimilarityKernel } from './ort-kernel.js';
import { rng, unitVectors } from './testing/random.js';
import type { TokenHits } from './token-index.js';

// One HNSW graph per candidate set (a LongMemEval haystack): the graphs' keys, exactness when
// the graph search is exhaustive, equality with per-bank graphs when each set is one bank, and
// the fallbacks when the candidates are no candidate set.

const DIM = 160;
const ort = new OrtSimilarityKernel({ threads: 1 });
afterAll(() => ort.dispose());

/**
 * 40 memories of 2..9 tokens, 4 banks of 10 (memory m in bank ⌊m / 10⌋), and three
 * "haystacks" sharing memories: {0..19}, {10..29}, {5, 15, 25, 30..39}.
 */
function fixture(name: CodecName, seed: number) {
  const random = rng(seed);
  const count = 40;
  const tokenOffsets = new Int32Array(count + 1);
  for (let m = 0; m < count; m++)
    tokenOffsets[m + 1] = tokenOffsets[m]! + 2 + Math.floor(random() * 8);
  const n = tokenOffsets[count]!;
  const vectors = unitVectors(n, DIM, random);
  const model = trainCodec(name, vectors, n, DIM, { seed: 7 });
  const range = (a: number, b: number) => Array.from({ length: b - a }, (_, i) => a + i);
  const side: HnswSide = {
    model,
    codes: encodeTokens(model, vectors, n),
    tokenOffsets,
    ids: Array.from({ length: count }, (_, m) => `s${m}`),
  };
  const memoryBank = Int32Array.from({ length: count }, (_, m) => Math.floor(m / 10));
  const haystacks = [range(0, 20), range(10, 30), [5, 15, 25, ...range(30, 40)]].map((s) =>
    Int32Array.from(s),
  );
  const banks = [0, 1, 2, 3].map((b) => Int32Array.from(range(10 * b, 10 * b + 10)));
  return { side, vectors, memoryBank, haystacks, banks, n };
}

function same(a: TokenHits, b: TokenHits): void {
  expect(a.k).toBe(b.k);
  expect(Array.from(a.tokens)).toEqual(Array.from(b.tokens));
  expect(Array.from(a.values)).toEqual(Array.from(b.values));
  expect(Array.from(a.memories)).toEqual(Array.from(b.memories));
  expect(Array.from(a.slots)).toEqual(Array.from(b.slots));
}

/** efSearch above every graph's size: each graph search is exhaustive. */
const WIDE = { M: 16, efConstruction: 128, efSearch: 512 };

describe('HnswTokenIndex over candidate sets', () => {
  it('where each set is one bank: the per-bank graphs, byte for byte, and the same hits', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'hnsw-sets-'));
    try {
      const f = fixture('fp16', 1);
      const params = { M: 8, efConstruction: 32, efSearch: 16 }; // approximate on purpose
      const perBank = await HnswTokenIndex.build({ ...f.side, memoryBank: f.memoryBank }, params, {
        threads: 1,
      });
      const perSet = await HnswTokenIndex.build({ ...f.side, candidateSets: f.banks }, params, {
        threads: 1,
      });
      await perBank.save(join(dir, 'bank'));
      await perSet.save(join(dir, 'set'));
      for (let b = 0; b < 4; b++) {
        const x = await readFile(join(dir, 'bank', `bank-${b}.usearch`));
        const y = await readFile(join(dir, 'set', `set-${b}.usearch`));
        expect(y.equals(x)).toBe(true);
      }
      const q = unitVectors(7, DIM, rng(2));
      for (const memories of f.banks) {
        same(
          await perSet.search(q, 7, 12, { memories }),
          await perBank.search(q, 7, 12, { memories }),
        );
      }
      perBank.dispose();
      perSet.dispose();
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it.each<CodecName>(['fp32', 'sq8', 'rp128+sq4'])(
    '%s: exhaustive graph searches give the exact codec hits on overlapping sets and every fallback',
    async (name) => {
      const f = fixture(name, 3);
      const exact = new CodecExactTokenIndex(f.side, ort);
      const index = await HnswTokenIndex.build({ ...f.side, candidateSets: f.haystacks }, WIDE, {
        threads: 1,
      });
      const q = unitVectors(6, DIM, rng(4));
      const fallbacks = [
        Int32Array.of(10, 12, 15, 19), // inside sets 0 and 1: the smaller, filtered
        Int32Array.of(5, 25, 31), // inside set 2 only, filtered
        Int32Array.of(0, 39), // in no set together: the global graph, filtered
      ];
      for (const memories of [...f.haystacks, ...fallbacks]) {
        const hits = await index.search(q, 6, 10, { memories });
        same(hits, await exact.search(q, 6, 10, { memories }));
        expect(hits.widenedRows).toBe(0);
      }
      index.dispose();
    },
  );

  it("keys map back to (memory row, token): a token's own vector finds it first", async () => {
    const f = fixture('fp32', 5);
    const index = await HnswTokenIndex.build({ ...f.side, candidateSets: f.haystacks }, WIDE, {
      threads: 1,
    });
    expect(index.graphs.map((g) => g.file)).toEqual([
      'set-0.usearch',
      'set-1.usearch',
      'set-2.usearch',
    ]);
    const offsets = f.side.tokenOffsets;
    for (const [s, set] of f.haystacks.entries()) {
      let tokens = 0;
      for (const m of set) tokens += offsets[m + 1]! - offsets[m]!;
      expect(index.graphs[s]!.tokens).toBe(tokens);
      // Every token of the set, queried by its own vector, comes back first, with its memory.
      const ts: number[] = [];
      const ms: number[] = [];
      for (const m of set) {
        for (let t = offsets[m]!; t < offsets[m + 1]!; t++) {
          ts.push(t);
          ms.push(m);
        }
      }
      const q = new Float32Array(ts.length * DIM);
      ts.forEach((t, i) => q.set(f.vectors.subarray(t * DIM, (t + 1) * DIM), i * DIM));
      const hits = await index.search(q, ts.length, 1, { memories: set });
      expect(Array.from(hits.tokens)).toEqual(ts);
      expect(Array.from(hits.memories)).toEqual(ms);
      expect(Array.from(hits.slots)).toEqual(ms.map((m) => set.indexOf(m)));
    }
    index.dispose();
  });

  it('save writes the sets beside the graphs; load reads them, refuses other sets', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'hnsw-sets-'));
    try {
      const f = fixture('sq4', 6);
      const params = { M: 16, efConstruction: 64, efSearch: 32 };
      const built = await HnswTokenIndex.build({ ...f.side, candidateSets: f.haystacks }, params, {
        threads: 1,
      });
      await built.save(join(dir, 'a'));
      const files = await HnswTokenIndex.buildFiles(
        join(dir, 'b'),
        { ...f.side, candidateSets: f.haystacks },
        params,
        { threads: 1 },
      );
      const names = ['layout.json', 'set-0.usearch', 'set-1.usearch', 'set-2.usearch'];
      expect((await readdir(join(dir, 'a'))).sort()).toEqual(names);
      expect((await readdir(join(dir, 'b'))).sort()).toEqual(names);
      expect(files).toEqual(names.slice(1));
      for (const file of names) {
        const a = await readFile(join(dir, 'a', file));
        expect((await readFile(join(dir, 'b', file))).equals(a)).toBe(true);
      }
      // The side says nothing of the sets (or gives per-bank): the recorded sets are used.
      const loaded = await HnswTokenIndex.load(
        join(dir, 'b'),
        { ...f.side, memoryBank: f.memoryBank },
        params,
      );
      expect(loaded.graphs.map((g) => g.file)).toEqual(names.slice(1));
      const q = unitVectors(5, DIM, rng(7));
      for (const memories of f.haystacks) {
        same(await loaded.search(q, 5, 8, { memories }), await built.search(q, 5, 8, { memories }));
      }
      await expect(
        HnswTokenIndex.load(join(dir, 'b'), { ...f.side, candidateSets: f.banks }, params),
      ).rejects.toThrow(/other candidate sets/);
      built.dispose();
      loaded.dispose();
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('a tie at the k-th place past the last proposal: searched exhaustively, tie order kept', async () => {
    // 40 one-token memories with the same vector, 10 others: 40 tied tokens, k + 16 = 20 proposed.
    const count = 50;
    const tokenOffsets = Int32Array.from({ length: count + 1 }, (_, m) => m);
    const vectors = unitVectors(count, DIM, rng(8));
    for (let m = 1; m < 40; m++) vectors.copyWithin(m * DIM, 0, DIM);
    const model = trainCodec('fp32', vectors, count, DIM);
    const side: HnswSide = {
      model,
      codes: encodeTokens(model, vectors, count),
      tokenOffsets,
      ids: Array.from({ length: count }, (_, m) => `dup-${m}`),
    };
    const memories = Int32Array.from({ length: count }, (_, m) => m);
    const index = await HnswTokenIndex.build({ ...side, candidateSets: [memories] }, WIDE, {
      threads: 1,
    });
    const q = vectors.slice(0, DIM);
    const hits = await index.search(q, 1, 4, { memories });
    same(hits, await new CodecExactTokenIndex(side, ort).search(q, 1, 4, { memories }));
    expect(hits.widenedRows).toBe(1);
    index.dispose();
  });
});
