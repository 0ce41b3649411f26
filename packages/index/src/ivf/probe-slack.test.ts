import { afterAll, describe, expect, it } from 'vitest';
import { encodeTokens, trainCodec } from '../codecs/codec.js';
import { IvfTokenIndex, type IvfSearchOptions } from '../ivf-index.js';
import { JsSimilarityKernel } from '../js-kernel.js';
import { clusteredTokens, rng, unitVectors } from '../testing/random.js';
import type { TokenHits } from '../token-index.js';
import { probeLimits } from './propose.js';

const DIM = 32;
const js = new JsSimilarityKernel();
const opened: IvfTokenIndex[] = [];
afterAll(() => Promise.all(opened.map((i) => i.close())));

/** A bank whose tokens are noisy copies of `hubs` (unit rows), `memories` memories of 3..7. */
function bankOf(hubs: Float32Array, memories: number, seed: number) {
  const { vectors, tokenOffsets, n } = clusteredTokens(rng(seed), memories, DIM, () => hubs);
  const model = trainCodec('fp32', vectors, n, DIM);
  const side = { model, codes: encodeTokens(model, vectors, n), tokenOffsets };
  return { side, memories: Int32Array.from({ length: memories }, (_, m) => m) };
}

async function built(
  b: ReturnType<typeof bankOf>,
  centroids: number,
  probe: IvfSearchOptions,
): Promise<IvfTokenIndex> {
  const index = await IvfTokenIndex.build(b.side, { centroids, residualBits: 4 }, js, probe);
  opened.push(index);
  return index;
}

/** Basis vector `i` of `DIM` dimensions, as `n` rows. */
function axes(n: number): Float32Array {
  const out = new Float32Array(n * DIM);
  for (let i = 0; i < n; i++) out[i * DIM + i] = 1;
  return out;
}

const sameHits = (a: TokenHits, b: TokenHits): boolean =>
  a.tokens.every((t, i) => t === b.tokens[i]) && a.values.every((v, i) => v === b.values[i]);

describe('adaptive probing (probeSlack)', () => {
  it('stops at the row’s own cluster when the others lie far below its floor, and probes on to maxProbe when the slack covers them', async () => {
    // Three orthogonal hubs, three centroids: a query along one hub scores about 0.9 with its
    // own cluster's tokens and about 0 with the other two centroids.
    const b = bankOf(axes(3), 150, 3);
    const index = await built(b, 3, { nprobe: 1, threads: 1 });
    const sizes = index.data.clusterOffsets;
    for (let c = 0; c < 3; c++) expect(sizes[c + 1]! - sizes[c]!).toBeGreaterThan(100);
    const q = axes(3);
    const k = 4; // 20 proposals a row: the row's own cluster fills them
    const search = async (o: Partial<IvfSearchOptions>) => {
      const probe = index.withSearch({ nprobe: 1, threads: 1, ...o });
      const hits = await probe.search(q, 3, k, { memories: b.memories });
      return { hits, probed: probe.stats!.clustersProbed };
    };
    expect((await search({})).probed).toBe(3);
    expect((await search({ probeSlack: 0.2, maxProbe: 3 })).probed).toBe(3);
    const wide = await search({ probeSlack: 2, maxProbe: 3 });
    expect(wide.probed).toBe(9);
    expect((await search({ probeSlack: 2, maxProbe: 2 })).probed).toBe(6);
    // Probing every cluster is probing them all with nprobe.
    expect(sameHits(wide.hits, (await search({ nprobe: 3 })).hits)).toBe(true);
  });

  it('probes a prefix of the same order that grows with the slack, the same on one thread or two', async () => {
    const random = rng(11);
    const b = bankOf(unitVectors(12, DIM, random), 400, 12);
    const index = await built(b, 24, { nprobe: 2, threads: 1 });
    const q = unitVectors(8, DIM, random);
    for (let r = 0; r < 8; r++) {
      let last = 0;
      for (const slack of [0, 0.05, 0.1, 0.2, 0.4, 3]) {
        const o = { nprobe: 2, probeSlack: slack, maxProbe: 12 };
        const one = index.withSearch({ ...o, threads: 1 });
        const hits = await one.search(q.subarray(r * DIM, (r + 1) * DIM), 1, 8, {
          memories: b.memories,
        });
        const probed = one.stats!.clustersProbed;
        expect(probed).toBeGreaterThanOrEqual(Math.max(2, last));
        expect(probed).toBeLessThanOrEqual(12);
        if (slack === 3) expect(probed).toBe(12);
        last = probed;
        const two = index.withSearch({ ...o, threads: 2 });
        const again = await two.search(q.subarray(r * DIM, (r + 1) * DIM), 1, 8, {
          memories: b.memories,
        });
        expect(sameHits(hits, again)).toBe(true);
      }
    }
  });

  it('refuses a negative or non-finite slack, a maxProbe below nprobe and a maxProbe alone', () => {
    expect(probeLimits({ nprobe: 4 })).toEqual({ nprobe: 4, probeSlack: NaN, maxProbe: 4 });
    expect(probeLimits({ nprobe: 4, probeSlack: 0.1 })).toEqual({
      nprobe: 4,
      probeSlack: 0.1,
      maxProbe: 64,
    });
    expect(probeLimits({ nprobe: 80, probeSlack: 0 }).maxProbe).toBe(80);
    expect(() => probeLimits({ nprobe: 4, probeSlack: -0.1 })).toThrow(/probeSlack/);
    expect(() => probeLimits({ nprobe: 4, probeSlack: Infinity })).toThrow(/probeSlack/);
    expect(() => probeLimits({ nprobe: 4, probeSlack: 0.1, maxProbe: 3 })).toThrow(/maxProbe/);
    expect(() => probeLimits({ nprobe: 4, maxProbe: 8 })).toThrow(/maxProbe/);
  });
});
