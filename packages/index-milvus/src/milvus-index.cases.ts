import { expect, it } from 'vitest';
import { ConfigError } from '@bfe/core';
import {
  ExactTokenIndex,
  JsSimilarityKernel,
  ScorerInputError,
  flatTokenStore,
  type TokenHits,
} from '@bfe/index';
import { rng, unitVectors } from '@bfe/index/testing';
import { TokenCollection } from './collection.js';
import { MilvusTokenIndex, type MilvusSide } from './milvus-index.js';
import type { MilvusIndexType } from './options.js';

const DIM = 32;

/**
 * 4 banks × 10 memories of 2..6 tokens (row m in bank m % 4); memories 4 and 8 (bank 0) repeat
 * memory 0's vectors, so equal similarities occur and the tie order decides.
 */
function side(seed: number): MilvusSide & { vectors: Float32Array } {
  const random = rng(seed);
  const rows = 40;
  const tokenOffsets = new Int32Array(rows + 1);
  for (let m = 0; m < rows; m++) {
    const n = m === 0 || m === 4 || m === 8 ? 3 : 2 + Math.floor(random() * 5);
    tokenOffsets[m + 1] = tokenOffsets[m]! + n;
  }
  const vectors = unitVectors(tokenOffsets[rows]!, DIM, random);
  for (const m of [4, 8]) vectors.copyWithin(tokenOffsets[m]! * DIM, 0, 3 * DIM);
  return {
    vectors,
    tokens: flatTokenStore(vectors, DIM),
    tokenOffsets,
    ids: Array.from({ length: rows }, (_, m) => `conv-${m % 4}:D${m}`),
    banks: Array.from({ length: rows }, (_, m) => `bank-${m % 4}`),
  };
}

const bankRows = (...banks: number[]): Int32Array =>
  Int32Array.from({ length: 40 }, (_, m) => m).filter((m) => banks.includes(m % 4));

function same(a: TokenHits, b: TokenHits): void {
  expect(a.k).toBe(b.k);
  expect(Array.from(a.tokens)).toEqual(Array.from(b.tokens));
  expect(Array.from(a.values)).toEqual(Array.from(b.values));
  expect(Array.from(a.memories)).toEqual(Array.from(b.memories));
  expect(Array.from(a.slots)).toEqual(Array.from(b.slots));
}

/**
 * The MilvusTokenIndex cases every Milvus server passes (Milvus Lite and the standalone server):
 * FLAT equal to the exact backend, stale writes ignored, each approximate index type rescored
 * exactly with recall@8 ≥ 0.9, and a collection of another shape refused. Call inside a
 * `describe` whose `beforeAll` starts the server; `server()` gives its address and token.
 */
