import { describe, expect, it } from 'vitest';
import { poolInto } from './pass.js';

/** A batch row of `length` tokens of `dim` floats at offset `base`, seeded. */
function states(n: number, seed: number): Float32Array {
  let s = seed >>> 0;
  return Float32Array.from({ length: n }, () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 31 - 1;
  });
}

describe('poolInto: native pooling of one window', () => {
  const dim = 6;
  const length = 5;
  const base = 2 * dim; // a row after two padding-free tokens of another row
  const all = states(base + (length + 3) * dim, 11); // 3 padded positions after the row

  it('mean: over the row’s tokens only (padding never), then L2-normalised', () => {
    const out = new Float32Array(2 * dim);
    poolInto(out, dim, all, base, length, dim, { pooling: 'mean', normalize: true });
    const mean = Array.from({ length: dim }, (_, k) => {
      let s = 0;
      for (let j = 0; j < length; j++) s += all[base + j * dim + k]!;
      return s / length;
    });
    const norm = Math.hypot(...mean);
    for (let k = 0; k < dim; k++) expect(out[dim + k]).toBeCloseTo(mean[k]! / norm, 6);
    expect([...out.subarray(0, dim)]).toEqual(new Array<number>(dim).fill(0));
  });

  it('cls and last: the first or the last real token, unnormalised when the model says so', () => {
    const cls = new Float32Array(dim);
    poolInto(cls, 0, all, base, length, dim, { pooling: 'cls', normalize: false });
    expect([...cls]).toEqual([...all.subarray(base, base + dim)]);
    const last = new Float32Array(dim);
    poolInto(last, 0, all, base, length, dim, { pooling: 'last', normalize: false });
    const at = base + (length - 1) * dim;
    expect([...last]).toEqual([...all.subarray(at, at + dim)]);
  });
});
