import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { tmpDir } from '@bfe/core/testing';
import { encodeTokens, trainCodec } from './codecs/codec.js';
import type { CodecName } from './codecs/model.js';
import { IvfTokenIndex, type IvfSearchOptions } from './ivf-index.js';
import { JsSimilarityKernel } from './js-kernel.js';
import { ApproxTop } from './ivf/scan.js';
import { scanCluster } from './ivf/scan-cluster.js';
import { quantizeTables } from './ivf/tables.js';
import { WasmScanner } from './ivf/wasm-scan.js';
import { clusteredTokens, rng, unitVectors } from './testing/random.js';
import { ExactTokenIndex, type TokenHits } from './token-index.js';
import { flatTokenStore } from './token-store.js';

const DIM = 32;
const js = new JsSimilarityKernel();
/** Every index these tests search on several threads (the default), closed at the end. */
const opened: IvfTokenIndex[] = [];
const kept = (index: IvfTokenIndex): IvfTokenIndex => (opened.push(index), index);
afterAll(() => Promise.all(opened.map((i) => i.close())));

/**
 * `memories` memories of 3..7 tokens, each token a noisy copy of one of `centers` random unit
 * directions (so the bank has clusters to find), memory 1 a copy of memory 0 (equal scores).
 */
function clusteredBank(seed: number, memories = 120, centers = 12) {
  const random = rng(seed);
  const { vectors, tokenOffsets, n } = clusteredTokens(random, memories, DIM, (r) =>
    unitVectors(centers, DIM, r),
  );
  const ids = Array.from({ length: memories }, (_, m) => `conv-${m % 4}:D${m}`);
  return { vectors, tokenOffsets, ids, n, queries: unitVectors(6, DIM, random) };
}

function side(b: ReturnType<typeof clusteredBank>, codec: CodecName = 'fp32') {
  const model = trainCodec(codec, b.vectors, b.n, DIM);
  return {
    model,
    codes: encodeTokens(model, b.vectors, b.n),
    tokenOffsets: b.tokenOffsets,
    ids: b.ids,
  };
}

const exactOf = (b: ReturnType<typeof clusteredBank>) =>
  new ExactTokenIndex(
    { tokens: flatTokenStore(b.vectors, DIM), tokenOffsets: b.tokenOffsets, ids: b.ids },
    js,
  );

/** Fraction of the exact hits' tokens the approximate hits hold, per row. */
function recall(approx: TokenHits, exact: TokenHits): number {
  let found = 0;
  for (let r = 0; r < exact.rows; r++) {
    const want = new Set(exact.tokens.subarray(r * exact.k, (r + 1) * exact.k));
    for (const t of approx.tokens.subarray(r * approx.k, (r + 1) * approx.k)) {
      if (want.has(t)) found++;
    }
  }
  return found / (exact.rows * exact.k);
}

const range = (n: number): Int32Array => Int32Array.from({ length: n }, (_, i) => i);

async function build(b: ReturnType<typeof clusteredBank>, bits: 2 | 4, probe: IvfSearchOptions) {
  return kept(
    await IvfTokenIndex.build(
      side(b),
      { centroids: 16, residualBits: bits, iterations: 6 },
      js,
      probe,
    ),
  );
}

