import { describe, expect, it } from 'vitest';
import { tieOrder } from '@bfe/index';
import { rng } from '@bfe/index/testing';
import { candidateRank, candidateRanks } from './search-interventions.js';

/** The definition: 1 + how many candidates score higher, or equal and earlier in the tie order. */
function reference(g: number, candidates: Int32Array, scores: Float64Array, tieRank: Int32Array) {
  let above = 0;
  for (let i = 0; i < candidates.length; i++) {
    const higher = scores[i]! > scores[g]!;
    const tiedEarlier =
      scores[i] === scores[g] && tieRank[candidates[i]!]! < tieRank[candidates[g]!]!;
    if (higher || tiedEarlier) above++;
  }
  return above + 1;
}

describe('candidateRanks: each candidate’s place in the ranking by one score', () => {
  const rand = rng(20261206);
  const ids = Array.from({ length: 300 }, (_, i) => `m${i}`);
  const ties = tieOrder(ids);
  // Candidates: a shuffled subset of the bank's rows; scores with many exact ties and ±0.
  const shuffled = Int32Array.from(ids.keys());
  for (let i = shuffled.length - 1; i > 0; i--) {
    const j = Math.floor(rand() * (i + 1));
    [shuffled[i], shuffled[j]] = [shuffled[j]!, shuffled[i]!];
  }
  const rows = shuffled.subarray(0, 240);
  const scores = Float64Array.from(rows, (_, i) =>
    i % 7 === 0 ? (i % 2 === 0 ? 0 : -0) : Math.round(rand() * 20) / 20,
  );

  it.each([1, 5, 16, 17, 100, 240])('for %i candidates equals the definition', (count) => {
    const gs = Array.from({ length: count }, (_, i) => (i * 37) % rows.length);
    const want = gs.map((g) => reference(g, rows, scores, ties.rank));
    expect(candidateRanks(gs, rows, scores, ties)).toEqual(want);
    expect(gs.map((g) => candidateRank(g, rows, scores, ties))).toEqual(want);
  });

  it('gives every candidate a distinct place 1..n', () => {
    const all = Array.from(rows.keys());
    expect([...candidateRanks(all, rows, scores, ties)].sort((a, b) => a - b)).toEqual(
      all.map((i) => i + 1),
    );
  });
});
