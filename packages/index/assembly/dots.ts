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

/**
 * One step of four dimensions (`at` bytes in) of a row pair (`a`, `b`): `s` plus each row's
 * four products in order of the dimension, lane 0 row `a`, lane 1 row `b`.
 */
function step(s: v128, a: usize, b: usize, at: usize, q: usize): v128 {
  const x = v128.load(a + at);
  const y = v128.load(b + at);
  const lo = i32x4.shuffle(x, y, 0, 4, 1, 5);
  const hi = i32x4.shuffle(x, y, 2, 6, 3, 7);
  s = f64x2.add(s, f64x2.mul(v128.load(q), f64x2.promote_low_f32x4(lo)));
  s = f64x2.add(
    s,
    f64x2.mul(v128.load(q, 16), f64x2.promote_low_f32x4(i64x2.shuffle(lo, lo, 1, 1))),
  );
  s = f64x2.add(s, f64x2.mul(v128.load(q, 32), f64x2.promote_low_f32x4(hi)));
  return f64x2.add(
    s,
    f64x2.mul(v128.load(q, 48), f64x2.promote_low_f32x4(i64x2.shuffle(hi, hi, 1, 1))),
  );
}

/** One dimension (`at` bytes in) of a row pair: `s` plus each row's product. */
function last(s: v128, a: usize, b: usize, at: usize, q: usize): v128 {
  return f64x2.add(s, f64x2.mul(v128.load(q), f64x2.promote_low_f32x4(lanes(a, b, at))));
}

/** Two rows' sums (at `a`, `a + stride`) into `out[0..1]`. */
function dots2(a: usize, stride: usize, dim: i32, q2: usize, out: usize): void {
  const b = a + stride;
  let s = f64x2.splat(0);
  let j = 0;
  for (; j + 3 < dim; j += 4) s = step(s, a, b, (<usize>j) << 2, q2 + ((<usize>j) << 4));
  for (; j < dim; j++) s = last(s, a, b, (<usize>j) << 2, q2 + ((<usize>j) << 4));
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
    s0 = step(s0, a, a1, at, q);
    s1 = step(s1, a2, a3, at, q);
    s2 = step(s2, a4, a5, at, q);
    s3 = step(s3, a6, a7, at, q);
  }
  for (; j < dim; j++) {
    const at = (<usize>j) << 2;
    const q = q2 + ((<usize>j) << 4);
    s0 = last(s0, a, a1, at, q);
    s1 = last(s1, a2, a3, at, q);
    s2 = last(s2, a4, a5, at, q);
    s3 = last(s3, a6, a7, at, q);
  }
  v128.store(out, s0);
  v128.store(out, s1, 16);
  v128.store(out, s2, 32);
  v128.store(out, s3, 48);
}

/**
 * Float32 estimates, for proposing only: `out[h] ≈ Σ_j q[j] · rows[h · dim + j]` (float32
 * `rows`, `q` and `out`) for `h < count`, each row summed in four lanes (`j mod 4`) and the
 * lanes then added. Within `γ(dim + 2) · Σ_j |q[j] · rows[h · dim + j]|` of the exact sum
 * (γ(m) = m·u / (1 − m·u), u = 2⁻²⁴), whatever the order; `bestTokensInto` rescores in float64
 * every row that bound cannot rule out.
 */
export function dots32(rows: usize, count: i32, dim: i32, q: usize, out: usize): void {
  const stride = (<usize>dim) << 2;
  const body = dim & ~3;
  let h = 0;
  for (; h + 3 < count; h += 4) {
    const a0 = rows + <usize>h * stride;
    const a1 = a0 + stride;
    const a2 = a1 + stride;
    const a3 = a2 + stride;
    let s0 = f32x4.splat(0);
    let s1 = f32x4.splat(0);
    let s2 = f32x4.splat(0);
    let s3 = f32x4.splat(0);
    for (let j = 0; j < body; j += 4) {
      const at = (<usize>j) << 2;
      const x = v128.load(q + at);
      s0 = f32x4.add(s0, f32x4.mul(x, v128.load(a0 + at)));
      s1 = f32x4.add(s1, f32x4.mul(x, v128.load(a1 + at)));
      s2 = f32x4.add(s2, f32x4.mul(x, v128.load(a2 + at)));
      s3 = f32x4.add(s3, f32x4.mul(x, v128.load(a3 + at)));
    }
    store<f32>(out + ((<usize>h) << 2), lanesSum(s0) + tail32(a0, q, body, dim));
    store<f32>(out + ((<usize>(h + 1)) << 2), lanesSum(s1) + tail32(a1, q, body, dim));
    store<f32>(out + ((<usize>(h + 2)) << 2), lanesSum(s2) + tail32(a2, q, body, dim));
    store<f32>(out + ((<usize>(h + 3)) << 2), lanesSum(s3) + tail32(a3, q, body, dim));
  }
  for (; h < count; h++) {
    const a = rows + <usize>h * stride;
    let s = f32x4.splat(0);
    for (let j = 0; j < body; j += 4) {
      const at = (<usize>j) << 2;
      s = f32x4.add(s, f32x4.mul(v128.load(q + at), v128.load(a + at)));
    }
    store<f32>(out + ((<usize>h) << 2), lanesSum(s) + tail32(a, q, body, dim));
  }
}

/** The four lanes of `s` added: (0 + 1) + (2 + 3). */
function lanesSum(s: v128): f32 {
  return (
    f32x4.extract_lane(s, 0) +
    f32x4.extract_lane(s, 1) +
    (f32x4.extract_lane(s, 2) + f32x4.extract_lane(s, 3))
  );
}

/** The products of dimensions `from..dim-1` of row `a`, summed in float32. */
function tail32(a: usize, q: usize, from: i32, dim: i32): f32 {
  let s: f32 = 0;
  for (let j = from; j < dim; j++) {
    const at = (<usize>j) << 2;
    s += load<f32>(q + at) * load<f32>(a + at);
  }
  return s;
}
