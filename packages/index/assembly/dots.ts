// AssemblyScript source of the float64 inner products (`src/dots-wasm.ts` loads it;
// `scripts/build-wasm.mjs` compiles it into `src/dots-wasm-bytes.ts`). Each row's sum runs in
// order of the dimension, as `dotsInto` in JavaScript does, in one lane of a float64 pair: two
// rows share each instruction, four pairs run side by side. A float32 × float32 product is
// exact in float64 and lanes round as scalars do, so every sum is bit-identical to the
// JavaScript loop's. Every pointer is a byte offset into the (imported) linear memory.

/**
 * `out[h] = Σ_j q[j] · rows[h · dim + j]` (float64 `out`, float32 `rows`) for `h < count`.
 * `q2` holds each query value twice, as float64 pairs (`dim` pairs, 16 bytes each).
 */
export function dots(rows: usize, count: i32, dim: i32, q2: usize, out: usize): void {
  const stride = (<usize>dim) << 2;
  let h = 0;
  for (; h + 7 < count; h += 8) {
    dots8(rows + <usize>h * stride, stride, dim, q2, out + ((<usize>h) << 3));
  }
  for (; h + 1 < count; h += 2) {
    dots2(rows + <usize>h * stride, stride, dim, q2, out + ((<usize>h) << 3));
  }
  if (h < count) {
    const a = rows + <usize>h * stride;
    let s: f64 = 0;
    for (let j = 0; j < dim; j++) {
      s += load<f64>(q2 + ((<usize>j) << 4)) * <f64>load<f32>(a + ((<usize>j) << 2));
    }
    store<f64>(out + ((<usize>h) << 3), s);
  }
}

/** Element `at` (bytes) of rows `p` and `r` as a float32 pair in lanes 0 and 1. */
function lanes(p: usize, r: usize, at: usize): v128 {
  return f32x4.replace_lane(f32x4.splat(load<f32>(p + at)), 1, load<f32>(r + at));
}

/** Two rows' sums (at `a`, `a + stride`) into `out[0..1]`. */
function dots2(a: usize, stride: usize, dim: i32, q2: usize, out: usize): void {
  const b = a + stride;
  let s = f64x2.splat(0);
  let j = 0;
  for (; j + 3 < dim; j += 4) {
    const at = (<usize>j) << 2;
    const x = v128.load(a + at);
    const y = v128.load(b + at);
    const lo = i32x4.shuffle(x, y, 0, 4, 1, 5);
    const hi = i32x4.shuffle(x, y, 2, 6, 3, 7);
    const q = q2 + ((<usize>j) << 4);
    s = f64x2.add(s, f64x2.mul(v128.load(q), f64x2.promote_low_f32x4(lo)));
    s = f64x2.add(
      s,
      f64x2.mul(v128.load(q, 16), f64x2.promote_low_f32x4(i64x2.shuffle(lo, lo, 1, 1))),
    );
    s = f64x2.add(s, f64x2.mul(v128.load(q, 32), f64x2.promote_low_f32x4(hi)));
    s = f64x2.add(
      s,
      f64x2.mul(v128.load(q, 48), f64x2.promote_low_f32x4(i64x2.shuffle(hi, hi, 1, 1))),
    );
  }
  for (; j < dim; j++) {
    const at = (<usize>j) << 2;
    const v = lanes(a, b, at);
    s = f64x2.add(s, f64x2.mul(v128.load(q2 + ((<usize>j) << 4)), f64x2.promote_low_f32x4(v)));
  }
  v128.store(out, s);
}

