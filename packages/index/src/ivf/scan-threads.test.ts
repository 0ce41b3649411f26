import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { tmpDir } from '@bfe/core/testing';
import { encodeTokens, trainCodec } from '../codecs/codec.js';
import { IvfTokenIndex } from '../ivf-index.js';
import { JsSimilarityKernel } from '../js-kernel.js';
import { rng, unitVectors } from '../testing/random.js';
import type { TokenHits } from '../token-index.js';

const js = new JsSimilarityKernel();
/** Every index these tests open, closed at the end (no worker outlives the file). */
const opened: IvfTokenIndex[] = [];
const kept = (index: IvfTokenIndex): IvfTokenIndex => (opened.push(index), index);

afterAll(async () => {
  await Promise.all(opened.map((i) => i.close()));
  for (const i of opened) expect(i.scanWorkers).toBe(0);
});

interface Bank {
  readonly dim: number;
  readonly vectors: Float32Array;
  readonly tokenOffsets: Int32Array;
  readonly ids: string[];
  readonly queries: Float32Array;
}

function normalise(v: Float32Array, dim: number): Float32Array {
  for (let t = 0; t < v.length / dim; t++) {
    let ss = 0;
    for (let j = 0; j < dim; j++) ss += v[t * dim + j]! ** 2;
    for (let j = 0; j < dim; j++) v[t * dim + j]! /= Math.sqrt(ss);
  }
  return v;
}

/** Uniform random unit tokens in memories of 3..9 tokens; random query rows. */
function randomBank(seed: number): Bank {
  const random = rng(seed);
  const dim = 32;
  const memories = 300;
  const tokenOffsets = new Int32Array(memories + 1);
  for (let m = 0; m < memories; m++)
    tokenOffsets[m + 1] = (tokenOffsets[m]! + 3 + random() * 7) | 0;
  const n = tokenOffsets[memories]!;
  const ids = Array.from({ length: memories }, (_, m) => `r:${m}`);
  return {
    dim,
    vectors: unitVectors(n, dim, random),
    tokenOffsets,
    ids,
    queries: unitVectors(32, dim, random),
  };
}

/**
 * Shaped like MiniLM token states: 384 dimensions sharing a common direction, tokens around 48
 * topics of skewed frequency (clusters of very different sizes), memories of 4..40 tokens, every
 * 25th memory a copy of the one before (exact ties), query rows noisy copies of bank tokens.
 */
function realShapedBank(seed: number): Bank {
  const random = rng(seed);
  const dim = 384;
  const memories = 260;
  const tokenOffsets = new Int32Array(memories + 1);
  for (let m = 0; m < memories; m++)
    tokenOffsets[m + 1] = (tokenOffsets[m]! + 4 + random() * 37) | 0;
  const n = tokenOffsets[memories]!;
  const common = unitVectors(1, dim, random);
  const topics = unitVectors(48, dim, random);
  const noise = unitVectors(n, dim, random);
  const vectors = new Float32Array(n * dim);
  for (let t = 0; t < n; t++) {
    const topic = Math.floor(48 * random() ** 2);
    for (let j = 0; j < dim; j++) {
      vectors[t * dim + j] =
        0.6 * common[j]! + topics[topic * dim + j]! + 0.7 * noise[t * dim + j]!;
    }
  }
  for (let m = 25; m < memories; m += 25) {
    const [a, b] = [tokenOffsets[m - 1]!, tokenOffsets[m]!];
    const len = Math.min(b - a, tokenOffsets[m + 1]! - b);
    vectors.copyWithin(b * dim, a * dim, (a + len) * dim);
  }
  normalise(vectors, dim);
  const rows = 32;
  const jitter = unitVectors(rows, dim, random);
  const queries = new Float32Array(rows * dim);
  for (let r = 0; r < rows; r++) {
    const t = Math.floor(random() * n);
    for (let j = 0; j < dim; j++)
      queries[r * dim + j] = vectors[t * dim + j]! + 0.5 * jitter[r * dim + j]!;
  }
  const ids = Array.from({ length: memories }, (_, m) => `conv-${m % 5}:D${m}`);
  return {
    dim,
    vectors: normalise(vectors, dim),
    tokenOffsets,
    ids,
    queries: normalise(queries, dim),
  };
}

function sideOf(b: Bank) {
  const n = b.tokenOffsets.at(-1)!;
  const model = trainCodec('fp32', b.vectors, n, b.dim);
  return {
    model,
    codes: encodeTokens(model, b.vectors, n),
    tokenOffsets: b.tokenOffsets,
    ids: b.ids,
  };
}

/** Everything a search returns and what it scanned, as bytes and counts. */
function fingerprint(index: IvfTokenIndex, hits: TokenHits): unknown {
  const bytes = (a: ArrayBufferView): string =>
    Buffer.from(a.buffer, a.byteOffset, a.byteLength).toString('base64');
  return {
    tokens: bytes(hits.tokens),
    values: bytes(hits.values),
    memories: bytes(hits.memories),
    slots: bytes(hits.slots),
    widenedRows: hits.widenedRows,
    scored: index.stats!.tokensScored,
    probed: index.stats!.clustersProbed,
  };
}

/** Candidate sets: every memory, one conversation, every 7th memory, three memories. */
function candidateSets(memories: number): Int32Array[] {
  const all = Int32Array.from({ length: memories }, (_, m) => m);
  return [
    all,
    all.filter((m) => m % 5 === 2),
    all.filter((m) => m % 7 === 0),
    Int32Array.of(1, memories >> 1, memories - 2),
  ];
}

