import { describe, expect, it } from 'vitest';
import { CandidateBank } from './candidate-bank.js';
import { flatTokenStore } from './token-store.js';

// 6 memories of dim 2; memory i's tokens hold (i, position)
const counts = [2, 0, 3, 1, 0, 2];
const offsets = Int32Array.from({ length: counts.length + 1 }, (_, i) =>
  counts.slice(0, i).reduce((a, b) => a + b, 0),
);
const vectors = new Float32Array(offsets[6]! * 2);
counts.forEach((n, m) => {
  for (let p = 0; p < n; p++) vectors.set([m, p], (offsets[m]! + p) * 2);
});

describe('CandidateBank', () => {
  const bank = new CandidateBank(flatTokenStore(vectors, 2), offsets, Int32Array.of(0, 1, 2, 4, 5));

  it('lays the candidates’ tokens out in bank order', () => {
    expect(bank.size).toBe(7);
    expect(Array.from(bank.start)).toEqual([0, 2, 2, 5, 5, 7]);
    expect(Array.from(bank.read(0, 7))).toEqual([0, 0, 0, 1, 2, 0, 2, 1, 2, 2, 5, 0, 5, 1]);
  });

  it('maps virtual tokens to slots and bank tokens, skipping empty memories', () => {
    expect(Array.from({ length: 7 }, (_, v) => bank.slotOf(v))).toEqual([0, 0, 2, 2, 2, 4, 4]);
    // memory 3 is not a candidate: memory 5's tokens are bank tokens 6 and 7
    expect(Array.from({ length: 7 }, (_, v) => bank.bankToken(v))).toEqual([0, 1, 2, 3, 4, 6, 7]);
    const out = new Float64Array(2);
    bank.dots(Int32Array.of(9, 5, 2), 1, 2, Float32Array.of(2, 3), 0, out);
    expect(Array.from(out)).toEqual([10, 4]);
  });

  it('reads a chunk inside one run as a view, and gathers one that spans a gap', () => {
    const inside = bank.read(1, 4);
    expect(inside.buffer).toBe(vectors.buffer);
    expect(Array.from(inside)).toEqual([0, 1, 2, 0, 2, 1]);
    const across = bank.read(4, 7);
    expect(across.buffer).not.toBe(vectors.buffer);
    expect(Array.from(across)).toEqual([2, 2, 5, 0, 5, 1]);
  });
});
