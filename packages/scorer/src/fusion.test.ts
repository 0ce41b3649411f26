import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { fuse, rankCandidates, standardize } from './fusion.js';
import { tieOrder } from '@bfe/index';

describe('standardize', () => {
  it('uses the population standard deviation', () => {
    const z = standardize([1, 2, 3]);
    const sd = Math.sqrt(2 / 3);
    expect(Array.from(z)).toEqual([-1 / sd, 0, 1 / sd]);
  });

  it('maps a constant branch to zeros (σ floored at 1e-6)', () => {
    expect(Array.from(standardize([0.3, 0.3, 0.3]))).toEqual([0, 0, 0]);
    expect(Array.from(standardize([0.3]))).toEqual([0]);
  });

  it('gives mean 0 and population variance 1 for any non-constant input', () => {
    fc.assert(
      fc.property(
        fc.array(fc.double({ min: -1, max: 1, noNaN: true }), { minLength: 2, maxLength: 50 }),
        (xs) => {
          fc.pre(Math.max(...xs) - Math.min(...xs) > 1e-3);
          const z = standardize(xs);
          const mean = z.reduce((a, b) => a + b, 0) / z.length;
          const variance = z.reduce((a, b) => a + (b - mean) ** 2, 0) / z.length;
          expect(Math.abs(mean)).toBeLessThan(1e-9);
          expect(Math.abs(variance - 1)).toBeLessThan(1e-9);
        },
      ),
    );
  });
});

describe('fuse', () => {
  it('weights the standardised branches by α', () => {
    const pooled = [0.1, 0.5, 0.3];
    const sparse = [0.9, 0.2, 0.4];
    const zp = standardize(pooled);
    const zs = standardize(sparse);
    const out = fuse(pooled, sparse, 0.25);
    for (let i = 0; i < 3; i++) expect(out[i]).toBeCloseTo(0.25 * zp[i]! + 0.75 * zs[i]!, 15);
    expect(Array.from(fuse(pooled, sparse, 0))).toEqual(Array.from(zs));
  });

  it('refuses α outside [0, 1] and mismatched lengths', () => {
    expect(() => fuse([1], [1], 1.5)).toThrow(/alpha/);
    expect(() => fuse([1, 2], [1], 0.5)).toThrow(/2 pooled vs 1 sparse/);
  });
});

describe('rankCandidates', () => {
  const ids = Array.from({ length: 10 }, (_, i) => `m${i}`);
  const ties = tieOrder(ids);
  // Rows 3, 4, 7 and 9 tie at 0.2: they rank by their tie keys, whatever their candidate order.
  const tied = [3, 4, 7, 9].sort((a, b) => ties.rank[a]! - ties.rank[b]!);

  it('sorts by score descending, equal scores by the tie order', () => {
    const r = rankCandidates(
      Int32Array.of(7, 3, 9, 4, 5),
      Float64Array.of(0.2, 0.2, 0.2, 0.2, 0.5),
      ties,
    );
    expect(Array.from(r.rows)).toEqual([5, ...tied]);
    expect(Array.from(r.scores)).toEqual([0.5, 0.2, 0.2, 0.2, 0.2]);
    expect(r.ids).toEqual([5, ...tied].map((row) => `m${row}`));
    expect(Array.from(r.order, (i) => [7, 3, 9, 4, 5][i])).toEqual([5, ...tied]);
    // The tie order is not the row order here (else this test could not fail).
    expect(tied).not.toEqual([3, 4, 7, 9]);
  });

  it('gives the same ranking for every order of the candidates', () => {
    const rows = [7, 3, 9, 4, 5];
    const scores = [0.2, 0.2, 0.2, 0.2, 0.5];
    const perm = [4, 2, 0, 3, 1];
    const a = rankCandidates(Int32Array.from(rows), Float64Array.from(scores), ties);
    const b = rankCandidates(
      Int32Array.from(perm, (i) => rows[i]!),
      Float64Array.from(perm, (i) => scores[i]!),
      ties,
    );
    expect(b.ids).toEqual(a.ids);
  });

  it('refuses a row without an id', () => {
    expect(() => rankCandidates(Int32Array.of(10), Float64Array.of(1), ties)).toThrow(/row 10/);
  });
});