describe('IvfTokenIndex on several scan threads', () => {
  const banks = [
    { name: 'random', make: () => randomBank(17), centroids: 32, nprobe: 4 },
    { name: 'real-shaped', make: () => realShapedBank(29), centroids: 64, nprobe: 8 },
  ];
  for (const { name, make, centroids, nprobe } of banks) {
    for (const bits of [2, 4] as const) {
      it(`returns the one-thread results byte for byte, with and without filters (${name}, ${bits}-bit)`, async () => {
        const b = make();
        const side = sideOf(b);
        const one = kept(
          await IvfTokenIndex.build(side, { centroids, residualBits: bits, iterations: 4 }, js, {
            nprobe,
            threads: 1,
          }),
        );
        const many = [2, 3, 4].map((threads) => one.withSearch({ nprobe, overFetch: 2, threads }));
        const single = one.withSearch({ nprobe, overFetch: 2, threads: 1 });
        const rows = b.queries.length / b.dim;
        let workerRows = 0;
        for (const memories of candidateSets(b.ids.length)) {
          for (const k of [10, 64]) {
            const options = { memories, clampK: true };
            const want = fingerprint(single, await single.search(b.queries, rows, k, options));
            expect(single.stats!.workerRows).toBe(0);
            // Each setting twice: the rows split differently from search to search.
            for (const index of [...many, ...many]) {
              const got = fingerprint(index, await index.search(b.queries, rows, k, options));
              expect(got).toEqual(want);
              workerRows += index.stats!.workerRows;
            }
          }
        }
        // The workers took part (every setting started its share of them).
        expect(one.scanWorkers).toBe(3);
        expect(workerRows).toBeGreaterThan(0);
      });
    }
  }

  it('gives the same results to concurrent searches sharing the workers, and one row to one thread', async () => {
    const b = realShapedBank(31);
    const side = sideOf(b);
    const index = kept(
      await IvfTokenIndex.build(side, { centroids: 32, residualBits: 4, iterations: 3 }, js, {
        nprobe: 6,
        threads: 2,
      }),
    );
    const single = index.withSearch({ nprobe: 6, threads: 1 });
    const sets = candidateSets(b.ids.length);
    const want = await Promise.all(
      sets.map((memories) => single.search(b.queries, 32, 16, { memories })),
    );
    const got = await Promise.all(
      sets.map((memories) => index.search(b.queries, 32, 16, { memories })),
    );
    for (let i = 0; i < sets.length; i++) {
      expect(Buffer.from(got[i]!.tokens.buffer)).toEqual(Buffer.from(want[i]!.tokens.buffer));
      expect(Buffer.from(got[i]!.values.buffer)).toEqual(Buffer.from(want[i]!.values.buffer));
    }
    await index.search(b.queries.subarray(0, b.dim), 1, 16, { memories: sets[0]! });
    expect(index.stats!.workerRows).toBe(0);
  });

  /**
   * A random bank's index built on one thread, written to a file and opened from it on two (codes
   * read by position), a fifth of the memories as candidates (more than 2 of 16 clusters hold, so
   * the set is probed, not searched whole) and the built index's hits for them.
   */
  async function openedOnTwo(seed: number) {
    const b = randomBank(seed);
    const side = sideOf(b);
    const built = kept(
      await IvfTokenIndex.build(side, { centroids: 16, residualBits: 4, iterations: 3 }, js, {
        nprobe: 2,
        threads: 1,
      }),
    );
    const file = join(tmpDir('bfe-ivf-threads-'), 'ivf.bin');
    writeFileSync(file, built.toBytes());
    const index = kept(IvfTokenIndex.open(file, side, js, { nprobe: 2, threads: 2 }));
    const memories = candidateSets(b.ids.length)[1]!;
    const search = () => index.search(b.queries, 32, 20, { memories });
    return { index, search, want: await built.search(b.queries, 32, 20, { memories }) };
  }

  it('opens a file into the shared memory, ends its workers on close and starts them again', async () => {
    const { index, search, want } = await openedOnTwo(41);
    const first = await search();
    expect(index.scanWorkers).toBe(1);
    await index.close();
    expect(index.scanWorkers).toBe(0);
    const again = await search();
    expect(index.scanWorkers).toBe(1);
    for (const hits of [first, again]) {
      expect(Array.from(hits.tokens)).toEqual(Array.from(want.tokens));
      expect(Array.from(hits.values)).toEqual(Array.from(want.values));
    }
  });

  it('closes after the searches in flight, which finish as if it had not been called', async () => {
    const { index, search, want } = await openedOnTwo(42);
    await search(); // the worker and the file open
    // Searches in flight on both threads, then close.
    const pending = [0, 1, 2].map(() => search());
    const closed = index.close();
    const order: string[] = [];
    const hits = await Promise.all(pending.map((p) => p.then((h) => (order.push('search'), h))));
    await closed.then(() => order.push('close'));
    expect(order).toEqual(['search', 'search', 'search', 'close']);
    expect(index.scanWorkers).toBe(0);
    for (const h of hits) {
      expect(Array.from(h.tokens)).toEqual(Array.from(want.tokens));
      expect(Array.from(h.values)).toEqual(Array.from(want.values));
    }
  });

  it('refuses a thread count outside 1..64', async () => {
    const b = randomBank(43);
    const index = kept(
      await IvfTokenIndex.build(sideOf(b), { centroids: 8, residualBits: 2, iterations: 2 }, js, {
        nprobe: 2,
        threads: 1,
      }),
    );
    for (const threads of [0, 1.5, 65]) {
      expect(() => index.withSearch({ nprobe: 2, threads })).toThrow(/threads/);
    }
  });
});
