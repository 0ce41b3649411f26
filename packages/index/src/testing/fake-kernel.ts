import type { ChunkTopK } from '../kernel.js';

/** A one-row chunk top-k of plain scores, sorted as a kernel sorts them (test helper). */
export function testTopK(scores: readonly number[], k: number): ChunkTopK {
  const order = scores
    .map((s, i) => ({ s, i }))
    .sort((a, b) => b.s - a.s || a.i - b.i)
    .slice(0, k);
  return {
    kOut: order.length,
    values: Float32Array.from(order, (e) => e.s),
    indices: Int32Array.from(order, (e) => e.i),
    scores: undefined,
  };
}