/** Eight rows' sums (at `a + i · stride`) into `out[0..7]`: four pairs side by side. */
function dots8(a: usize, stride: usize, dim: i32, q2: usize, out: usize): void {
  const a1 = a + stride;
  const a2 = a1 + stride;
  const a3 = a2 + stride;
  const a4 = a3 + stride;
  const a5 = a4 + stride;
  const a6 = a5 + stride;
  const a7 = a6 + stride;
  let s0 = f64x2.splat(0);
  let s1 = f64x2.splat(0);
  let s2 = f64x2.splat(0);
  let s3 = f64x2.splat(0);
  let j = 0;
  for (; j + 3 < dim; j += 4) {
    const at = (<usize>j) << 2;
    const q = q2 + ((<usize>j) << 4);
    const q0 = v128.load(q);
    const q1 = v128.load(q, 16);
    const q2_ = v128.load(q, 32);
    const q3 = v128.load(q, 48);
    let x = v128.load(a + at);
    let y = v128.load(a1 + at);
    let lo = i32x4.shuffle(x, y, 0, 4, 1, 5);
    let hi = i32x4.shuffle(x, y, 2, 6, 3, 7);
    s0 = f64x2.add(s0, f64x2.mul(q0, f64x2.promote_low_f32x4(lo)));
    s0 = f64x2.add(s0, f64x2.mul(q1, f64x2.promote_low_f32x4(i64x2.shuffle(lo, lo, 1, 1))));
    s0 = f64x2.add(s0, f64x2.mul(q2_, f64x2.promote_low_f32x4(hi)));
    s0 = f64x2.add(s0, f64x2.mul(q3, f64x2.promote_low_f32x4(i64x2.shuffle(hi, hi, 1, 1))));
    x = v128.load(a2 + at);
    y = v128.load(a3 + at);
    lo = i32x4.shuffle(x, y, 0, 4, 1, 5);
    hi = i32x4.shuffle(x, y, 2, 6, 3, 7);
    s1 = f64x2.add(s1, f64x2.mul(q0, f64x2.promote_low_f32x4(lo)));
    s1 = f64x2.add(s1, f64x2.mul(q1, f64x2.promote_low_f32x4(i64x2.shuffle(lo, lo, 1, 1))));
    s1 = f64x2.add(s1, f64x2.mul(q2_, f64x2.promote_low_f32x4(hi)));
    s1 = f64x2.add(s1, f64x2.mul(q3, f64x2.promote_low_f32x4(i64x2.shuffle(hi, hi, 1, 1))));
    x = v128.load(a4 + at);
    y = v128.load(a5 + at);
    lo = i32x4.shuffle(x, y, 0, 4, 1, 5);
    hi = i32x4.shuffle(x, y, 2, 6, 3, 7);
    s2 = f64x2.add(s2, f64x2.mul(q0, f64x2.promote_low_f32x4(lo)));
    s2 = f64x2.add(s2, f64x2.mul(q1, f64x2.promote_low_f32x4(i64x2.shuffle(lo, lo, 1, 1))));
    s2 = f64x2.add(s2, f64x2.mul(q2_, f64x2.promote_low_f32x4(hi)));
    s2 = f64x2.add(s2, f64x2.mul(q3, f64x2.promote_low_f32x4(i64x2.shuffle(hi, hi, 1, 1))));
    x = v128.load(a6 + at);
    y = v128.load(a7 + at);
    lo = i32x4.shuffle(x, y, 0, 4, 1, 5);
    hi = i32x4.shuffle(x, y, 2, 6, 3, 7);
    s3 = f64x2.add(s3, f64x2.mul(q0, f64x2.promote_low_f32x4(lo)));
    s3 = f64x2.add(s3, f64x2.mul(q1, f64x2.promote_low_f32x4(i64x2.shuffle(lo, lo, 1, 1))));
    s3 = f64x2.add(s3, f64x2.mul(q2_, f64x2.promote_low_f32x4(hi)));
    s3 = f64x2.add(s3, f64x2.mul(q3, f64x2.promote_low_f32x4(i64x2.shuffle(hi, hi, 1, 1))));
  }
  for (; j < dim; j++) {
    const at = (<usize>j) << 2;
    const q = v128.load(q2 + ((<usize>j) << 4));
    s0 = f64x2.add(s0, f64x2.mul(q, f64x2.promote_low_f32x4(lanes(a, a1, at))));
    s1 = f64x2.add(s1, f64x2.mul(q, f64x2.promote_low_f32x4(lanes(a2, a3, at))));
    s2 = f64x2.add(s2, f64x2.mul(q, f64x2.promote_low_f32x4(lanes(a4, a5, at))));
    s3 = f64x2.add(s3, f64x2.mul(q, f64x2.promote_low_f32x4(lanes(a6, a7, at))));
  }
  v128.store(out, s0);
  v128.store(out, s1, 16);
  v128.store(out, s2, 32);
  v128.store(out, s3, 48);
}
