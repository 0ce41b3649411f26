import { describe, expect, it } from 'vitest';
import { Prng, deriveSeed, shuffleInPlace } from './prng.js';

describe('Prng', () => {
  it('is mulberry32: reproducible, and known values for seed 0', () => {
    const x = new Prng(0);
    // the reference C implementation (gcc, uint32_t state = 0) gives these first three
    expect([x.nextUint32(), x.nextUint32(), x.nextUint32()]).toEqual([
      1144304738, 1416247, 958946056,
    ]);
    const a = new Prng(42);
    const b = new Prng(42);
    const c = new Prng(43);
    const sa = Array.from({ length: 20 }, () => a.normal());
    expect(Array.from({ length: 20 }, () => b.normal())).toEqual(sa);
    expect(Array.from({ length: 20 }, () => c.normal())).not.toEqual(sa);
  });

  it('draws uniforms in [0, 1) and standard normals', () => {
    const prng = new Prng(7);
    const n = 200_000;
    let sum = 0;
    let ss = 0;
    let lo = 1;
    let hi = 0;
    for (let i = 0; i < n; i++) {
      const u = prng.next();
      lo = Math.min(lo, u);
      hi = Math.max(hi, u);
      const g = prng.normal();
      sum += g;
      ss += g * g;
    }
    expect(lo).toBeGreaterThanOrEqual(0);
    expect(hi).toBeLessThan(1);
    expect(Math.abs(sum / n)).toBeLessThan(0.01);
    expect(Math.abs(ss / n - 1)).toBeLessThan(0.02);
  });

  it('refuses a non-integer seed', () => {
    expect(() => new Prng(0.5)).toThrow(/integer/);
  });
});

describe('deriveSeed and shuffleInPlace', () => {
  it('derives distinct streams and shuffles into a seeded permutation', () => {
    expect(new Set([0, 1, 2, 3].map((s) => deriveSeed(42, s))).size).toBe(4);
    expect(deriveSeed(42, 1)).not.toBe(deriveSeed(43, 1));
    const order = (seed: number): number[] =>
      shuffleInPlace(
        Array.from({ length: 50 }, (_, i) => i),
        new Prng(seed),
      );
    expect(order(1)).toEqual(order(1));
    expect(order(1)).not.toEqual(order(2));
    expect([...order(1)].sort((x, y) => x - y)).toEqual(Array.from({ length: 50 }, (_, i) => i));
  });
});
