import { afterAll, describe, expect, it } from 'vitest';
import { codecTokenStore, type CodecSide } from '../codec-index.js';
import { encodeTokens, trainCodec } from '../codecs/codec.js';
import { tokensOf } from '../hnsw/layout.js';
import { IvfTokenIndex, type IvfSearchOptions } from '../ivf-index.js';
import { JsSimilarityKernel } from '../js-kernel.js';
import { clusteredTokens, rng, unitVectors } from '../testing/random.js';
import { ExactTokenIndex, type TokenHits } from '../token-index.js';
import { flatTokenStore } from '../token-store.js';
import { layoutIvf } from './assign.js';
import type { IvfData } from './train.js';

const DIM = 32;
const js = new JsSimilarityKernel();
const opened: IvfTokenIndex[] = [];
const kept = (index: IvfTokenIndex): IvfTokenIndex => (opened.push(index), index);
afterAll(() => Promise.all(opened.map((i) => i.close())));

interface Bank {
  readonly vectors: Float32Array;
  readonly tokenOffsets: Int32Array;
  readonly ids: string[];
  readonly n: number;
}

/**
 * `memories` memories of 3..7 tokens, each token a noisy copy of one of `hubs` (so the bank has
 * clusters), memory 1 a copy of memory 0 (equal scores).
 */
function bank(seed: number, memories: number, hubs: Float32Array, prefix = 'm'): Bank {
  const { vectors, tokenOffsets, n } = clusteredTokens(rng(seed), memories, DIM, () => hubs);
  const ids = Array.from({ length: memories }, (_, m) => `${prefix}-${m % 5}:${m}`);
  return { vectors, tokenOffsets, ids, n };
}

/** `a` then `b`'s memories as one bank. */
function concat(a: Bank, b: Bank): Bank {
  const vectors = new Float32Array(a.vectors.length + b.vectors.length);
  vectors.set(a.vectors);
  vectors.set(b.vectors, a.vectors.length);
  const tokenOffsets = new Int32Array(a.tokenOffsets.length + b.tokenOffsets.length - 1);
  tokenOffsets.set(a.tokenOffsets);
  for (let m = 1; m < b.tokenOffsets.length; m++) {
    tokenOffsets[a.tokenOffsets.length - 1 + m] = a.n + b.tokenOffsets[m]!;
  }
  return { vectors, tokenOffsets, ids: [...a.ids, ...b.ids], n: a.n + b.n };
}

/** The fp32 side of `b`'s first `memories` memories (the codes a view of the whole bank's). */
function sideOf(b: Bank, memories = b.tokenOffsets.length - 1): CodecSide {
  const model = trainCodec('fp32', b.vectors, b.n, DIM);
  const codes = encodeTokens(model, b.vectors, b.n);
  const tokens = b.tokenOffsets[memories]!;
  return {
    model,
    codes: codes.subarray(0, tokens * model.bytesPerToken),
    tokenOffsets: b.tokenOffsets.subarray(0, memories + 1),
    ids: b.ids.slice(0, memories),
  };
}

const range = (n: number): Int32Array => Int32Array.from({ length: n }, (_, i) => i);

/** An index over `side` laid out from scratch with `book`'s codebook (over `tokens` only). */
async function rebuilt(
  side: CodecSide,
  book: IvfData,
  options: IvfSearchOptions,
  live?: { tokens: Int32Array; deleted: Int32Array },
): Promise<IvfTokenIndex> {
  let store = codecTokenStore(side.model, side.codes);
  if (live !== undefined) {
    const all = store.read(0, store.size).slice();
    const rows = new Float32Array(live.tokens.length * DIM);
    live.tokens.forEach((t, i) => rows.set(all.subarray(t * DIM, (t + 1) * DIM), i * DIM));
    store = flatTokenStore(rows, DIM);
  }
  const laid = await layoutIvf(store, js, book, live === undefined ? {} : { tokens: live.tokens });
  const deleted = live?.deleted ?? new Int32Array(0);
  return kept(new IvfTokenIndex(side, { ...laid, deleted, params: undefined }, js, options));
}

function expectSameHits(got: TokenHits, want: TokenHits): void {
  expect(Array.from(got.tokens)).toEqual(Array.from(want.tokens));
  expect(Array.from(got.values)).toEqual(Array.from(want.values));
  expect(Array.from(got.memories)).toEqual(Array.from(want.memories));
  expect(Array.from(got.slots)).toEqual(Array.from(want.slots));
}

const HUBS_A = unitVectors(12, DIM, rng(100));
const HUBS_B = unitVectors(12, DIM, rng(200));

