import { afterAll, describe, expect, it } from 'vitest';
import type { OrtSimilarityKernel } from '@bfe/index';
import { SparseScorer } from '@bfe/scorer';
import { residentIndexFactory } from './resident-index.js';
import { SEARCH_SYSTEMS, searchView } from '../search/search.js';
import { randomQuery, randomView } from '../testing/random-view.js';
import type { BankView, EncodedTexts } from '../types.js';

const scorer = await SparseScorer.open();
afterAll(() => scorer.dispose());

const DIM = 16;

const view = (seed: number, rows: number, ties = false): BankView =>
  randomView(seed, { rows, maxTokens: 9, dim: DIM, tokenId: (t) => 1000 + (t % 50), ties });
const query = (seed: number, tokens: number): EncodedTexts => randomQuery(seed, tokens, DIM);

describe('residentIndexFactory', () => {
  it('ranks, scores and explains exactly as the non-resident exact search, on every system', async () => {
    const index = residentIndexFactory();
    const views: BankView[] = [];
    try {
      for (const [seed, ties] of [
        [1, false],
        [2, true],
      ] as const) {
        const v = view(seed, 60, ties);
        views.push(v);
        // The second search starts the resident build; compare once it is ready.
        const warm = query(99, 3);
        await searchView(v, warm, { index }, scorer);
        await searchView(v, warm, { index }, scorer);
        await index.settled();
        for (let qs = 0; qs < 3; qs++) {
          const q = query(100 + seed * 10 + qs, 4 + qs);
          for (const system of SEARCH_SYSTEMS) {
            for (const tokenK of [5, 64]) {
              const opts = { k: 60, system, tokenK, queryText: 'memory 7 and memory 12' };
              const plain = await searchView(v, q, opts, scorer);
              const resident = await searchView(v, q, { ...opts, index }, scorer);
              expect(resident, `${system} token k ${tokenK} seed ${seed}`).toEqual(plain);
            }
          }
        }
      }
      // One kernel per live view, kept across searches.
      expect(views).toHaveLength(2);
      expect(index.resident()).toBe(2);
    } finally {
      await index.dispose();
    }
    expect(index.resident()).toBe(0);
  });

  it('packs a small bank at its second search, and keeps a large one on the scorer’s kernel', async () => {
    const small = view(3, 30);
    const large = view(4, 90);
    const q = query(5, 6);
    const index = residentIndexFactory({ maxResidentTokens: small.tokenOffsets[30]! });
    const kernelOf = (v: BankView) =>
      (index(v, scorer.kernel) as unknown as { kernel: OrtSimilarityKernel }).kernel;
    try {
      expect(large.tokenOffsets[90]!).toBeGreaterThan(small.tokenOffsets[30]!);
      await searchView(small, q, { index }, scorer);
      await index.settled();
      expect(index.resident()).toBe(0);
      await searchView(small, q, { index }, scorer); // the second search: the build starts
      await index.settled();
      expect(index.resident()).toBe(1);
      const kernel = kernelOf(small);
      expect(kernel).not.toBe(scorer.kernel);
      const before = kernel.residentHits;
      await searchView(small, q, { index }, scorer);
      expect(kernel.residentHits).toBeGreaterThan(before);
      for (let i = 0; i < 3; i++) await searchView(large, q, { index }, scorer);
      await index.settled();
      expect(kernelOf(large)).toBe(scorer.kernel);
      expect(index.resident()).toBe(1);
    } finally {
      await index.dispose();
    }
    expect(index.resident()).toBe(0);
  });

  it('uses the scorer’s kernel when it is not onnxruntime on the CPU', async () => {
    const js = await SparseScorer.open({ kernel: 'js' });
    const index = residentIndexFactory();
    try {
      const v = view(6, 20);
      const q = query(7, 5);
      for (let i = 0; i < 3; i++)
        expect(await searchView(v, q, { index }, js)).toEqual(await searchView(v, q, {}, js));
      await index.settled();
      const built = index(v, js.kernel);
      expect((built as unknown as { kernel: unknown }).kernel).toBe(js.kernel);
      expect(index.resident()).toBe(0);
    } finally {
      await index.dispose();
      await js.dispose();
    }
  });
});
