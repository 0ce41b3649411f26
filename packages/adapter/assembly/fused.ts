// The fused half of MaxSim's backward for the adapter's WebAssembly kernel (exported by
// kernel.ts): while a slice's tokens are still in cache after its exact maxima, each query's
// rows gather the slice's argmax tokens weighted by e^{s_m/τ − c} (`c` the running largest
// s_m/τ, the sum rescaled when it grows: an online softmax), so that the cross-entropy's
// gradient needs no second pass over the tokens (`loss-ort.ts` finishes it). Not the
// reference's summation order: equal to it within float64 rounding, not bit for bit.

/** Bytes of one query's entry: best, argmax, rows, acc, state (f64: the running max). */
export const FUSED_ENTRY = 20;

/** Query `e`'s score of memory `m`: the mean of its rows' maxima (finishMaxSimScores's order). */
function score(best: usize, rows: i32, memories: i32, m: i32, inv: f64): f64 {
  let sum: f64 = 0;
  for (let r = 0; r < rows; r++) {
    sum += load<f64>(best + ((<usize>r * <usize>memories + <usize>m) << 3));
  }
  return sum * inv;
}

/**
 * Memories `from .. to` for each of `count` queries of `table` ({@link FUSED_ENTRY} bytes
 * each: best f64 `[rows × M]`, argmax i32 `[rows × M]`, rows, acc f64 `[rows × dim]`, state
 * f64 `[1]`, the running max, −∞ at first): `acc[i] += e^{a_m − c} · x[argmax[i, m]]` for
 * `a_m = score_m · invTau`, after rescaling `acc` by `e^{c − c'}` when the slice's largest
 * `a_m` raises `c` to `c'`. Rows without a token (argmax −1) take nothing. `weights`: f64
 * scratch for `to − from` memories.
 */
export function accumulateMany(
  x: usize,
  dim: i32,
  memories: i32,
  table: usize,
  count: i32,
  from: i32,
  to: i32,
  invTau: f64,
  weights: usize,
): void {
  const rowBytes = (<usize>dim) << 2;
  for (let e = table; e < table + <usize>count * FUSED_ENTRY; e += FUSED_ENTRY) {
    const best = <usize>load<u32>(e);
    const argmax = <usize>load<u32>(e, 4);
    const rows = load<i32>(e, 8);
    const acc = <usize>load<u32>(e, 12);
    const state = <usize>load<u32>(e, 16);
    if (rows == 0) continue;
    const inv = 1 / <f64>rows;
    let c = load<f64>(state);
    // the slice's a_m into `weights` (then their e^{a_m − c} in place)
    let top: f64 = -Infinity;
    for (let m = from; m < to; m++) {
      const a = score(best, rows, memories, m, inv) * invTau;
      store<f64>(weights + ((<usize>(m - from)) << 3), a);
      top = max(top, a);
    }
    if (top > c) {
      if (c > -Infinity) {
        const f = f64x2.splat(Math.exp(c - top));
        const n = <usize>rows * <usize>dim;
        let k: usize = 0;
        for (; k + 2 <= n; k += 2) {
          const p = acc + (k << 3);
          v128.store(p, f64x2.mul(v128.load(p), f));
        }
        for (; k < n; k++)
          store<f64>(acc + (k << 3), load<f64>(acc + (k << 3)) * f64x2.extract_lane(f, 0));
      }
      c = top;
      store<f64>(state, c);
    }
    for (let m = from; m < to; m++) {
      const w = weights + ((<usize>(m - from)) << 3);
      store<f64>(w, Math.exp(load<f64>(w) - c));
    }
    for (let i = 0; i < rows; i++) {
      const q = acc + ((<usize>i * <usize>dim) << 3);
      const at = argmax + ((<usize>i * <usize>memories) << 2);
      gatherRow(x, rowBytes, dim, q, at, weights, from, to);
    }
  }
}

/**
 * One row's share of {@link accumulateMany}: `q[k] += w[m] · x[at[m], k]` for memories
 * `from .. to` in order (skipping zero weights and rows without a token), sixteen dimensions
 * at a time held in registers across the memories (each entry's additions in memory order).
 */
function gatherRow(
  x: usize,
  rowBytes: usize,
  dim: i32,
  q: usize,
  at: usize,
  weights: usize,
  from: i32,
  to: i32,
): void {
  const d16 = dim & ~15;
  let k = 0;
  for (; k < d16; k += 16) {
    const qk = q + ((<usize>k) << 3);
    const kx = (<usize>k) << 2;
    let a0 = v128.load(qk);
    let a1 = v128.load(qk, 16);
    let a2 = v128.load(qk, 32);
    let a3 = v128.load(qk, 48);
    let a4 = v128.load(qk, 64);
    let a5 = v128.load(qk, 80);
    let a6 = v128.load(qk, 96);
    let a7 = v128.load(qk, 112);
    for (let m = from; m < to; m++) {
      const w = load<f64>(weights + ((<usize>(m - from)) << 3));
      const t = load<i32>(at + ((<usize>m) << 2));
      if (w == 0 || t < 0) continue;
      const wv = f64x2.splat(w);
      const p = x + <usize>t * rowBytes + kx;
      const x0 = v128.load(p);
      const x1 = v128.load(p, 16);
      const x2 = v128.load(p, 32);
      const x3 = v128.load(p, 48);
      a0 = f64x2.add(a0, f64x2.mul(wv, f64x2.promote_low_f32x4(x0)));
      a1 = f64x2.add(
        a1,
        f64x2.mul(wv, f64x2.promote_low_f32x4(v128.shuffle<i32>(x0, x0, 2, 3, 2, 3))),
      );
      a2 = f64x2.add(a2, f64x2.mul(wv, f64x2.promote_low_f32x4(x1)));
      a3 = f64x2.add(
        a3,
        f64x2.mul(wv, f64x2.promote_low_f32x4(v128.shuffle<i32>(x1, x1, 2, 3, 2, 3))),
      );
      a4 = f64x2.add(a4, f64x2.mul(wv, f64x2.promote_low_f32x4(x2)));
      a5 = f64x2.add(
        a5,
        f64x2.mul(wv, f64x2.promote_low_f32x4(v128.shuffle<i32>(x2, x2, 2, 3, 2, 3))),
      );
      a6 = f64x2.add(a6, f64x2.mul(wv, f64x2.promote_low_f32x4(x3)));
      a7 = f64x2.add(
        a7,
        f64x2.mul(wv, f64x2.promote_low_f32x4(v128.shuffle<i32>(x3, x3, 2, 3, 2, 3))),
      );
    }
    v128.store(qk, a0);
    v128.store(qk, a1, 16);
    v128.store(qk, a2, 32);
    v128.store(qk, a3, 48);
    v128.store(qk, a4, 64);
    v128.store(qk, a5, 80);
    v128.store(qk, a6, 96);
    v128.store(qk, a7, 112);
  }
  for (; k < dim; k++) {
    const qk = q + ((<usize>k) << 3);
    let a = load<f64>(qk);
    for (let m = from; m < to; m++) {
      const w = load<f64>(weights + ((<usize>(m - from)) << 3));
      const t = load<i32>(at + ((<usize>m) << 2));
      if (w == 0 || t < 0) continue;
      a += w * <f64>load<f32>(x + <usize>t * rowBytes + ((<usize>k) << 2));
    }
    store<f64>(qk, a);
  }
}
