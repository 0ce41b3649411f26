// MaxSim's backward for the adapter's WebAssembly kernel (exported by kernel.ts; see there).

/**
 * `maxSimBackward` (equal bit for bit to `maxSimBackwardBlocked` on a zeroed gradient) of
 * `count` queries against one candidate set: for each memory `m` ascending, for each query
 * with `g = gradScores[m] / rows ≠ 0`, for each row with a token, `gradQuery[i, k] += g ·
 * x[argmax, k]` — each entry summed in the reference's order (queries never mix); SIMD lanes
 * are adjacent entries (dimensions). In chunks of {@link CHUNK} memories across the batch, so
 * a chunk's tokens are read from memory once for all the queries, each row's gradient held in
 * registers across the chunk, sixteen entries at a time. `table`: per query 16 bytes — argmax (i32 `[rows × memories]`),
 * gradScores (f64 `[memories]`), rows, gradQuery (f64 `[rows × dim]`).
 */
export function backwardMany(x: usize, dim: i32, memories: i32, table: usize, count: i32): void {
  for (let m0 = 0; m0 < memories; m0 += CHUNK) {
    const m1 = min(m0 + CHUNK, memories);
    for (let e = table; e < table + ((<usize>count) << 4); e += 16) {
      const rows = load<i32>(e, 8);
      if (rows == 0) continue;
      const inv = 1 / <f64>rows;
      const argmax = <usize>load<u32>(e);
      const gradScores = <usize>load<u32>(e, 4);
      const gradQuery = <usize>load<u32>(e, 12);
      for (let i = 0; i < rows; i++) {
        chunkRow(x, dim, memories, m0, m1, inv, argmax, gradScores, i, gradQuery);
      }
    }
  }
}

/** Memories per register pass of {@link backwardMany}. */
const CHUNK = 16;

/**
 * Row `i` of one query, memories `m0 .. m1`: `gradQuery[i, k] += g_m · x[argmax, k]` for each
 * memory in ascending order, sixteen dimensions at a time held in registers across the chunk
 * (each entry's additions in the reference's order, from its current value).
 */
function chunkRow(
  x: usize,
  dim: i32,
  memories: i32,
  m0: i32,
  m1: i32,
  inv: f64,
  argmax: usize,
  gradScores: usize,
  i: i32,
  gradQuery: usize,
): void {
  const rowBytes = (<usize>dim) << 2;
  const q = gradQuery + ((<usize>i * <usize>dim) << 3);
  const at = argmax + ((<usize>i * <usize>memories) << 2);
  const d16 = dim & ~15;
  let k = 0;
  for (; k < d16; k += 16) {
    const kx = (<usize>k) << 2;
    const qk = q + ((<usize>k) << 3);
    let a0 = v128.load(qk);
    let a1 = v128.load(qk, 16);
    let a2 = v128.load(qk, 32);
    let a3 = v128.load(qk, 48);
    let a4 = v128.load(qk, 64);
    let a5 = v128.load(qk, 80);
    let a6 = v128.load(qk, 96);
    let a7 = v128.load(qk, 112);
    for (let m = m0; m < m1; m++) {
      const g = load<f64>(gradScores + ((<usize>m) << 3)) * inv;
      const t = load<i32>(at + ((<usize>m) << 2));
      if (g == 0 || t < 0) continue; // as the reference: no term at all
      const gv = f64x2.splat(g);
      const p = x + <usize>t * rowBytes + kx;
      a0 = f64x2.add(a0, f64x2.mul(gv, f64x2.promote_low_f32x4(v128.load64_zero(p))));
      a1 = f64x2.add(a1, f64x2.mul(gv, f64x2.promote_low_f32x4(v128.load64_zero(p, 8))));
      a2 = f64x2.add(a2, f64x2.mul(gv, f64x2.promote_low_f32x4(v128.load64_zero(p, 16))));
      a3 = f64x2.add(a3, f64x2.mul(gv, f64x2.promote_low_f32x4(v128.load64_zero(p, 24))));
      a4 = f64x2.add(a4, f64x2.mul(gv, f64x2.promote_low_f32x4(v128.load64_zero(p, 32))));
      a5 = f64x2.add(a5, f64x2.mul(gv, f64x2.promote_low_f32x4(v128.load64_zero(p, 40))));
      a6 = f64x2.add(a6, f64x2.mul(gv, f64x2.promote_low_f32x4(v128.load64_zero(p, 48))));
      a7 = f64x2.add(a7, f64x2.mul(gv, f64x2.promote_low_f32x4(v128.load64_zero(p, 56))));
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
    for (let m = m0; m < m1; m++) {
      const g = load<f64>(gradScores + ((<usize>m) << 3)) * inv;
      const t = load<i32>(at + ((<usize>m) << 2));
      if (g == 0 || t < 0) continue;
      a += g * <f64>load<f32>(x + <usize>t * rowBytes + ((<usize>k) << 2));
    }
    store<f64>(qk, a);
  }
}

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
