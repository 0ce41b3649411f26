import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { fuse, rankCandidates, standardize } from './fusion.js';

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
  it('sorts by score descending, ties in candidate order', () => {
    const r = rankCandidates(Int32Array.of(7, 3, 9, 4), Float64Array.of(0.2, 0.5, 0.2, 0.2));
    expect(Array.from(r.order)).toEqual([1, 0, 2, 3]);
    expect(Array.from(r.rows)).toEqual([3, 7, 9, 4]);
    expect(Array.from(r.scores)).toEqual([0.5, 0.2, 0.2, 0.2]);
    expect(r.ids).toBeUndefined();
  });

  it('maps rows to ids when given', () => {
    const ids = Array.from({ length: 10 }, (_, i) => `m${i}`);
    const r = rankCandidates(Int32Array.of(7, 3), Float64Array.of(0.1, 0.9), ids);
    expect(r.ids).toEqual(['m3', 'm7']);
  });
});
