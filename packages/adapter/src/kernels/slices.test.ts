import { afterAll, describe, expect, it } from 'vitest';
import { maxSim, queryLoss } from '../loss/loss.js';
import { lossSumOrt } from '../loss/loss-ort.js';
import { initAdapterParams } from '../model.js';
import { kernelGraph } from './kernel-graph.js';
import { OrtMaxSim } from './ort-maxsim.js';
import { memorySlices } from './slices.js';
import { relativeError } from '../testing/reference.js';
import { syntheticQueries } from '../testing/synthetic.js';

describe('memorySlices', () => {
  it('cuts the memories into consecutive slices of at most the budget, whole memories only', () => {
    expect(memorySlices([0, 2, 4, 7], 7, 1, 16)).toEqual([
      { from: 0, to: 2, token0: 0, token1: 4 },
      { from: 2, to: 3, token0: 4, token1: 7 },
    ]);
    // empty memories ride along; a memory beyond the budget is a slice of its own
    const offsets = [0, 0, 3, 3, 12, 13, 13, 15];
    const slices = memorySlices(offsets, 15, 2, 4 * 2 * 4);
    expect(slices).toEqual([
      { from: 0, to: 3, token0: 0, token1: 3 },
      { from: 3, to: 4, token0: 3, token1: 12 },
      { from: 4, to: 7, token0: 12, token1: 15 },
    ]);
    for (let s = 0; s < slices.length; s++) {
      expect(slices[s]!.from).toBe(s === 0 ? 0 : slices[s - 1]!.to);
      expect(slices[s]!.token0).toBe(offsets[slices[s]!.from]);
      expect(slices[s]!.token1).toBe(offsets[slices[s]!.to]);
    }
  });

  it('takes every token at once when the memories are not laid out in order', () => {
    const whole = (memories: number, tokens: number) => [
      { from: 0, to: memories, token0: 0, token1: tokens },
    ];
    expect(memorySlices([0, 5, 2, 7], 7, 1, 4)).toEqual(whole(3, 7)); // decreasing offsets
    expect(memorySlices([0, 5, 9], 7, 1, 4)).toEqual(whole(2, 7)); // beyond the tokens
    expect(memorySlices([0, 2, 4], 4, 1, 1 << 20)).toEqual(whole(2, 4)); // one slice anyway
  });
});

describe('OrtMaxSim cut into MatMul slices', () => {
  const dim = 24;
  const queries = syntheticQueries({
    dim,
    queries: 12,
    queryTokens: 5,
    memories: 30,
    memoryTokens: 7,
    queriesPerBank: 6,
    positives: 2,
    distortion: 1,
    noise: 2,
    seed: 9,
    prefix: 's-',
  }).map((q) => ({ ...q, rows: q.tokens.length / dim }));
  const kernels: OrtMaxSim[] = [];
  afterAll(async () => {
    for (const k of kernels) await k.release();
  });

  it('equals maxSim and the loss loop (gradient: within float64 rounding), however small the slices', async () => {
    const { memoryOffsets } = queries[0]!.candidates;
    // 1 token (every memory its own slice), 10 tokens (a few memories each), everything
    for (const tokens of [1, 10, 1 << 16]) {
      const bytes = tokens * dim * 4;
      const count = memorySlices(memoryOffsets, memoryOffsets[30]!, dim, bytes).length;
      expect(count).toBe(tokens === 1 ? 30 : tokens === 10 ? 24 : 1);
      const kernel = await OrtMaxSim.create(kernelGraph(dim), dim, undefined, 'wasm', bytes);
      kernels.push(kernel);
      for (const q of queries.slice(0, 3)) {
        const query = Float64Array.from(q.tokens);
        expect(await kernel.maxSim(query, q.rows, q.candidates)).toEqual(
          maxSim(query, q.rows, dim, q.candidates),
        );
      }
      const params = initAdapterParams(dim, 4, 3, 0.05);
      params.b.forEach((_, k) => (params.b[k] = 0.02 * Math.cos(k)));
      const reference = { a: new Float64Array(4 * dim), b: new Float64Array(dim * 4) };
      let expected = 0;
      for (const q of queries) expected += queryLoss(params, q, 0.07, reference);
      const grads = { a: new Float64Array(4 * dim), b: new Float64Array(dim * 4) };
      expect(await lossSumOrt(kernel, params, queries, 0.07, grads)).toBe(expected);
      // MaxSim's backward fused into the sliced maxima: another summation order
      expect(relativeError(grads.a, reference.a)).toBeLessThan(1e-13);
      expect(relativeError(grads.b, reference.b)).toBeLessThan(1e-13);
    }
  });
});
