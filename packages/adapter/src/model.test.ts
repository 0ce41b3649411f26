import { describe, expect, it } from 'vitest';
import {
  adapterBackward,
  applyAdapter,
  applyAdapterInto,
  createForwardCache,
  initAdapterParams,
  type AdapterParams,
} from './model.js';
import { Prng } from './prng.js';
import {
  finiteDifferences,
  normals,
  referenceT,
  relativeError,
  row,
  unitRows,
} from './testing/reference.js';

/** Params with a non-zero B, so that A receives gradient and T is not the identity. */
function randomParams(dim: number, rank: number, seed: number): AdapterParams<Float64Array> {
  const prng = new Prng(seed);
  return { dim, rank, a: normals(rank * dim, 0.3, prng), b: normals(dim * rank, 0.3, prng) };
}

function norm(v: ArrayLike<number>, start: number, dim: number): number {
  let ss = 0;
  for (let k = 0; k < dim; k++) ss += v[start + k]! ** 2;
  return Math.sqrt(ss);
}

describe('applyAdapter', () => {
  it('is exactly the identity while B = 0 (bitwise, float32 in and out)', () => {
    const dim = 384;
    const rows = 13;
    const params = initAdapterParams(dim, 32, 7);
    expect(params.b.every((x) => x === 0)).toBe(true);
    expect(params.a.some((x) => x !== 0)).toBe(true);
    const tokens = new Float32Array(unitRows(rows, dim, new Prng(1)));
    // also a row that is not unit-norm
    for (let k = 0; k < dim; k++) tokens[k]! *= 3.5;
    const out = applyAdapter(params, tokens, rows);
    expect(out).toBeInstanceOf(Float32Array);
    expect(out).not.toBe(tokens);
    expect(new Uint32Array(out.buffer)).toEqual(new Uint32Array(tokens.buffer));
  });

  it('preserves every row norm to 1e-6 and never changes its input', () => {
    const dim = 64;
    const rows = 9;
    const params = randomParams(dim, 8, 3);
    const tokens = new Float32Array(unitRows(rows, dim, new Prng(2)));
    for (let k = 0; k < dim; k++) tokens[2 * dim + k]! *= 0.25;
    const before = tokens.slice();
    const out = applyAdapter(params, tokens, rows);
    expect(tokens).toEqual(before);
    let changed = 0;
    for (let i = 0; i < rows; i++) {
      const n = norm(tokens, i * dim, dim);
      expect(Math.abs(norm(out, i * dim, dim) - n) / n).toBeLessThan(1e-6);
      for (let k = 0; k < dim; k++)
        changed = Math.max(changed, Math.abs(out[i * dim + k]! - tokens[i * dim + k]!));
    }
    expect(changed).toBeGreaterThan(0.01); // the adapter did something
  });

  it('matches the textbook formula; float32 storage agrees with float64 to 1e-6', () => {
    const dim = 23; // not a multiple of 4: the unrolled loops' remainders run
    const rank = 5;
    const rows = 6;
    const params = randomParams(dim, rank, 11);
    const tokens = unitRows(rows, dim, new Prng(12));
    const out64 = applyAdapterInto(new Float64Array(rows * dim), params, tokens, rows);
    const out32 = applyAdapter(params, new Float32Array(tokens), rows);
    for (let i = 0; i < rows; i++) {
      const ref = referenceT(params.a, params.b, dim, rank, row(tokens, i, dim));
      for (let k = 0; k < dim; k++) {
        expect(out64[i * dim + k]).toBeCloseTo(ref[k]!, 14);
        expect(Math.abs(out32[i * dim + k]! - ref[k]!)).toBeLessThan(1e-6);
      }
    }
  });

  it('maps a zero row to zero, without NaN', () => {
    const params = randomParams(8, 2, 5);
    const out = applyAdapter(params, new Float32Array(16), 2);
    expect(Array.from(out)).toEqual(new Array(16).fill(0));
  });

  it('refuses a token matrix of the wrong size, and an output that overlaps the input', () => {
    const params = randomParams(8, 2, 5);
    expect(() => applyAdapter(params, new Float32Array(15), 2)).toThrow(/not 2 × 8/);
    const buf = new Float64Array(16);
    expect(() => applyAdapterInto(buf, params, buf, 2)).toThrow(/overlap/);
  });
});

