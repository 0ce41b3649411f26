import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { floatToHalf, toHalf } from './bank-files.js';
import { halfToFloat } from './bank-reader.js';

describe('float16 conversion', () => {
  it('encodes known values exactly', () => {
    expect(floatToHalf(1)).toBe(0x3c00);
    expect(floatToHalf(-2)).toBe(0xc000);
    expect(floatToHalf(0)).toBe(0);
    expect(floatToHalf(65504)).toBe(0x7bff);
    expect(floatToHalf(65520)).toBe(0x7c00); // rounds to Inf
    expect(floatToHalf(2 ** -14)).toBe(0x0400); // smallest normal
    expect(floatToHalf(2 ** -24)).toBe(0x0001); // smallest subnormal
    expect(floatToHalf(2 ** -26)).toBe(0); // underflow
    expect(floatToHalf(Number.NaN) & 0x7c00).toBe(0x7c00);
  });

  it('keeps values just below 2^-14 finite (arrow-js makes them Inf)', () => {
    const h = floatToHalf(-6.1017e-5);
    expect(Number.isFinite(halfToFloat(h))).toBe(true);
    expect(halfToFloat(h)).toBeCloseTo(-6.1017e-5, 7);
  });

  it('round-trips every float in range to within half a unit in the last place', () => {
    fc.assert(
      fc.property(fc.float({ min: -60000, max: 60000, noNaN: true }), (x) => {
        const y = halfToFloat(floatToHalf(x));
        expect(Number.isFinite(y)).toBe(true);
        // Relative 2^-11 for normals; absolute 2^-25 in the subnormal range.
        expect(Math.abs(y - x)).toBeLessThanOrEqual(
          Math.max(Math.abs(x) * 2 ** -11, 2 ** -25) * 1.0000001,
        );
      }),
      { numRuns: 20000 },
    );
  });

  it('decodes every half exactly back to itself', () => {
    for (let h = 0; h < 0x10000; h++) {
      const exp = (h >> 10) & 0x1f;
      if (exp === 0x1f) continue; // Inf/NaN
      expect(floatToHalf(halfToFloat(h))).toBe(h);
    }
    expect(Array.from(toHalf(Float32Array.from([1, -1])))).toEqual([0x3c00, 0xbc00]);
  });
});
