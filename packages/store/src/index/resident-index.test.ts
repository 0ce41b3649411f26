import { afterAll, describe, expect, it } from 'vitest';
import type { OrtSimilarityKernel } from '@bfe/index';
import { SparseScorer } from '@bfe/scorer';
import { MAX_APPENDED_SHARE, residentIndexFactory } from './resident-index.js';
import { SEARCH_SYSTEMS, searchView } from '../search/search.js';
import { prefixView, randomQuery, randomView } from '../testing/random-view.js';
import type { BankView, EncodedTexts } from '../types.js';

const scorer = await SparseScorer.open();
afterAll(() => scorer.dispose());

const DIM = 16;

const view = (seed: number, rows: number, ties = false, versioned = false): BankView =>
  randomView(seed, {
    rows,
    maxTokens: 9,
    dim: DIM,
    tokenId: (t) => 1000 + (t % 50),
    ties,
    versioned,
  });
const query = (seed: number, tokens: number): EncodedTexts => randomQuery(seed, tokens, DIM);

const kernelOf = (index: ReturnType<typeof residentIndexFactory>, v: BankView) =>
  (index(v, scorer.kernel) as unknown as { kernel: OrtSimilarityKernel }).kernel;

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
    const kernelOf1 = (v: BankView) => kernelOf(index, v);
    try {
      expect(large.tokenOffsets[90]!).toBeGreaterThan(small.tokenOffsets[30]!);
      await searchView(small, q, { index }, scorer);
      await index.settled();
      expect(index.resident()).toBe(0);
      await searchView(small, q, { index }, scorer); // the second search: the build starts
      await index.settled();
      expect(index.resident()).toBe(1);
      const kernel = kernelOf1(small);
      expect(kernel).not.toBe(scorer.kernel);
      const before = kernel.residentHits;
      await searchView(small, q, { index }, scorer);
      expect(kernel.residentHits).toBeGreaterThan(before);
      for (let i = 0; i < 3; i++) await searchView(large, q, { index }, scorer);
      await index.settled();
      expect(kernelOf1(large)).toBe(scorer.kernel);
      expect(index.resident()).toBe(1);
    } finally {
      await index.dispose();
    }
    expect(index.resident()).toBe(0);
  });

  it('searches a view grown by appends on the resident kernel at once, exactly as its own search', async () => {
    const full = view(8, 60, false, true);
    const first = prefixView(full, 57);
    const total = full.tokenOffsets[60]!;
    // Three rows appended: within the share searched on the old kernel.
    expect(total - first.tokenOffsets[57]!).toBeLessThanOrEqual(MAX_APPENDED_SHARE * total);
    const index = residentIndexFactory();
    try {
      const warm = query(98, 3);
      await searchView(first, warm, { index }, scorer);
      await searchView(first, warm, { index }, scorer);
      await index.settled();
      expect(index.resident()).toBe(1);
      const kernel = kernelOf(index, first);
      expect(kernel).not.toBe(scorer.kernel);
      // The grown view's first search already runs on the resident kernel.
      expect(kernelOf(index, full)).toBe(kernel);
      const before = kernel.residentHits;
      for (let qs = 0; qs < 3; qs++) {
        const q = query(200 + qs, 3 + qs);
        for (const system of SEARCH_SYSTEMS) {
          for (const tokenK of [5, 64]) {
            const opts = { k: 60, system, tokenK, queryText: 'memory 58 and memory 7' };
            const plain = await searchView(full, q, opts, scorer);
            const grown = await searchView(full, q, { ...opts, index }, scorer);
            expect(grown, `${system} token k ${tokenK}`).toEqual(plain);
          }
        }
      }
      expect(kernel.residentHits).toBeGreaterThan(before);
      await index.settled();
      expect(index.resident()).toBe(1); // not packed again
      // The same rows at the same versions read from other memory (states read again, as after
      // a flush) do not extend it either.
      const reread: BankView = { ...full, tokenVectors: full.tokenVectors.slice() };
      expect(kernelOf(index, reread)).toBe(scorer.kernel);
      // An update (row 3 at a later version) does not extend the resident view.
      const updated: BankView = { ...full, seqs: full.seqs!.map((s, i) => (i === 3 ? 1e9 : s)) };
      expect(kernelOf(index, updated)).toBe(scorer.kernel);
      // Grown past the share: searched on the old kernel, then packed at its second search.
      const half = prefixView(full, 30);
      const grownFar: BankView = { ...full, seqs: full.seqs!.slice() };
      const index2 = residentIndexFactory();
      try {
        await searchView(half, warm, { index: index2 }, scorer);
        await searchView(half, warm, { index: index2 }, scorer);
        await index2.settled();
        const old = kernelOf(index2, half);
        expect(kernelOf(index2, grownFar)).toBe(old);
        const q = query(300, 4);
        const opts = { k: 60, system: 'sparse-fusion', tokenK: 64 } as const;
        expect(await searchView(grownFar, q, { ...opts, index: index2 }, scorer)).toEqual(
          await searchView(grownFar, q, opts, scorer),
        );
        await index2.settled();
        expect(index2.resident()).toBe(2);
        const own = kernelOf(index2, grownFar);
        expect(own).not.toBe(old);
        expect(await searchView(grownFar, q, { ...opts, index: index2 }, scorer)).toEqual(
          await searchView(grownFar, q, opts, scorer),
        );
      } finally {
        await index2.dispose();
      }
    } finally {
      await index.dispose();
    }
    expect(index.resident()).toBe(0);
  });

  it('with product int8, proposes from an int8 bank and ranks as the exact search', async () => {
    const index = residentIndexFactory({ product: 'int8' });
    try {
      const v = view(8, 60);
      const warm = query(98, 3);
      await searchView(v, warm, { index }, scorer);
      await searchView(v, warm, { index }, scorer);
      await index.settled();
      expect(index.resident()).toBe(1);
      const q = query(31, 6);
      const rows = q.tokenOffsets[1]!;
      const all = Int32Array.from({ length: 60 }, (_, m) => m);
      const built = await index(v, scorer.kernel);
      const hits = await built.search(q.tokenVectors, rows, 16, {
        memories: all,
      });
      expect(hits.approximate).toBe(true);
      for (const system of SEARCH_SYSTEMS) {
        for (const tokenK of [5, 64]) {
          const opts = { k: 60, system, tokenK, queryText: 'memory 3 and memory 40' };
          const plain = await searchView(v, q, opts, scorer);
          expect(await searchView(v, q, { ...opts, index }, scorer), system).toEqual(plain);
        }
      }
    } finally {
      await index.dispose();
    }
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
