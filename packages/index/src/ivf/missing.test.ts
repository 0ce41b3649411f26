import { afterAll, describe, expect, it } from 'vitest';
import type { CodecSide } from '../codec-index.js';
import { encodeTokens, trainCodec } from '../codecs/codec.js';
import { IvfTokenIndex } from '../ivf-index.js';
import { JsSimilarityKernel } from '../js-kernel.js';
import { clusteredTokens, rng, unitVectors } from '../testing/random.js';
import { missingEstimates, warpTPrime } from './missing.js';

const DIM = 16;
const js = new JsSimilarityKernel();
const opened: IvfTokenIndex[] = [];
const kept = (index: IvfTokenIndex): IvfTokenIndex => (opened.push(index), index);
afterAll(() => Promise.all(opened.map((i) => i.close())));

describe("WARP's missing-similarity estimate", () => {
  it('t′ is ⌊√(8·tokens) / 1000⌋ · 1000, at least 1000', () => {
    expect(warpTPrime(0)).toBe(1000);
    expect(warpTPrime(20_000)).toBe(1000); // √160,000 = 400
    expect(warpTPrime(125_000)).toBe(1000); // √1e6 = 1000 → 1000
    expect(warpTPrime(1_250_000)).toBe(3000); // √1e7 ≈ 3162
    expect(warpTPrime(2_000_000)).toBe(4000); // √1.6e7 = 4000
  });

  it('takes centroids in probe order until their sizes reach t′, at most `bound` of them', () => {
    // Probe order: cluster 1 (0.9), 3 (0.9: a tie, the larger id after), 2 (0.7), 0 (0.5).
    const scores = Float32Array.from([0.5, 0.9, 0.7, 0.9, 0.5, 0.9, 0.7, 0.9]);
    const sizes = [300, 400, 500, 600];
    // 400 < 1000, 400 + 600 = 1000: cluster 3 is the last taken.
    expect(Array.from(missingEstimates(scores, 1, sizes, 1000))).toEqual([Math.fround(0.9)]);
    // 400 + 600 + 500 = 1500 ≥ 1001: cluster 2.
    expect(Array.from(missingEstimates(scores, 2, sizes, 1001))).toEqual([
      Math.fround(0.7),
      Math.fround(0.7),
    ]);
    // Never reached: the last of the `bound` best (two: cluster 3), or of all of them.
    expect(Array.from(missingEstimates(scores, 1, sizes, 1e9, 2))).toEqual([Math.fround(0.9)]);
    expect(Array.from(missingEstimates(scores, 1, sizes, 1e9))).toEqual([Math.fround(0.5)]);
    expect(Array.from(missingEstimates(scores, 1, [0, 0, 0, 0], 1000, 3))).toEqual([
      Math.fround(0.7),
    ]);
  });

  it("is the clustered index's floor with floor 'warp': the sizes of the candidates' tokens only, tails included", async () => {
    const hubs = unitVectors(6, DIM, rng(4));
    const { vectors, tokenOffsets, n } = clusteredTokens(rng(5), 400, DIM, () => hubs);
    const model = trainCodec('fp32', vectors, n, DIM);
    const codes = encodeTokens(model, vectors, n);
    const ids = Array.from({ length: 400 }, (_, m) => `m:${m}`);
    const half = 200;
    const sideOf = (memories: number): CodecSide => ({
      model,
      codes: codes.subarray(0, tokenOffsets[memories]! * DIM * 4),
      tokenOffsets: tokenOffsets.subarray(0, memories + 1),
      ids: ids.slice(0, memories),
    });
    const params = { centroids: 12, residualBits: 4 as const, iterations: 4 };
    const tail = kept(await IvfTokenIndex.build(sideOf(half), params, js, { nprobe: 2 }));
    await tail.append(sideOf(400)); // half of the tokens in tail lists
    const warp = tail.withSearch({ nprobe: 2, floor: 'warp' });
    const q = unitVectors(5, DIM, rng(6));
    const { centroids, clusterOffsets, tokens } = tail.data;
    const c = clusterOffsets.length - 1;
    // Each token's cluster: the base layout's, else its nearest centroid (as an append assigns).
    const clusterOf = new Int32Array(n).fill(-1);
    for (let j = 0; j < c; j++) {
      for (let p = clusterOffsets[j]!; p < clusterOffsets[j + 1]!; p++) clusterOf[tokens[p]!] = j;
    }
    const dot = (a: Float32Array, i: number, b: Float32Array, j: number): number => {
      let s = 0;
      for (let d = 0; d < DIM; d++) s += a[i * DIM + d]! * b[j * DIM + d]!;
      return Math.fround(s);
    };
    for (let t = 0; t < n; t++) {
      if (clusterOf[t] !== -1) continue;
      let best = 0;
      for (let j = 1; j < c; j++)
        if (dot(vectors, t, centroids, j) > dot(vectors, t, centroids, best)) best = j;
      clusterOf[t] = best;
    }
    for (const memories of [
      Int32Array.from({ length: 400 }, (_, m) => m),
      Int32Array.from({ length: 150 }, (_, i) => 2 * i + 7),
      Int32Array.from([3, 50, 99, 250, 333]), // few tokens: searched whole, nothing probed
    ]) {
      const got = await warp.search(q, 5, 8, { memories });
      const plain = await tail.search(q, 5, 8, { memories });
      expect(Array.from(got.tokens)).toEqual(Array.from(plain.tokens));
      expect(plain.floor).toBeUndefined();
      // The reference, written out: candidate tokens per cluster, then the rule by a full sort.
      const sizes = new Array<number>(c).fill(0);
      let count = 0;
      for (const m of memories) {
        for (let t = tokenOffsets[m]!; t < tokenOffsets[m + 1]!; t++, count++)
          sizes[clusterOf[t]!]!++;
      }
      const tPrime = Math.max(1000, Math.floor(Math.sqrt(8 * count) / 1000) * 1000);
      for (let r = 0; r < 5; r++) {
        const order = Array.from({ length: c }, (_, j) => j).sort(
          (a, b) => dot(q, r, centroids, b) - dot(q, r, centroids, a) || a - b,
        );
        let sum = 0;
        let last = order[0]!;
        for (const j of order) {
          last = j;
          sum += sizes[j]!;
          if (sum >= tPrime) break;
        }
        expect(got.floor![r]).toBeCloseTo(dot(q, r, centroids, last), 6);
      }
    }
  });
});
