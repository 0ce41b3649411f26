// MaxSim's backward for the adapter's WebAssembly kernel (exported by kernel.ts; see there).

/**
 * `maxSimBackward` (equal bit for bit to `maxSimBackwardBlocked`): for each memory `m`
 * ascending with `g = gradScores[m] / rows ≠ 0`, for each row with a token, `gradQuery[i, k]
 * += g · x[argmax, k]` — each entry summed in the reference's order; SIMD lanes are adjacent
 * entries (dimensions). Memory-major, so a memory's few tokens stay in cache for every row.
 */
export function backward(
  argmax: usize,
  gradScores: usize,
  rows: i32,
  memories: i32,
  dim: i32,
  x: usize,
  gradQuery: usize,
): void {
  if (rows == 0) return;
  const inv: f64 = 1 / <f64>rows;
  const d8 = dim & ~7;
  const rowBytes = (<usize>dim) << 2;
  for (let m = 0; m < memories; m++) {
    const g = load<f64>(gradScores + ((<usize>m) << 3)) * inv;
    if (g == 0) continue; // as the reference: no term at all
    const gv = f64x2.splat(g);
    for (let i = 0; i < rows; i++) {
      const t = load<i32>(argmax + ((<usize>i * <usize>memories + <usize>m) << 2));
      if (t < 0) continue;
      const p = x + <usize>t * rowBytes;
      const q = gradQuery + ((<usize>i * <usize>dim) << 3);
      let k = 0;
      for (; k < d8; k += 8) {
        const pk = p + ((<usize>k) << 2);
        const qk = q + ((<usize>k) << 3);
        const x0 = f64x2.promote_low_f32x4(v128.load64_zero(pk));
        const x1 = f64x2.promote_low_f32x4(v128.load64_zero(pk, 8));
        const x2 = f64x2.promote_low_f32x4(v128.load64_zero(pk, 16));
        const x3 = f64x2.promote_low_f32x4(v128.load64_zero(pk, 24));
        v128.store(qk, f64x2.add(v128.load(qk), f64x2.mul(gv, x0)));
        v128.store(qk, f64x2.add(v128.load(qk, 16), f64x2.mul(gv, x1)), 16);
        v128.store(qk, f64x2.add(v128.load(qk, 32), f64x2.mul(gv, x2)), 32);
        v128.store(qk, f64x2.add(v128.load(qk, 48), f64x2.mul(gv, x3)), 48);
      }
      for (; k < dim; k++) {
        const qk = q + ((<usize>k) << 3);
        store<f64>(qk, load<f64>(qk) + g * <f64>load<f32>(p + ((<usize>k) << 2)));
      }
    }
  }
}
