// The float64 dot products of the adapter's WebAssembly kernel (used by kernel.ts; see there):
// each one in the JavaScript reference's summation order.

/** `dot()` of dot.ts: lanes (s0, s1), (s2, s3) over k mod 4, the tail into s0. */
export function dot4(q: usize, x: usize, dim: i32): f64 {
  let a = f64x2.splat(0);
  let b = f64x2.splat(0);
  const d4 = dim & ~3;
  let k = 0;
  for (; k < d4; k += 4) {
    const xv = v128.load(x + ((<usize>k) << 2));
    const qp = q + ((<usize>k) << 3);
    a = f64x2.add(a, f64x2.mul(v128.load(qp), f64x2.promote_low_f32x4(xv)));
    const hi = v128.shuffle<i32>(xv, xv, 2, 3, 2, 3);
    b = f64x2.add(b, f64x2.mul(v128.load(qp, 16), f64x2.promote_low_f32x4(hi)));
  }
  let s0 = f64x2.extract_lane(a, 0);
  for (; k < dim; k++) {
    s0 += load<f64>(q + ((<usize>k) << 3)) * <f64>load<f32>(x + ((<usize>k) << 2));
  }
  return s0 + f64x2.extract_lane(a, 1) + (f64x2.extract_lane(b, 0) + f64x2.extract_lane(b, 1));
}

/** The sequential sum `s += q[k] · x[k]` (k ascending) of the reference's row blocks. */
export function seqDot(q: usize, x: usize, dim: i32): f64 {
  let s: f64 = 0;
  for (let k = 0; k < dim; k++) {
    s += load<f64>(q + ((<usize>k) << 3)) * <f64>load<f32>(x + ((<usize>k) << 2));
  }
  return s;
}

/** One step `s += (qa, qb) · (xa[k], xb[k])` for k .. k + 3 (pairs from two token rows). */
function pairStep4(s: v128, qi: usize, va: v128, vb: v128): v128 {
  s = f64x2.add(
    s,
    f64x2.mul(v128.load(qi), f64x2.promote_low_f32x4(v128.shuffle<i32>(va, vb, 0, 4, 0, 4))),
  );
  s = f64x2.add(
    s,
    f64x2.mul(v128.load(qi, 16), f64x2.promote_low_f32x4(v128.shuffle<i32>(va, vb, 1, 5, 1, 5))),
  );
  s = f64x2.add(
    s,
    f64x2.mul(v128.load(qi, 32), f64x2.promote_low_f32x4(v128.shuffle<i32>(va, vb, 2, 6, 2, 6))),
  );
  s = f64x2.add(
    s,
    f64x2.mul(v128.load(qi, 48), f64x2.promote_low_f32x4(v128.shuffle<i32>(va, vb, 3, 7, 3, 7))),
  );
  return s;
}

/**
 * Four sequential sums at once (rows i .. i + 3 of a reference block, one token each): lanes
 * (row 0, row 1) and (row 2, row 3); `qi` holds the two row pairs interleaved
 * (`[k][lane]`, pair 1 `dim · 16` bytes after pair 0). Writes four float64 at `out`.
 */
export function seqDots4(
  qi: usize,
  x0: usize,
  x1: usize,
  x2: usize,
  x3: usize,
  dim: i32,
  out: usize,
): void {
  let s = f64x2.splat(0);
  let r = f64x2.splat(0);
  const qj = qi + ((<usize>dim) << 4);
  const d4 = dim & ~3;
  let k = 0;
  for (; k < d4; k += 4) {
    const o = (<usize>k) << 2;
    s = pairStep4(s, qi + ((<usize>k) << 4), v128.load(x0 + o), v128.load(x1 + o));
    r = pairStep4(r, qj + ((<usize>k) << 4), v128.load(x2 + o), v128.load(x3 + o));
  }
  for (; k < dim; k++) {
    const o = (<usize>k) << 2;
    const a = f64x2.promote_low_f32x4(v128.load32_lane(x1 + o, v128.load32_zero(x0 + o), 1));
    const b = f64x2.promote_low_f32x4(v128.load32_lane(x3 + o, v128.load32_zero(x2 + o), 1));
    s = f64x2.add(s, f64x2.mul(v128.load(qi + ((<usize>k) << 4)), a));
    r = f64x2.add(r, f64x2.mul(v128.load(qj + ((<usize>k) << 4)), b));
  }
  v128.store(out, s);
  v128.store(out, r, 16);
}
