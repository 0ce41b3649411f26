import { describe, expect, it } from 'vitest';
import { fromHalfBits, toHalfBits } from './fp16.js';

describe('fp16', () => {
  it('round-trips every finite half exactly', () => {
    for (let h = 0; h < 65536; h++) {
      const x = fromHalfBits(h);
      if (Number.isNaN(x)) continue;
      expect(toHalfBits(x)).toBe(h);
    }
  });

  it('rounds midpoints between neighbouring halves to the even one', () => {
    // Positive finite halves 0 … 0x7bff; the midpoint of h and h + 1 is exact in float32.
    for (let h = 0; h < 0x7bff; h++) {
      const mid = (fromHalfBits(h) + fromHalfBits(h + 1)) / 2;
      expect(toHalfBits(mid)).toBe(h % 2 === 0 ? h : h + 1);
      expect(toHalfBits(-mid)).toBe(0x8000 | (h % 2 === 0 ? h : h + 1));
    }
  });

  it('overflows to infinity at 65520 and keeps NaN', () => {
    expect(toHalfBits(65504)).toBe(0x7bff);
    expect(toHalfBits(65519)).toBe(0x7bff);
    expect(toHalfBits(65520)).toBe(0x7c00);
    expect(toHalfBits(-1e9)).toBe(0xfc00);
    expect(Number.isNaN(fromHalfBits(toHalfBits(NaN)))).toBe(true);
    expect(toHalfBits(2 ** -26)).toBe(0); // half the smallest subnormal: tie to even (0)
    expect(toHalfBits(2 ** -25 * 1.5)).toBe(1);
  });
});
