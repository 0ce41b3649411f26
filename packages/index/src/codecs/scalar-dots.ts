/**
 * Float64 dots of a query row with SQ8 / SQ4 codes, decoding as they go: bit for bit
 * `decodeSq8Into` / `decodeSq4Into` then `dotsInto` (each decoded value is the float32 of
 * `lo[d] + code · step[d]` — `Math.fround`, as a Float32Array store rounds —, multiplied by the
 * float64 query value and summed in order of `d` for every row), without writing the decoded
 * rows. Four rows at a time share each `lo` / `step` / query load; measured on 2,560 scattered
 * SQ8 rows of 384 dimensions ≈ 2.4× faster than decoding into a scratch and dotting it.
 */
import { widenedQuery } from '../dots.js';
import type { ScalarFit } from './scalar.js';

/** `out[h]` = the float64 dot of query row `query[at ..]` with the decoded code row `rows[h]`. */
export type CodeRowDots = (
  codes: Uint8Array,
  rows: Int32Array,
  count: number,
  query: Float32Array,
  at: number,
  out: Float64Array,
) => void;

/**
 * The kernel `out[h] = Σ_d query[at + d] · decode(codes, rows[h])[d]` for `h < count` of SQ8
 * codes with this fit (one byte per dimension, `dim` bytes a row).
 */
export function sq8DotsInto(fit: ScalarFit, dim: number): CodeRowDots {
  return (codes, rows, count, query, at, out) => {
    const q = widenedQuery(query, at, dim);
    const { lo, step } = fit;
    let h = 0;
    for (; h + 3 < count; h += 4) {
      const c0 = rows[h]! * dim;
      const c1 = rows[h + 1]! * dim;
      const c2 = rows[h + 2]! * dim;
      const c3 = rows[h + 3]! * dim;
      let s0 = 0;
      let s1 = 0;
      let s2 = 0;
      let s3 = 0;
      for (let d = 0; d < dim; d++) {
        const l = lo[d]!;
        const st = step[d]!;
        const v = q[d]!;
        s0 += v * Math.fround(l + codes[c0 + d]! * st);
        s1 += v * Math.fround(l + codes[c1 + d]! * st);
        s2 += v * Math.fround(l + codes[c2 + d]! * st);
        s3 += v * Math.fround(l + codes[c3 + d]! * st);
      }
      out[h] = s0;
      out[h + 1] = s1;
      out[h + 2] = s2;
      out[h + 3] = s3;
    }
    for (; h < count; h++) {
      const c = rows[h]! * dim;
      let s = 0;
      for (let d = 0; d < dim; d++) s += q[d]! * Math.fround(lo[d]! + codes[c + d]! * step[d]!);
      out[h] = s;
    }
  };
}

/**
 * As {@link sq8DotsInto} for SQ4 codes: `dim / 2` bytes a row, dimension `2j` in byte `j`'s
 * low nibble and `2j + 1` in its high nibble.
 */
export function sq4DotsInto(fit: ScalarFit, dim: number): CodeRowDots {
  return (codes, rows, count, query, at, out) => {
    const q = widenedQuery(query, at, dim);
    const { lo, step } = fit;
    const half = dim >> 1;
    let h = 0;
    for (; h + 3 < count; h += 4) {
      const c0 = rows[h]! * half;
      const c1 = rows[h + 1]! * half;
      const c2 = rows[h + 2]! * half;
      const c3 = rows[h + 3]! * half;
      let s0 = 0;
      let s1 = 0;
      let s2 = 0;
      let s3 = 0;
      for (let j = 0; j < half; j++) {
        const d = 2 * j;
        const la = lo[d]!;
        const sa = step[d]!;
        const va = q[d]!;
        const lb = lo[d + 1]!;
        const sb = step[d + 1]!;
        const vb = q[d + 1]!;
        const b0 = codes[c0 + j]!;
        const b1 = codes[c1 + j]!;
        const b2 = codes[c2 + j]!;
        const b3 = codes[c3 + j]!;
        s0 += va * Math.fround(la + (b0 & 15) * sa);
        s0 += vb * Math.fround(lb + (b0 >> 4) * sb);
        s1 += va * Math.fround(la + (b1 & 15) * sa);
        s1 += vb * Math.fround(lb + (b1 >> 4) * sb);
        s2 += va * Math.fround(la + (b2 & 15) * sa);
        s2 += vb * Math.fround(lb + (b2 >> 4) * sb);
        s3 += va * Math.fround(la + (b3 & 15) * sa);
        s3 += vb * Math.fround(lb + (b3 >> 4) * sb);
      }
      out[h] = s0;
      out[h + 1] = s1;
      out[h + 2] = s2;
      out[h + 3] = s3;
    }
    for (; h < count; h++) {
      const c = rows[h]! * half;
      let s = 0;
      for (let j = 0; j < half; j++) {
        const d = 2 * j;
        const b = codes[c + j]!;
        s += q[d]! * Math.fround(lo[d]! + (b & 15) * step[d]!);
        s += q[d + 1]! * Math.fround(lo[d + 1]! + (b >> 4) * step[d + 1]!);
      }
      out[h] = s;
    }
  };
}
