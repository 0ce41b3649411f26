// The adapter's forward pass for the WebAssembly kernel (exported by kernel.ts; see there).

import { dot4 } from './dots';

/** `NORM_EPSILON` of model.ts. */
const NORM_EPSILON: f64 = 1e-12;

/**
 * `applyAdapterInto(out, params, tokens, rows, cache)` of model.ts, bit for bit: for each row
 * `h` of the float32 `tokens [rows × dim]`, `u = A h` (`dot()`'s order, {@link dot4}), `z = h
 * + B u` (each entry's sum over `j` ascending from zero; SIMD lanes are adjacent entries),
 * `‖h‖` and `‖z‖` by sequential sums over `k`, `out = z · ‖h‖ / max(‖z‖, ε)`. `a` is A (f64
 * `[rank × dim]`), `bT` is B transposed (f64 `[rank × dim]`); `u [rows × rank]`, `z`, `out`
 * (f64 `[rows × dim]`), `hNorm`, `zNorm` (f64 `[rows]`) are written.
 */
export function adapterForward(
  a: usize,
  bT: usize,
  dim: i32,
  rank: i32,
  tokens: usize,
  rows: i32,
  u: usize,
  z: usize,
  hNorm: usize,
  zNorm: usize,
  out: usize,
): void {
  const d2 = dim & ~1;
  const rowF64 = (<usize>dim) << 3;
  for (let row = 0; row < rows; row++) {
    const h = tokens + ((<usize>row * <usize>dim) << 2);
    const u0 = u + ((<usize>row * <usize>rank) << 3);
    for (let j = 0; j < rank; j++) {
      store<f64>(u0 + ((<usize>j) << 3), dot4(a + <usize>j * rowF64, h, dim));
    }
    const z0 = z + <usize>row * rowF64;
    let k = 0;
    for (; k < d2; k += 2) {
      let v = f64x2.splat(0);
      const kb = (<usize>k) << 3;
      for (let j = 0; j < rank; j++) {
        const bj = v128.load(bT + <usize>j * rowF64 + kb);
        v = f64x2.add(v, f64x2.mul(bj, v128.load64_splat(u0 + ((<usize>j) << 3))));
      }
      const hv = f64x2.promote_low_f32x4(v128.load64_zero(h + ((<usize>k) << 2)));
      v128.store(z0 + kb, f64x2.add(hv, v));
    }
    for (; k < dim; k++) {
      let v: f64 = 0;
      for (let j = 0; j < rank; j++) {
        v +=
          load<f64>(bT + <usize>j * rowF64 + ((<usize>k) << 3)) * load<f64>(u0 + ((<usize>j) << 3));
      }
      store<f64>(z0 + ((<usize>k) << 3), <f64>load<f32>(h + ((<usize>k) << 2)) + v);
    }
    let hh: f64 = 0;
    let zz: f64 = 0;
    for (k = 0; k < dim; k++) {
      const hk = <f64>load<f32>(h + ((<usize>k) << 2));
      const zk = load<f64>(z0 + ((<usize>k) << 3));
      hh += hk * hk;
      zz += zk * zk;
    }
    const hn = Math.sqrt(hh);
    const zn = Math.sqrt(zz);
    const scale = hn / Math.max(zn, NORM_EPSILON);
    store<f64>(hNorm + ((<usize>row) << 3), hn);
    store<f64>(zNorm + ((<usize>row) << 3), zn);
    const o0 = out + <usize>row * rowF64;
    for (k = 0; k < d2; k += 2) {
      const kb = (<usize>k) << 3;
      v128.store(o0 + kb, f64x2.mul(v128.load(z0 + kb), f64x2.splat(scale)));
    }
    for (; k < dim; k++) {
      const kb = (<usize>k) << 3;
      store<f64>(o0 + kb, load<f64>(z0 + kb) * scale);
    }
  }
}

/**
 * The largest `Σ_k x[t, k]²` over the float32 rows `t < tokens` of `x [· × dim]`, each sum
 * sequential over `k` from zero as `maxTokenNorm` (maxsim-exact.ts) sums it (SIMD lanes are
 * rows, eight at a time); NaN sums are passed over, as its `>` does.
 */
export function maxSquaredNorm(x: usize, tokens: i32, dim: i32): f64 {
  let most: f64 = 0;
  const rowBytes = (<usize>dim) << 2;
  let t = 0;
  for (; t + 8 <= tokens; t += 8) {
    const r = x + <usize>t * rowBytes;
    let s0 = f64x2.splat(0);
    let s1 = f64x2.splat(0);
    let s2 = f64x2.splat(0);
    let s3 = f64x2.splat(0);
    for (let k = 0; k < dim; k++) {
      const p = r + ((<usize>k) << 2);
      const v0 = pair(p, rowBytes);
      const v1 = pair(p + 2 * rowBytes, rowBytes);
      const v2 = pair(p + 4 * rowBytes, rowBytes);
      const v3 = pair(p + 6 * rowBytes, rowBytes);
      s0 = f64x2.add(s0, f64x2.mul(v0, v0));
      s1 = f64x2.add(s1, f64x2.mul(v1, v1));
      s2 = f64x2.add(s2, f64x2.mul(v2, v2));
      s3 = f64x2.add(s3, f64x2.mul(v3, v3));
    }
    most = larger(most, s0);
    most = larger(most, s1);
    most = larger(most, s2);
    most = larger(most, s3);
  }
  for (; t < tokens; t++) {
    const a = x + <usize>t * rowBytes;
    let s: f64 = 0;
    for (let k = 0; k < dim; k++) {
      const v = <f64>load<f32>(a + ((<usize>k) << 2));
      s += v * v;
    }
    if (s > most) most = s;
  }
  return most;
}

/** The float32 values at `p` and `p + stride`, as float64 lanes. */
function pair(p: usize, stride: usize): v128 {
  return f64x2.promote_low_f32x4(v128.load32_lane(p + stride, v128.load32_zero(p), 1));
}

/** `most` after `if (s > most) most = s` for lane 0, then lane 1. */
function larger(most: f64, s: v128): f64 {
  const s0 = f64x2.extract_lane(s, 0);
  const s1 = f64x2.extract_lane(s, 1);
  if (s0 > most) most = s0;
  if (s1 > most) most = s1;
  return most;
}
