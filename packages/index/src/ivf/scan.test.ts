import { describe, expect, it } from 'vitest';
import { rng } from '../testing/random.js';
import { probeOrder } from './scan.js';

/** Every cluster sorted by score descending, equal scores by the smaller id: the reference. */
function sortedOrder(scores: Float32Array, at: number, count: number): number[] {
  return Array.from({ length: count }, (_, i) => i).sort((a, b) => {
    const sa = scores[at + a]!;
    const sb = scores[at + b]!;
    return sa !== sb ? sb - sa : a - b;
  });
}

describe('probeOrder', () => {
  it('is the first n of the full order, ties by the smaller cluster id', () => {
    const random = rng(4);
    for (let trial = 0; trial < 30; trial++) {
      const count = 50 + trial * 7;
      // Few distinct scores in half the trials: many ties at the cut.
      const distinct = trial % 2 === 0 ? 6 : 1e6;
      const scores = Float32Array.from({ length: 2 * count }, () =>
        Math.floor(random() * distinct),
      );
      for (const at of [0, count]) {
        const want = sortedOrder(scores, at, count);
        for (const n of [1, 5, 16, count - 1, count, count + 3]) {
          expect(Array.from(probeOrder(scores, at, count, n))).toEqual(want.slice(0, n));
        }
      }
    }
  });
});
