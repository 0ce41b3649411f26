import { afterAll, describe, expect, it, vi } from 'vitest';
import { encodeTokens, trainCodec } from './codecs/codec.js';
import { IvfTokenIndex, type IvfSearchOptions } from './ivf-index.js';
import { OrtSimilarityKernel } from './ort-kernel.js';
import { clusteredTokens, rng, unitVectors } from './testing/random.js';
import { ExactTokenIndex, type TokenHits } from './token-index.js';
import { flatTokenStore } from './token-store.js';

// The clustered index with its centroid product in int8 (`centroidProduct: 'int8'`, onnxruntime's
// integer GEMM): the hits are still rescored exactly, only the probe order is approximate.
const DIM = 64;
const MEMORIES = 600;
const ort = new OrtSimilarityKernel({ threads: 1 });
const opened: IvfTokenIndex[] = [];
afterAll(async () => {
  await Promise.all(opened.map((i) => i.close()));
  await ort.dispose();
});

const random = rng(71);
const bank = clusteredTokens(random, MEMORIES, DIM, (r) => unitVectors(40, DIM, r));
const queries = unitVectors(16, DIM, random);
const all = Int32Array.from({ length: MEMORIES }, (_, m) => m);
const model = trainCodec('fp32', bank.vectors, bank.n, DIM);
const side = {
  model,
  codes: encodeTokens(model, bank.vectors, bank.n),
  tokenOffsets: bank.tokenOffsets,
};
const built = IvfTokenIndex.build(side, { centroids: 32, residualBits: 4, iterations: 6 }, ort, {
  nprobe: 1,
}).then((i) => (opened.push(i), i));

async function searched(options: IvfSearchOptions, k = 16): Promise<TokenHits> {
  const index = (await built).withSearch({ threads: 1, ...options });
  opened.push(index);
  return index.search(queries, 16, k, { memories: all });
}

function recall(got: TokenHits, want: TokenHits): number {
  let found = 0;
  for (let r = 0; r < want.rows; r++) {
    const truth = new Set(want.tokens.subarray(r * want.k, (r + 1) * want.k));
    for (const t of got.tokens.subarray(r * got.k, (r + 1) * got.k)) if (truth.has(t)) found++;
  }
  return found / (want.rows * want.k);
}

describe('IvfTokenIndex centroidProduct int8', () => {
  it('with every cluster probed and every token proposed equals the exact backend', async () => {
    const exact = new ExactTokenIndex(
      { tokens: flatTokenStore(bank.vectors, DIM), tokenOffsets: bank.tokenOffsets },
      ort,
    );
    const want = await exact.search(queries, 16, 16, { memories: all });
    const made = vi.spyOn(ort, 'constantScores');
    const got = await searched({ nprobe: 32, margin: bank.n, centroidProduct: 'int8' });
    // The centroids' int8 scorer was made (once: the index keeps it per kernel and arithmetic).
    expect(made.mock.calls.map((c) => c[3])).toEqual(['int8']);
    await searched({ nprobe: 2, centroidProduct: 'int8' });
    expect(made).toHaveBeenCalledTimes(1);
    made.mockRestore();
    expect(Array.from(got.tokens)).toEqual(Array.from(want.tokens));
    expect(Array.from(got.values)).toEqual(Array.from(want.values));
  });

  it('probes nearly as well as the float32 product at a few probes, and both beat one probe', async () => {
    const exact = await searched({ nprobe: 32, margin: bank.n });
    const fp32 = recall(await searched({ nprobe: 4 }), exact);
    const int8 = recall(await searched({ nprobe: 4, centroidProduct: 'int8' }), exact);
    const one = recall(await searched({ nprobe: 1, centroidProduct: 'int8' }), exact);
    expect(fp32).toBeGreaterThan(0.5);
    expect(Math.abs(int8 - fp32)).toBeLessThanOrEqual(0.03);
    expect(one).toBeLessThan(int8);
  });

  it('refuses an unknown centroid product', async () => {
    const index = await built;
    expect(() =>
      index.withSearch({ nprobe: 2, centroidProduct: 'int4' as unknown as 'int8' }),
    ).toThrow(/centroidProduct/);
  });
});