describe('initAdapterParams', () => {
  it('is seeded: same seed, same A; another seed, another A; B = 0', () => {
    const x = initAdapterParams(32, 4, 42);
    const y = initAdapterParams(32, 4, 42);
    const z = initAdapterParams(32, 4, 43);
    expect(x.a).toEqual(y.a);
    expect(x.a).not.toEqual(z.a);
    expect(x.b).toEqual(new Float64Array(128));
  });

  it('draws A with the requested standard deviation', () => {
    const { a } = initAdapterParams(384, 32, 1, 0.02);
    const mean = a.reduce((s, x) => s + x, 0) / a.length;
    const std = Math.sqrt(a.reduce((s, x) => s + (x - mean) ** 2, 0) / a.length);
    expect(Math.abs(mean)).toBeLessThan(0.001);
    expect(std).toBeGreaterThan(0.0195);
    expect(std).toBeLessThan(0.0205);
  });

  it('refuses a rank above the dimension', () => {
    expect(() => initAdapterParams(4, 5)).toThrow(/rank/);
  });
});

describe('adapterBackward', () => {
  it('matches central finite differences of Σ w·T(H) w.r.t. A and B (float64, rel. < 1e-6)', () => {
    const dim = 7;
    const rank = 3;
    const rows = 5;
    const params = randomParams(dim, rank, 21);
    const prng = new Prng(22);
    const tokens = unitRows(rows, dim, prng);
    for (let k = 0; k < dim; k++) tokens[dim + k]! *= 2; // a non-unit row
    const weights = normals(rows * dim, 1, prng);
    const out = new Float64Array(rows * dim);
    const objective = (): number => {
      applyAdapterInto(out, params, tokens, rows);
      let s = 0;
      for (let i = 0; i < out.length; i++) s += weights[i]! * out[i]!;
      return s;
    };
    const cache = createForwardCache(rows, dim, rank);
    applyAdapterInto(out, params, tokens, rows, cache);
    const gradA = new Float64Array(rank * dim);
    const gradB = new Float64Array(dim * rank);
    adapterBackward(params, tokens, rows, cache, weights, gradA, gradB);
    const fdA = finiteDifferences(objective, params.a);
    const fdB = finiteDifferences(objective, params.b);
    const errA = relativeError(gradA, fdA);
    const errB = relativeError(gradB, fdB);
    console.log(
      `T gradient check: rel. error A ${errA.toExponential(2)}, B ${errB.toExponential(2)}`,
    );
    expect(errA).toBeLessThan(1e-6);
    expect(errB).toBeLessThan(1e-6);
    // and the check itself can fail: a wrong gradient is far off
    gradB[0]! += 0.01;
    expect(relativeError(gradB, fdB)).toBeGreaterThan(1e-4);
  });

  it('gives B a gradient but A none at the identity start (B = 0)', () => {
    const dim = 6;
    const params = initAdapterParams(dim, 2, 3);
    const tokens = unitRows(2, dim, new Prng(4));
    const cache = createForwardCache(2, dim, 2);
    applyAdapterInto(new Float64Array(2 * dim), params, tokens, 2, cache);
    const gradA = new Float64Array(2 * dim);
    const gradB = new Float64Array(dim * 2);
    adapterBackward(params, tokens, 2, cache, normals(2 * dim, 1, new Prng(5)), gradA, gradB);
    expect(gradA.every((x) => x === 0)).toBe(true);
    expect(gradB.some((x) => x !== 0)).toBe(true);
  });
});
