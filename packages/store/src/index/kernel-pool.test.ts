import { afterAll, describe, expect, it } from 'vitest';
import { OrtSimilarityKernel } from '@bfe/index';
import { SparseScorer } from '@bfe/scorer';
import { residentKernelPool } from './kernel-pool.js';
import { residentIndexFactory } from './resident-index.js';
import { SEARCH_SYSTEMS, searchView } from '../search/search.js';
import { prefixView, randomQuery, randomView } from '../testing/random-view.js';
import type { BankView, EncodedTexts } from '../types.js';

const scorer = await SparseScorer.open({ threads: 1 });
afterAll(() => scorer.dispose());

const DIM = 16;

const view = (seed: number, rows: number, versioned = false): BankView =>
  randomView(seed, { rows, maxTokens: 9, dim: DIM, tokenId: (t) => 1000 + (t % 50), versioned });
const query = (seed: number, tokens: number): EncodedTexts => randomQuery(seed, tokens, DIM);

describe('residentKernelPool', () => {
  it('banks resident on worker threads rank, score and explain exactly as on this thread', async () => {
    const pool = await residentKernelPool({ workers: 2, threads: 1 });
    const index = residentIndexFactory({ kernel: (fallback) => pool.kernel(fallback) });
    const views: BankView[] = [];
    try {
      for (const seed of [1, 2, 3]) {
        const v = view(seed, 50 + seed);
        views.push(v); // alive: a collected view's kernel is released
        const warm = query(99, 3);
        await searchView(v, warm, { index }, scorer);
        await searchView(v, warm, { index }, scorer);
        await index.settled();
        const hits = pool.hits();
        const bests = pool.bestsAnswered();
        // Concurrent searches, as a server makes them, against each alone without the index.
        const queries = Array.from({ length: 4 }, (_, i) => query(100 + seed * 10 + i, 3 + i));
        for (const system of SEARCH_SYSTEMS) {
          for (const tokenK of [5, 64]) {
            const opts = { k: 60, system, tokenK, queryText: 'memory 7 and memory 12' };
            const onWorkers = await Promise.all(
              queries.map((q) => searchView(v, q, { ...opts, index }, scorer)),
            );
            for (let i = 0; i < queries.length; i++)
              expect(onWorkers[i], `${system} token k ${tokenK} seed ${seed}`).toEqual(
                await searchView(v, queries[i]!, opts, scorer),
              );
          }
        }
        expect(pool.hits()).toBeGreaterThan(hits); // the workers answered
        expect(pool.bestsAnswered()).toBeGreaterThan(bests); // and computed evidence bests
      }
      expect(views).toHaveLength(3);
      expect(index.resident()).toBe(3);
    } finally {
      await index.dispose();
      await pool.dispose();
    }
  });

  it('an int8 bank on a worker answers as on this thread, alone or stacked, marked approximate', async () => {
    const pool = await residentKernelPool({ workers: 1, threads: 1 });
    const here = new OrtSimilarityKernel({ threads: 1, spin: false });
    try {
      const v = view(7, 80);
      const n = v.tokenOffsets[80]!;
      const bank = v.tokenVectors.slice(0, n * DIM);
      const remote = pool.kernel(scorer.kernel);
      await remote.makeResident(bank, n, DIM, 'int8');
      await here.makeResident(bank, n, DIM, 'int8');
      const qs = [1, 2, 3].map((i) => query(40 + i, 2 + i).tokenVectors);
      // Concurrent calls on one bank share a worker's kernel run, their rows stacked.
      const answers = await Promise.all(
        qs.map((q) => remote.topK(q, q.length / DIM, bank, n, DIM, 12)),
      );
      for (let i = 0; i < qs.length; i++) {
        const alone = await here.topK(qs[i]!, qs[i]!.length / DIM, bank, n, DIM, 12);
        expect(answers[i]!.approximate).toBe(true);
        expect(answers[i]!.indices).toEqual(alone.indices);
        expect(answers[i]!.values).toEqual(alone.values);
      }
    } finally {
      await here.dispose();
      await pool.dispose();
    }
  });

  it('a view grown by appends is answered on the worker at once, exactly as alone', async () => {
    const pool = await residentKernelPool({ workers: 1, threads: 1 });
    const index = residentIndexFactory({ kernel: (fallback) => pool.kernel(fallback) });
    const full = view(11, 60, true);
    const first = prefixView(full, 57);
    try {
      const warm = query(99, 3);
      await searchView(first, warm, { index }, scorer);
      await searchView(first, warm, { index }, scorer);
      await index.settled();
      const hits = pool.hits();
      const bests = pool.bestsAnswered();
      const queries = Array.from({ length: 4 }, (_, i) => query(400 + i, 3 + i));
      for (const system of SEARCH_SYSTEMS) {
        for (const k of [5, 60]) {
          const opts = { k, system, tokenK: 64, queryText: 'memory 58 and memory 12' };
          const onWorkers = await Promise.all(
            queries.map((q) => searchView(full, q, { ...opts, index }, scorer)),
          );
          for (let i = 0; i < queries.length; i++)
            expect(onWorkers[i], `${system} k ${k}`).toEqual(
              await searchView(full, queries[i]!, opts, scorer),
            );
        }
      }
      expect(pool.hits()).toBeGreaterThan(hits);
      expect(pool.bestsAnswered()).toBeGreaterThan(bests);
      await index.settled();
      expect(index.resident()).toBe(1); // the grown view was not packed again
    } finally {
      await index.dispose();
      await pool.dispose();
    }
  });

  it('concurrent top-k calls on one resident bank share a kernel run, each answered as alone', async () => {
    const pool = await residentKernelPool({ workers: 1, threads: 1 });
    const alone = new OrtSimilarityKernel({ threads: 1 });
    const dim = 64;
    const v = randomView(7, { rows: 3000, maxTokens: 9, dim });
    const n = v.tokenOffsets[v.ids.length]!;
    try {
      const kernel = pool.kernel(scorer.kernel);
      await kernel.makeResident(v.tokenVectors, n, dim);
      await alone.makeResident(v.tokenVectors, n, dim);
      const queries = Array.from({ length: 24 }, (_, i) => randomQuery(500 + i, 3 + (i % 4), dim));
      // Posted in one turn of this thread's loop, as a batch of encoded queries reaches it.
      const shared = await Promise.all(
        queries.map((q) =>
          kernel.topK(q.tokenVectors, q.tokenVectors.length / dim, v.tokenVectors, n, dim, 20),
        ),
      );
      expect(pool.largestBatch()).toBeGreaterThan(1);
      for (const [i, q] of queries.entries()) {
        const rows = q.tokenVectors.length / dim;
        const own = await alone.topK(q.tokenVectors, rows, v.tokenVectors, n, dim, 20);
        expect(shared[i]!.kOut).toBe(20);
        expect(Array.from(shared[i]!.indices), `call ${i}`).toEqual(Array.from(own.indices));
        for (let j = 0; j < own.values.length; j++)
          expect(shared[i]!.values[j]).toBeCloseTo(own.values[j]!, 6);
      }
    } finally {
      await alone.dispose();
      await pool.dispose();
    }
  });
});