describe('IvfTokenIndex appends', () => {
  for (const bits of [2, 4] as const) {
    it(`built on half the bank, appended the rest, finds what a layout of all tokens finds (${bits}-bit)`, async () => {
      const full = bank(1, 300, HUBS_A);
      const all = sideOf(full);
      const params = { centroids: 16, residualBits: bits, iterations: 5 };
      const index = kept(await IvfTokenIndex.build(sideOf(full, 150), params, js, { nprobe: 3 }));
      // In three appends of different sizes (one memory: a partly filled tail block grows).
      expect(await index.append(sideOf(full, 151))).toEqual({
        memories: 1,
        tokens: full.tokenOffsets[151]! - full.tokenOffsets[150]!,
      });
      await index.append(sideOf(full, 230));
      await index.append(all);
      const appended = full.n - full.tokenOffsets[150]!;
      expect(index.tailTokens).toBe(appended);
      expect(index.size).toBe(full.n);
      const ref = await rebuilt(all, index.data, { nprobe: 3 });
      const queries = unitVectors(8, DIM, rng(7));
      let fromTails = 0;
      for (const nprobe of [1, 3]) {
        for (const memories of [range(300), Int32Array.from({ length: 150 }, (_, i) => 2 * i)]) {
          for (const threads of [1, 2]) {
            const got = await index
              .withSearch({ nprobe, threads })
              .search(queries, 8, 10, { memories });
            const want = await ref
              .withSearch({ nprobe, threads })
              .search(queries, 8, 10, { memories });
            expectSameHits(got, want);
            for (const t of got.tokens) if (t >= full.tokenOffsets[150]!) fromTails++;
          }
        }
      }
      expect(fromTails).toBeGreaterThan(0); // appended tokens are found
      // Compacted: the layout a build with the same codebook gives, byte for byte.
      expect(await index.compact({ recluster: false })).toEqual({ reclustered: false });
      expect(index.tailTokens).toBe(0);
      for (const key of ['centroids', 'clusterOffsets', 'tokens', 'codes'] as const) {
        expect(Buffer.from(index.data[key]).equals(Buffer.from(ref.data[key]))).toBe(true);
      }
      const memories = range(300);
      expectSameHits(
        await index.search(queries, 8, 10, { memories }),
        await ref.search(queries, 8, 10, { memories }),
      );
    });
  }

  it('refuses a side that changes the memories it already holds', async () => {
    const full = bank(2, 60, HUBS_A);
    const index = kept(
      await IvfTokenIndex.build(sideOf(full, 30), { centroids: 4, residualBits: 4 }, js, {
        nprobe: 2,
      }),
    );
    const other = bank(3, 60, HUBS_A);
    await expect(index.append({ ...sideOf(other), model: sideOf(full).model })).rejects.toThrow(
      /token offset changed|id changed/,
    );
    const renamed = sideOf(full);
    await expect(
      index.append({ ...renamed, ids: renamed.ids!.map((i) => `x${i}`) }),
    ).rejects.toThrow(/id changed/);
    expect(index.tailTokens).toBe(0);
  });
});

