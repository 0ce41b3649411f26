// The adapter's backward for its WebAssembly kernel (exported by kernel.ts; see there). MaxSim's
// backward is fused into the maxima's pass (fused.ts).

/** `NORM_EPSILON` of model.ts. */
const NORM_EPSILON: f64 = 1e-12;

/**
 * `adapterBackward` of model.ts, bit for bit: adds `∂L/∂A` into `gradA [rank × dim]` and `∂L/∂B`
 * into `gradB [dim × rank]` (f64) from `gradOut [rows × dim]` (f64), the float32 `tokens` and
 * the forward cache (`u [rows × rank]`, `z [rows × dim]`, `hNorm`, `zNorm`; f64). Each entry
 * gets the reference's terms in the reference's order; SIMD lanes are adjacent entries. `gz`
 * (dim) and `gu` (rank) are f64 scratch. `b` is B (f64).
 */
export function adapterBackward(
  b: usize,
  dim: i32,
  rank: i32,
  tokens: usize,
  rows: i32,
  u: usize,
  z: usize,
  hNorm: usize,
  zNorm: usize,
  gradOut: usize,
  gradA: usize,
  gradB: usize,
  gz: usize,
  gu: usize,
): void {
  const r2 = rank & ~1;
  const d4 = dim & ~3;
  for (let row = 0; row < rows; row++) {
    const n = load<f64>(hNorm + ((<usize>row) << 3));
    if (n == 0) continue; // T ≡ 0 around a zero row
    const s = load<f64>(zNorm + ((<usize>row) << 3));
    const h0 = <usize>row * <usize>dim;
    const g0 = gradOut + (h0 << 3);
    const z0 = z + (h0 << 3);
    if (s > NORM_EPSILON) {
      let zg: f64 = 0;
      for (let k = 0; k < dim; k++) {
        zg += load<f64>(z0 + ((<usize>k) << 3)) * load<f64>(g0 + ((<usize>k) << 3));
      }
      const c = n / s;
      const proj = zg / (s * s);
      for (let k = 0; k < dim; k++) {
        const kb = (<usize>k) << 3;
        store<f64>(gz + kb, c * (load<f64>(g0 + kb) - load<f64>(z0 + kb) * proj));
      }
    } else {
      const c = n / NORM_EPSILON;
      for (let k = 0; k < dim; k++) {
        const kb = (<usize>k) << 3;
        store<f64>(gz + kb, c * load<f64>(g0 + kb));
      }
    }
    memory.fill(gu, 0, (<usize>rank) << 3);
    const u0 = u + ((<usize>row * <usize>rank) << 3);
    for (let k = 0; k < dim; k++) {
      const g = load<f64>(gz + ((<usize>k) << 3));
      if (g == 0) continue;
      const gv = f64x2.splat(g);
      const rowB = (<usize>k * <usize>rank) << 3;
      let j = 0;
      for (; j < r2; j += 2) {
        const jb = (<usize>j) << 3;
        const gb = gradB + rowB + jb;
        v128.store(gb, f64x2.add(v128.load(gb), f64x2.mul(gv, v128.load(u0 + jb))));
        const uu = gu + jb;
        v128.store(uu, f64x2.add(v128.load(uu), f64x2.mul(v128.load(b + rowB + jb), gv)));
      }
      for (; j < rank; j++) {
        const jb = (<usize>j) << 3;
        const gb = gradB + rowB + jb;
        store<f64>(gb, load<f64>(gb) + g * load<f64>(u0 + jb));
        store<f64>(gu + jb, load<f64>(gu + jb) + load<f64>(b + rowB + jb) * g);
      }
    }
    const t0 = tokens + (h0 << 2);
    for (let j = 0; j < rank; j++) {
      const g = load<f64>(gu + ((<usize>j) << 3));
      if (g == 0) continue;
      const gv = f64x2.splat(g);
      const a0 = gradA + ((<usize>j * <usize>dim) << 3);
      let k = 0;
      for (; k < d4; k += 4) {
        const ab = a0 + ((<usize>k) << 3);
        const tb = t0 + ((<usize>k) << 2);
        const x0 = f64x2.promote_low_f32x4(v128.load64_zero(tb));
        const x1 = f64x2.promote_low_f32x4(v128.load64_zero(tb, 8));
        v128.store(ab, f64x2.add(v128.load(ab), f64x2.mul(gv, x0)));
        v128.store(ab, f64x2.add(v128.load(ab, 16), f64x2.mul(gv, x1)), 16);
      }
      for (; k < dim; k++) {
        const ab = a0 + ((<usize>k) << 3);
        store<f64>(ab, load<f64>(ab) + g * <f64>load<f32>(t0 + ((<usize>k) << 2)));
      }
    }
  }
}
