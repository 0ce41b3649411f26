import {
  CodecExactTokenIndex,
  ExactTokenIndex,
  HnswTokenIndex,
  encodeTokens,
  flatTokenStore,
  trainCodec,
  type TokenIndex,
} from '@bfe/index';
import { afterAll, describe, expect, it } from 'vitest';
import { SparseScorer } from './scorer.js';
import { randomBank, rng } from '@bfe/index/testing';

const DIM = 16;
const scorer = await SparseScorer.open({ threads: 1 });
afterAll(() => scorer.dispose());

const random = rng(21);
const memories = { ...randomBank(60, 10, DIM, random, 1), ids: [] as string[] };
memories.ids = Array.from({ length: 60 }, (_, m) => `conv-${m % 3}:D${m}`);
const queries = randomBank(5, 6, DIM, random, 1);
const n = memories.tokenOffsets[60]!;
const memoryBank = Int32Array.from({ length: 60 }, (_, m) => m % 3);
const PARAMS = { M: 16, efConstruction: 128, efSearch: 128 };

async function backends(): Promise<Array<[string, TokenIndex]>> {
  const side = (codec: 'sq8' | 'sq4' | 'fp16') => {
    const model = trainCodec(codec, memories.tokenVectors, n, DIM);
    const codes = encodeTokens(model, memories.tokenVectors, n);
    return { model, codes, tokenOffsets: memories.tokenOffsets, ids: memories.ids };
  };
  const store = flatTokenStore(memories.tokenVectors, DIM);
  return [
    [
      'exact fp32',
      new ExactTokenIndex(
        { tokens: store, tokenOffsets: memories.tokenOffsets, ids: memories.ids },
        scorer.kernel,
      ),
    ],
    ['exact sq8', new CodecExactTokenIndex(side('sq8'), scorer.kernel)],
    ['hnsw sq4 per bank', await HnswTokenIndex.build({ ...side('sq4'), memoryBank }, PARAMS)],
    ['hnsw fp16 filtered', await HnswTokenIndex.build(side('fp16'), PARAMS)],
  ];
}

describe('the tail floor reads the index hits as returned (METHOD.md §2)', () => {
  it('t_i = max(0, k-th returned similarity) and s_sparse from the hits, for every backend', async () => {
    const bank1 = Int32Array.from({ length: 20 }, (_, i) => 3 * i + 1);
    const k = 8;
    const queryRows = [0, 1, 2, 3, 4];
    for (const [name, index] of await backends()) {
      const [scores] = [
        await scorer.score(
          {
            memories: { ...memories, dim: DIM },
            queries: { ...queries, dim: DIM },
            queryRows,
            candidates: bank1,
            index,
          },
          { k, alpha: 0.5, maxsim: false },
        ),
      ];
      // The same query tokens, searched directly.
      const q = queries.tokenVectors.subarray(0, queries.tokenOffsets[5]! * DIM);
      const rows = queries.tokenOffsets[5]!;
      const hits = await index.search(q, rows, k, { memories: bank1 });
      let floorsAboveZero = 0;
      for (const [qi, s] of scores!.entries()) {
        const start = queries.tokenOffsets[qi]!;
        let mean = 0;
        for (let i = 0; i < s.nQueryTokens; i++) {
          const kth = hits.values[(start + i) * k + k - 1]!;
          expect(s.tailFloor[i], `${name}, query ${qi}, token ${i}`).toBe(Math.max(0, kth));
          if (kth > 0) floorsAboveZero++;
          mean += s.tailFloor[i]! / s.nQueryTokens;
        }
        // A candidate without hits scores exactly the mean floor.
        const hitSlots = new Set<number>();
        for (let i = 0; i < s.nQueryTokens; i++)
          for (let h = 0; h < k; h++) hitSlots.add(hits.slots[(start + i) * k + h]!);
        for (let c = 0; c < bank1.length; c++) {
          if (!hitSlots.has(c)) expect(s.sparse[c]).toBeCloseTo(mean, 12);
        }
      }
      expect(floorsAboveZero, name).toBeGreaterThan(0);
    }
  });

  it('MaxSim through an HNSW index without a kernel is refused, with one it runs', async () => {
    const model = trainCodec('sq8', memories.tokenVectors, n, DIM);
    const side = {
      model,
      codes: encodeTokens(model, memories.tokenVectors, n),
      tokenOffsets: memories.tokenOffsets,
      ids: memories.ids,
      memoryBank,
    };
    const request = {
      memories: { ...memories, dim: DIM },
      queries: { ...queries, dim: DIM },
      queryRows: [0],
      candidates: Int32Array.from({ length: 20 }, (_, i) => 3 * i),
    };
    const bare = await HnswTokenIndex.build(side, PARAMS);
    await expect(scorer.score({ ...request, index: bare }, { k: 8, maxsim: true })).rejects.toThrow(
      /MaxSim/,
    );
    const withKernel = await HnswTokenIndex.build(side, PARAMS, { kernel: scorer.kernel });
    const [s] = await scorer.score({ ...request, index: withKernel }, { k: 8, maxsim: true });
    expect(s!.systems.maxsim).toBeDefined();
  });

  it("a backend's own floor (the clustered index's WARP estimate) replaces the k-th value", async () => {
    const exact = new ExactTokenIndex(
      {
        tokens: flatTokenStore(memories.tokenVectors, DIM),
        tokenOffsets: memories.tokenOffsets,
        ids: memories.ids,
      },
      scorer.kernel,
    );
    const k = 8;
    const rows = queries.tokenOffsets[1]!;
    // Per row: a floor above every hit (−: clipped at 0), and one below the k-th value.
    const floors = Float64Array.from({ length: rows }, (_, i) => [0.99, -0.5, 0.001][i % 3]!);
    const floored: TokenIndex = {
      backend: 'floored',
      codec: 'fp32',
      dim: DIM,
      size: n,
      search: async (q, r, kk, options) => ({
        ...(await exact.search(q, r, kk, options)),
        floor: floors,
      }),
    };
    const candidates = Int32Array.from({ length: 30 }, (_, i) => 2 * i);
    const request = {
      memories: { ...memories, dim: DIM },
      queries: { ...queries, dim: DIM },
      queryRows: [0],
      candidates,
    };
    const [s] = await scorer.score({ ...request, index: floored }, { k, maxsim: false });
    expect(Array.from(s!.tailFloor)).toEqual(Array.from(floors, (f) => Math.max(0, f)));
    // s_sparse from the hits written out: per row, each memory's best hit above the floor.
    const hits = await exact.search(queries.tokenVectors.subarray(0, rows * DIM), rows, k, {
      memories: candidates,
    });
    for (let c = 0; c < candidates.length; c++) {
      let want = 0;
      for (let i = 0; i < rows; i++) {
        const t = Math.max(0, floors[i]!);
        let best = t;
        for (let h = 0; h < k; h++) {
          if (hits.slots[i * k + h] === c) best = Math.max(best, hits.values[i * k + h]!);
        }
        want += best / rows;
      }
      expect(s!.sparse[c]).toBeCloseTo(want, 12);
    }
  });
});