describe('IvfTokenIndex', () => {
  it('scores a token as q · centroid plus the looked-up residual buckets (hand-checked)', async () => {
    // Two tokens in one memory, dim 8 (2 bytes of 2-bit codes): one centroid, and the
    // approximate similarity of each token equals q · (centroid + its decoded residual).
    const dim = 8;
    const vectors = Float32Array.from([
      ...[1, 0, 0, 0, 0, 0, 0, 0],
      ...[0.6, 0.8, 0, 0, 0, 0, 0, 0],
    ]);
    const model = trainCodec('fp32', vectors, 2, dim);
    const s = { model, codes: encodeTokens(model, vectors, 2), tokenOffsets: Int32Array.of(0, 2) };
    const index = await IvfTokenIndex.build(s, { centroids: 1, residualBits: 2 }, js, {
      nprobe: 1,
      margin: 1,
    });
    const { centroids, weights, codes } = index.data;
    // The one centroid is the normalised mean of the two tokens, (0.89443, 0.44721), rounded to
    // float16: 1832 steps of 2^-11 in [0.5, 1) and of 2^-12 in [0.25, 0.5).
    expect(centroids[0]).toBe(1832 / 2048);
    expect(centroids[1]).toBe(1832 / 4096);
    // Blocked layout: byte j of place t at ((t >> 4) · 2 + j) · 16 + (t & 15).
    const decoded = (t: number, d: number): number =>
      weights[d * 4 + ((codes[(d >> 2) * 16 + t]! >> (2 * (d & 3))) & 3)]!;
    const q = Float32Array.of(0.5, 0.5, 0, 0, 0, 0, 0, 0);
    const hits = await index.search(q, 1, 2, { memories: Int32Array.of(0) });
    // Rescored exactly: q · x.
    expect(Array.from(hits.values)).toEqual([0.7, 0.5].map((v) => expect.closeTo(v, 6)));
    expect(Array.from(hits.tokens)).toEqual([1, 0]);
    // The fast scan (uint8 tables, one lookup per code nibble) gives q · (centroid + decoded
    // residual) up to the tables' rounding: half a step per table, 4 tables.
    const scanner = new WasmScanner(index.data);
    const row = quantizeTables(index.data, q, 0, scanner);
    const top = new ApproxTop(2);
    const base = q[0]! * centroids[0]! + q[1]! * centroids[1]!;
    expect(scanCluster(scanner, row, base, 0, 2, top, undefined, new Int32Array(2))).toBe(2);
    expect(top.count).toBe(2);
    for (let i = 0; i < 2; i++) {
      const p = top.places[i]!;
      let want = 0;
      for (let d = 0; d < dim; d++) want += q[d]! * (centroids[d]! + decoded(p, d));
      expect(Math.abs(top.scores[i]! - want)).toBeLessThanOrEqual(2 / row.scale + 1e-12);
    }
    // Two tokens, 2 bits: dimension 0's residuals 1 − c0 > 0.6 − c0 fall in different buckets.
    expect(decoded(0, 0)).not.toBe(decoded(1, 0));
  });

  for (const bits of [2, 4] as const) {
    it(`with every cluster probed and every token proposed equals the exact backend (${bits}-bit)`, async () => {
      const b = clusteredBank(3);
      const index = await build(b, bits, { nprobe: 16, margin: b.n });
      const exact = exactOf(b);
      for (const memories of [range(120), Int32Array.of(0, 1, 5, 9, 40, 77)]) {
        const want = await exact.search(b.queries, 6, 10, { memories });
        const got = await index.search(b.queries, 6, 10, { memories });
        expect(Array.from(got.tokens)).toEqual(Array.from(want.tokens));
        expect(Array.from(got.values)).toEqual(Array.from(want.values));
        expect(Array.from(got.slots)).toEqual(Array.from(want.slots));
      }
    });
  }

  it('with all clusters probed, recall grows with the proposals; fewer probes lose some', async () => {
    const b = clusteredBank(5, 400);
    const exact = await exactOf(b).search(b.queries, 6, 32, { memories: range(400) });
    const full = await build(b, 4, { nprobe: 16 });
    const few = await build(b, 4, { nprobe: 1 });
    const rFull = recall(await full.search(b.queries, 6, 32, { memories: range(400) }), exact);
    const rFew = recall(await few.search(b.queries, 6, 32, { memories: range(400) }), exact);
    const wide = await build(b, 4, { nprobe: 16, overFetch: 2 });
    const rWide = recall(await wide.search(b.queries, 6, 32, { memories: range(400) }), exact);
    expect(rFull).toBeGreaterThanOrEqual(0.9);
    expect(rWide).toBeGreaterThan(rFull);
    expect(rWide).toBeGreaterThanOrEqual(0.97);
    expect(rFew).toBeLessThan(rFull);
    expect(rFew).toBeGreaterThan(0.2);
    // 2-bit codes rank more coarsely than 4-bit ones.
    const two = await build(b, 2, { nprobe: 16 });
    const rTwo = recall(await two.search(b.queries, 6, 32, { memories: range(400) }), exact);
    expect(rTwo).toBeLessThan(rFull);
    expect(rTwo).toBeGreaterThan(0.6);
  });

  it('searches a sparse candidate set past nprobe until it has k + margin proposals', async () => {
    const b = clusteredBank(9, 200);
    const index = await build(b, 2, { nprobe: 1, margin: 400 });
    const memories = Int32Array.from({ length: 29 }, (_, i) => 7 * i); // more than one cluster holds
    const hits = await index.search(b.queries, 6, 8, { memories });
    const want = await exactOf(b).search(b.queries, 6, 8, { memories });
    // Candidates ≤ k + margin tokens: every candidate is proposed, so the hits are exact.
    expect(Array.from(hits.tokens)).toEqual(Array.from(want.tokens));
    expect(index.stats!.wholeSet).toBe(false);
    expect(index.stats!.clustersProbed).toBeGreaterThan(6);
    for (const m of hits.memories) expect(Array.from(memories)).toContain(m);
  });

  it('searches a candidate set no larger than nprobe clusters hold whole, exactly', async () => {
    const b = clusteredBank(11, 400);
    const index = await build(b, 4, { nprobe: 2 }); // 16 clusters: nprobe holds ~1/8 of the bank
    const exact = exactOf(b);
    const small = Int32Array.of(2, 30, 31, 100, 250, 399);
    const got = await index.search(b.queries, 6, 12, { memories: small });
    expect(index.stats!.wholeSet).toBe(true);
    expect(index.stats!.clustersProbed).toBe(0);
    const want = await exact.search(b.queries, 6, 12, { memories: small });
    expect(Array.from(got.tokens)).toEqual(Array.from(want.tokens));
    expect(Array.from(got.values)).toEqual(Array.from(want.values));
    const large = range(200); // half the bank: probed
    await index.search(b.queries, 6, 12, { memories: large });
    expect(index.stats!.wholeSet).toBe(false);
    expect(index.stats!.clustersProbed).toBeGreaterThan(0);
  });

  it('builds the same bytes twice, another seed other bytes, and reads its bytes back', async () => {
    const b = clusteredBank(11);
    const s = side(b);
    const params = { centroids: 16, residualBits: 2 as const, iterations: 4 };
    const a = kept(await IvfTokenIndex.build(s, params, js, { nprobe: 4 }));
    const again = await IvfTokenIndex.build(s, params, js, { nprobe: 4 });
    const other = await IvfTokenIndex.build(s, { ...params, seed: 7 }, js, { nprobe: 4 });
    expect(Buffer.from(again.toBytes()).equals(Buffer.from(a.toBytes()))).toBe(true);
    expect(Buffer.from(other.toBytes()).equals(Buffer.from(a.toBytes()))).toBe(false);
    const read = kept(IvfTokenIndex.fromBytes(a.toBytes(), s, js, { nprobe: 4 }));
    // And from a file by position: the same bytes back, the same hits.
    const file = join(tmpDir('bfe-ivf-'), 'ivf.bin');
    writeFileSync(file, a.toBytes());
    const fromFile = kept(IvfTokenIndex.open(file, s, js, { nprobe: 4 }));
    expect(Buffer.from(fromFile.toBytes()).equals(readFileSync(file))).toBe(true);
    const opts = { memories: range(120) };
    const x = await a.search(b.queries, 6, 16, opts);
    for (const other of [read, fromFile, a.withSearch({ nprobe: 4 })]) {
      const y = await other.search(b.queries, 6, 16, opts);
      expect(Array.from(y.tokens)).toEqual(Array.from(x.tokens));
      expect(Array.from(y.values)).toEqual(Array.from(x.values));
    }
    writeFileSync(file, a.toBytes().subarray(0, 200));
    expect(() => IvfTokenIndex.open(file, s, js, { nprobe: 4 })).toThrow(/truncated/);
  });

  it('rescores from a compressed codec: the values are the decoded codes’ similarities', async () => {
    const b = clusteredBank(13);
    const s = side(b, 'sq8');
    const index = kept(
      await IvfTokenIndex.build(s, { centroids: 8, residualBits: 4 }, js, {
        nprobe: 8,
        margin: b.n,
      }),
    );
    const hits = await index.search(b.queries, 6, 5, { memories: range(120), bestPerMemory: true });
    expect(index.codec).toBe('sq8');
    for (let r = 0; r < 6; r++) {
      const row = Array.from(hits.values.subarray(r * 5, r * 5 + 5));
      expect(row).toEqual([...row].sort((p, q) => q - p));
      // MaxSim's best token per memory is at least every hit of that memory.
      for (let i = 0; i < 5; i++) {
        const best = hits.best![r * 120 + hits.slots[r * 5 + i]!]!;
        expect(best).toBeGreaterThanOrEqual(Math.fround(hits.values[r * 5 + i]!) - 1e-6);
      }
    }
  });
});