describe('IvfTokenIndex tombstones', () => {
  it('never returns a deleted memory, returns k live hits, and equals the exact backend on the live tokens', async () => {
    const b = bank(4, 300, HUBS_A);
    const side = sideOf(b);
    const index = kept(
      await IvfTokenIndex.build(side, { centroids: 16, residualBits: 4, iterations: 5 }, js, {
        nprobe: 2,
      }),
    );
    const deleted = Int32Array.from({ length: 100 }, (_, i) => 3 * i); // memory 0, not its copy 1
    expect(await index.delete(deleted)).toBe(100);
    expect(await index.delete([0, 3])).toBe(0);
    const live = Int32Array.from({ length: 200 }, (_, i) => 3 * Math.floor(i / 2) + 1 + (i % 2));
    const exact = new ExactTokenIndex(
      { tokens: flatTokenStore(b.vectors, DIM), tokenOffsets: b.tokenOffsets, ids: b.ids },
      js,
    );
    const queries = unitVectors(8, DIM, rng(9));
    const all = range(300);
    // Every cluster probed and every live token proposed: the exact top-k of the live tokens.
    const everything = index.withSearch({ nprobe: 16, margin: b.n });
    const got = await everything.search(queries, 8, 10, { memories: all, bestPerMemory: true });
    const want = await exact.search(queries, 8, 10, { memories: live, bestPerMemory: true });
    expect(Array.from(got.tokens)).toEqual(Array.from(want.tokens));
    expect(Array.from(got.values)).toEqual(Array.from(want.values));
    expect(Array.from(got.memories)).toEqual(Array.from(want.memories));
    // Slots are positions in the caller's candidate set; a deleted memory's best is −Infinity.
    for (let i = 0; i < got.slots.length; i++) expect(all[got.slots[i]!]).toBe(got.memories[i]);
    for (let r = 0; r < 8; r++) {
      for (let m = 0; m < 300; m++) {
        const s = live.indexOf(m);
        const best = got.best![r * 300 + m]!;
        expect(best).toBe(s < 0 ? -Infinity : want.best![r * 200 + s]!);
      }
    }
    // Few clusters probed: still k hits a row, none deleted, the proposals those of a layout
    // that never held the deleted tokens (the same codebook).
    const liveTokens = tokensOf(b.tokenOffsets, live);
    const ref = await rebuilt(side, index.data, { nprobe: 2 }, { tokens: liveTokens, deleted });
    for (const memories of [all, range(200), Int32Array.of(0, 1, 2, 3, 4, 5, 6, 7, 8, 9)]) {
      const hits = await index.search(queries, 8, 10, { memories });
      expectSameHits(hits, await ref.search(queries, 8, 10, { memories }));
      expect(hits.tokens.length).toBe(80);
      for (const m of hits.memories) expect(m % 3).not.toBe(0);
    }
    // Compaction drops them from the layout; the file keeps the tombstones.
    await index.compact();
    expect(index.data.tokens.length).toBe(liveTokens.length);
    expect(Buffer.from(index.data.codes).equals(Buffer.from(ref.data.codes))).toBe(true);
    const again = kept(IvfTokenIndex.fromBytes(index.toBytes(), side, js, { nprobe: 2 }));
    for (const memories of [all, Int32Array.of(0, 1, 2, 3, 4, 5, 6, 7, 8, 9)]) {
      const hits = await again.search(queries, 8, 10, { memories });
      expectSameHits(hits, await ref.search(queries, 8, 10, { memories }));
    }
    expect(() =>
      IvfTokenIndex.fromBytes(index.toBytes(), sideOf(b, 200), js, { nprobe: 2 }),
    ).toThrow(/IVF/);
  });

  it('refuses to write an index with deletions not laid out', async () => {
    const b = bank(5, 60, HUBS_A);
    const index = kept(
      await IvfTokenIndex.build(sideOf(b), { centroids: 4, residualBits: 2 }, js, { nprobe: 2 }),
    );
    await index.delete([5]);
    expect(() => index.toBytes()).toThrow(/compact/);
    await expect(index.delete([60])).rejects.toThrow(/not in 0..59/);
  });
});

describe('IvfTokenIndex drift', () => {
  const params = { centroids: 16, residualBits: 4 as const, iterations: 6 };

  it('stays near 1 for tokens of the training distribution; no re-clustering', async () => {
    const grown = concat(bank(6, 200, HUBS_A), bank(7, 200, HUBS_A, 'n'));
    const index = kept(await IvfTokenIndex.build(sideOf(grown, 200), params, js, { nprobe: 2 }));
    expect(index.drift).toBe(1);
    await index.append(sideOf(grown));
    const drift = index.drift;
    expect(drift).toBeGreaterThan(0.85);
    expect(drift).toBeLessThan(1.15);
    expect(await index.compact()).toEqual({ reclustered: false });
    // Kept through a layout-only compaction (the centroids are the trained ones still).
    expect(index.drift).toBe(drift);
    expect(index.residuals.appendedTokens).toBe(grown.n - grown.tokenOffsets[200]!);
  });

  it('rises past the threshold for a shifted distribution; re-clustering brings it back', async () => {
    const grown = concat(bank(8, 200, HUBS_A), bank(9, 200, HUBS_B, 'n'));
    const index = kept(await IvfTokenIndex.build(sideOf(grown, 200), params, js, { nprobe: 2 }));
    await index.append(sideOf(grown));
    const shifted = index.drift;
    expect(shifted).toBeGreaterThan(1.25);
    expect(await index.compact({ driftThreshold: shifted + 0.01 })).toEqual({ reclustered: false });
    expect(index.drift).toBe(shifted);
    expect(await index.compact()).toEqual({ reclustered: true });
    expect(index.drift).toBe(1);
    // The same seeded k-means as a build over all the tokens: the same bytes.
    const built = kept(await IvfTokenIndex.build(sideOf(grown), params, js, { nprobe: 2 }));
    expect(Buffer.from(index.toBytes()).equals(Buffer.from(built.toBytes()))).toBe(true);
    // More tokens of the new distribution now fit the centroids.
    const more = concat(grown, bank(10, 100, HUBS_B, 'o'));
    await index.append(sideOf(more));
    expect(index.drift).toBeLessThan(1.15);
    expect(index.drift).toBeLessThan(shifted / 1.2);
  });
});
