/**
 * IEEE 754 binary16 ("half") conversion in plain TypeScript: Node 20 has neither `Float16Array`
 * nor `Math.f16round`. Encoding rounds to nearest, ties to even, like a hardware `vcvtps2ph`
 * with the default rounding mode; decoding is exact (every half is a float32).
 */

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);

/**
 * The half-precision bits of `x` (round to nearest, ties to even; overflow to ±Infinity;
 * NaN stays a quiet NaN).
 *
 * @example
 * toHalfBits(1); // 0x3c00
 * toHalfBits(65520); // 0x7c00 (Infinity: 65520 is the tie between 65504 and 2^16)
 */
export function toHalfBits(x: number): number {
  f32[0] = x;
  const bits = u32[0]!;
  const sign = (bits >>> 16) & 0x8000;
  const exp = (bits >>> 23) & 0xff;
  const mant = bits & 0x7fffff;
  if (exp === 0xff) return sign | 0x7c00 | (mant !== 0 ? 0x200 : 0);
  const e = exp - 112; // rebias 127 → 15
  if (e >= 0x1f) return sign | 0x7c00;
  if (e <= 0) {
    // Subnormal half: value / 2^-24 = (1.mant) · 2^(e − 14 + 24 − 24) → shift the 24-bit significand.
    if (e < -10) return sign;
    const sig = mant | 0x800000;
    const shift = 14 - e;
    let h = sig >>> shift;
    const rem = sig & ((1 << shift) - 1);
    const half = 1 << (shift - 1);
    if (rem > half || (rem === half && (h & 1) === 1)) h++;
    return sign | h;
  }
  let h = (e << 10) | (mant >>> 13);
  const rem = mant & 0x1fff;
  // A carry out of the mantissa bumps the exponent, which is the right result (up to Infinity).
  if (rem > 0x1000 || (rem === 0x1000 && (h & 1) === 1)) h++;
  return sign | h;
}

let table: Float32Array | undefined;

/** All 65,536 halves as float32, built once (256 KiB). */
function halfTable(): Float32Array {
  if (table !== undefined) return table;
  const t = new Float32Array(65536);
  for (let h = 0; h < 65536; h++) {
    const sign = h & 0x8000 ? -1 : 1;
    const exp = (h >>> 10) & 0x1f;
    const mant = h & 0x3ff;
    if (exp === 0) t[h] = sign * mant * 2 ** -24;
    else if (exp === 0x1f) t[h] = mant === 0 ? sign * Infinity : NaN;
    else t[h] = sign * (1 + mant / 1024) * 2 ** (exp - 15);
  }
  table = t;
  return t;
}

/**
 * The float value of half bits `h` (exact).
 *
 * @example
 * fromHalfBits(0x3c00); // 1
 */
export function fromHalfBits(h: number): number {
  return halfTable()[h & 0xffff]!;
}

/** Writes the half bits of `src` into `out` (same length). */
export function toHalfInto(out: Uint16Array, src: Float32Array): void {
  const n = src.length;
  for (let i = 0; i < n; i++) out[i] = toHalfBits(src[i]!);
}

/** Writes the float32 values of the halves `src` into `out` (same length). */
export function fromHalfInto(out: Float32Array, src: Uint16Array): void {
  const t = halfTable();
  const n = src.length;
  for (let i = 0; i < n; i++) out[i] = t[src[i]!]!;
}
