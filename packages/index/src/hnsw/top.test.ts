import { describe, expect, it } from 'vitest';
import { rng } from '../testing/random.js';
import { positionOf, topInto } from './top.js';

describe('topInto', () => {
  it('keeps the comparator sort’s first kk (score desc, tie rank, token), ties included', () => {
    const random = rng(5);
    const tokenMemory = Int32Array.from({ length: 500 }, (_, t) => Math.floor(t / 5));
    const rank = Int32Array.from({ length: 100 }, (_, m) => (m * 37) % 100); // a permutation
    for (let trial = 0; trial < 200; trial++) {
      const n = 1 + Math.floor(random() * 150);
      const kk = 1 + Math.floor(random() * n);
      const pool = Int32Array.from({ length: 500 }, (_, t) => t);
      for (let i = 499; i > 0; i--) {
        const j = Math.floor(random() * (i + 1));
        [pool[i], pool[j]] = [pool[j]!, pool[i]!];
      }
      const found = pool.slice(0, n);
      // Few distinct values: many equal scores.
      const scores = Float64Array.from({ length: n }, () => Math.floor(random() * 6) / 5);
      const withRank = trial % 2 === 0 ? rank : undefined;
      const order = Array.from(found.keys()).sort((a, b) => {
        if (scores[a] !== scores[b]) return scores[b]! - scores[a]!;
        const ta = found[a]!;
        const tb = found[b]!;
        if (withRank !== undefined) {
          const d = withRank[tokenMemory[ta]!]! - withRank[tokenMemory[tb]!]!;
          if (d !== 0) return d;
        }
        return ta - tb;
      });
      const values = new Float64Array(kk + 3).fill(-9);
      const tokens = new Int32Array(kk + 3).fill(-9);
      topInto(values, tokens, 3, kk, found, scores, tokenMemory, withRank);
      expect(Array.from(tokens.subarray(3))).toEqual(order.slice(0, kk).map((i) => found[i]));
      expect(Array.from(values.subarray(3))).toEqual(order.slice(0, kk).map((i) => scores[i]));
      expect(Array.from(tokens.subarray(0, 3))).toEqual([-9, -9, -9]); // nothing before `at`
    }
  });

  it('positionOf: the index of a member of an ascending array', () => {
    const sorted = Int32Array.of(2, 3, 7, 11, 40);
    expect([2, 3, 7, 11, 40].map((m) => positionOf(sorted, m))).toEqual([0, 1, 2, 3, 4]);
    expect(positionOf(Int32Array.of(9), 9)).toBe(0);
  });
});