export function indexCases(
  server: () => { address: string; token?: string },
  approximate: readonly Exclude<MilvusIndexType, 'FLAT'>[],
): void {
  const kernel = new JsSimilarityKernel();

  it('FLAT: the exact backend’s hits (values, order, ties) for whole banks, subsets, clampK', async () => {
    const s = side(1);
    const c = await TokenCollection.open({ ...server(), collection: 'flat_a' }, DIM);
    const index = await MilvusTokenIndex.build(c, s, { kernel });
    const exact = new ExactTokenIndex(s, kernel);
    const q = unitVectors(6, DIM, rng(2));
    q.set(s.vectors.subarray(0, DIM), 0); // equal to memory 0's first token: three-way ties
    const cases: [Int32Array, number][] = [
      [bankRows(0), 5],
      [bankRows(0), 12],
      [bankRows(1, 2), 9],
      [Int32Array.of(0, 4, 9, 13, 17), 4], // not whole banks: memory_id filter
    ];
    for (const [memories, k] of cases) {
      same(await index.search(q, 6, k, { memories }), await exact.search(q, 6, k, { memories }));
    }
    const all = bankRows(3);
    const clamped = await index.search(q, 6, 1000, { memories: all, clampK: true });
    same(clamped, await exact.search(q, 6, 1000, { memories: all, clampK: true }));
    await expect(index.search(q, 6, 1000, { memories: all })).rejects.toThrow(ScorerInputError);
    const withBest = await index.search(q, 6, 5, { memories: bankRows(0), bestPerMemory: true });
    const exactBest = await exact.search(q, 6, 5, { memories: bankRows(0), bestPerMemory: true });
    expect(Array.from(withBest.best!)).toEqual(Array.from(exactBest.best!));
    expect(await c.count()).toBe(s.tokenOffsets[40]);
    await c.drop();
    await c.close();
  });

  it('FLAT: rows of another write are ignored, a row they crowd out is widened, results exact', async () => {
    const s = side(3);
    const c = await TokenCollection.open({ ...server(), collection: 'flat_b' }, DIM);
    const index = await MilvusTokenIndex.build(c, s);
    // Another write of memory 0 (bank 0): 60 tokens equal to query row 0, which fill its first
    // fetch (k + 16 = 22 proposals) and are all ignored.
    const q = unitVectors(3, DIM, rng(4));
    const decoy = new Float32Array(60 * DIM);
    for (let t = 0; t < 60; t++) decoy.set(q.subarray(0, DIM), t * DIM);
    await c.insert('bank-0', [{ id: 'conv-0:D0', seq: 7, vectors: decoy }]);
    const exact = new ExactTokenIndex(s, kernel);
    const memories = bankRows(0);
    const hits = await index.search(q, 3, 6, { memories });
    same(hits, await exact.search(q, 3, 6, { memories }));
    expect(hits.widenedRows).toBe(1);
    // Deletes take every write of a memory.
    await c.deleteMemories('bank-0', ['conv-0:D8']);
    expect(await c.memories('bank-0')).toEqual(
      new Map<string, number[]>([
        ['conv-0:D0', [0, 7]],
        ...[4, 12, 16, 20, 24, 28, 32, 36].map((m): [string, number[]] => [`conv-0:D${m}`, [0]]),
      ]),
    );
    await c.drop();
    await c.close();
  });

  it.each(approximate)(
    '%s: approximate proposals, exact similarities; recall@8 vs exact ≥ 0.9',
    async (indexType) => {
      const s = side(5);
      const c = await TokenCollection.open(
        {
          ...server(),
          collection: `approx_${indexType.toLowerCase()}`,
          indexType,
          ivf: { nlist: 16, nprobe: 8 },
        },
        DIM,
      );
      const described = await c.client.describeIndex({ collection_name: c.name });
      expect(described.index_descriptions[0]?.params).toContainEqual({
        key: 'index_type',
        value: indexType,
      });
      const index = await MilvusTokenIndex.build(c, s);
      const exact = new ExactTokenIndex(s, kernel);
      const q = unitVectors(8, DIM, rng(6));
      const memories = bankRows(0, 1, 2, 3);
      const [a, b] = [
        await index.search(q, 8, 8, { memories }),
        await exact.search(q, 8, 8, { memories }),
      ];
      let found = 0;
      for (let r = 0; r < 8; r++) {
        const want = new Set(b.tokens.subarray(r * 8, r * 8 + 8));
        for (const t of a.tokens.subarray(r * 8, r * 8 + 8)) if (want.has(t)) found++;
      }
      expect(found / 64).toBeGreaterThanOrEqual(0.9);
      // Whatever was proposed carries its exact float64 similarity, rows descending.
      for (let r = 0; r < 8; r++) {
        for (let h = 1; h < 8; h++)
          expect(a.values[r * 8 + h]!).toBeLessThanOrEqual(a.values[r * 8 + h - 1]!);
      }
      await c.drop();
      await c.close();
    },
  );

  it('refuses a collection of another dimension or index type', async () => {
    const c = await TokenCollection.open({ ...server(), collection: 'shape' }, DIM);
    await expect(TokenCollection.open({ ...server(), collection: 'shape' }, 16)).rejects.toThrow(
      ConfigError,
    );
    await expect(
      TokenCollection.open({ ...server(), collection: 'shape', indexType: 'HNSW' }, DIM),
    ).rejects.toThrow(/FLAT index, not HNSW/);
    await c.drop();
    await c.close();
  });
}
