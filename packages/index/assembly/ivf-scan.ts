// AssemblyScript source of the clustered index's fast scan (`src/ivf/wasm-scan.ts` loads it;
// `scripts/build-wasm.mjs` compiles it into `src/ivf/wasm-bytes.ts`, and with relaxed SIMD into
// `src/ivf/wasm-bytes-relaxed.ts`). Codes are laid out in
// blocks of 16 layout places, byte `j` of the block's 16 tokens side by side (`ivf/train.ts`);
// each nibble of a code byte indexes a 16-entry uint8 table (one dimension at 4 bits, two at 2
// bits), so one `i8x16.swizzle` looks up 16 tokens at once. Every pointer is a byte offset
// into the (imported) linear memory.

/**
 * Sums `Σ_j table[2j][lo(code_j)] + table[2j+1][hi(code_j)]` for every place of blocks
 * `blockFrom .. blockTo-1` and writes the places whose sum reaches `threshold` (0..65535) to
 * `outPlaces` (int32) and their sums to `outSums` (int32), in place order within each block.
 * `tables` holds `2 · bytes` tables of 16 uint8 entries, each ≤ 127 so that a byte's two
 * lookups add without overflow; their total over a token must be ≤ 65535 (the caller scales
 * them so). Returns how many places were written.
 */
export function scanBlocks(
  codes: usize,
  tables: usize,
  bytes: i32,
  blockFrom: i32,
  blockTo: i32,
  threshold: i32,
  outPlaces: usize,
  outSums: usize,
  scratch: usize,
): i32 {
  const stride = (<usize>bytes) << 4;
  // The nibble mask read from memory, not a constant: V8 then holds it in a register across
  // the loops instead of materialising it at every use.
  v128.store(scratch, i8x16.splat(0x0f), 64);
  const nibble = v128.load(scratch, 64);
  let n = 0;
  // One block at a time: a cluster's codes read in one sequential stream (two blocks side by
  // side, each table loaded once for both, measured slower in a search: the prefetcher lost
  // the stream at every pair).
  for (let b = blockFrom; b < blockTo; b++) {
    sumBlock(codes + <usize>b * stride, tables, bytes, nibble, scratch);
    n = emit(scratch, b, threshold, outPlaces, outSums, n);
  }
  return n;
}

/**
 * One byte's two lookups for 16 tokens, added (each entry ≤ 127: no overflow); the high
 * nibble shifted as 16-bit lanes and masked (one instruction each in V8, where `i8x16.shr_u`
 * is two).
 */
function lookup(v: v128, lo: v128, hi: v128, nibble: v128): v128 {
  return i8x16.add(
    swizzle(lo, v128.and(v, nibble)),
    swizzle(hi, v128.and(i16x8.shr_u(v, 4), nibble)),
  );
}

/**
 * A table lookup of 16 indices, each 0..15: built with relaxed SIMD, its swizzle (one
 * instruction in V8, where the plain one adds a saturating add for indices ≥ 16; for indices
 * below 16 both are defined and equal).
 */
function swizzle(table: v128, indices: v128): v128 {
  return ASC_FEATURE_RELAXED_SIMD
    ? i8x16.relaxed_swizzle(table, indices)
    : i8x16.swizzle(table, indices);
}

/**
 * Block at `p`: its 16 sums to `scratch` as two u16x8 (even places, then odd). While summing,
 * lane i of `even` holds token 2i in its low byte plus 256 · token 2i+1 (removed at the end).
 */
function sumBlock(p: usize, tables: usize, bytes: i32, nibble: v128, scratch: usize): void {
  let even = i16x8.splat(0);
  let odd = i16x8.splat(0);
  let t = tables;
  for (let j = 0; j < bytes; j++) {
    const x = lookup(v128.load(p), v128.load(t), v128.load(t, 16), nibble);
    even = i16x8.add(even, x);
    odd = i16x8.add(odd, i16x8.shr_u(x, 8));
    p += 16;
    t += 32;
  }
  v128.store(scratch, i16x8.sub(even, i16x8.shl(odd, 8)));
  v128.store(scratch, odd, 16);
}

/** Writes block `b`'s places (sums at `sums`: even, then odd) reaching `threshold`. */
function emit(sums: usize, b: i32, threshold: i32, outPlaces: usize, outSums: usize, n: i32): i32 {
  const limit = i16x8.splat(<i16>threshold);
  const pass =
    i16x8.bitmask(i16x8.ge_u(v128.load(sums), limit)) |
    (i16x8.bitmask(i16x8.ge_u(v128.load(sums, 16), limit)) << 8);
  if (pass === 0) return n;
  const place0 = b << 4;
  for (let i = 0; i < 8; i++) {
    if ((pass & (1 << i)) !== 0) {
      store<i32>(outPlaces + ((<usize>n) << 2), place0 + 2 * i);
      store<i32>(outSums + ((<usize>n) << 2), <i32>load<u16>(sums + ((<usize>i) << 1)));
      n++;
    }
    if ((pass & (1 << (i + 8))) !== 0) {
      store<i32>(outPlaces + ((<usize>n) << 2), place0 + 2 * i + 1);
      store<i32>(outSums + ((<usize>n) << 2), <i32>load<u16>(sums + 16 + ((<usize>i) << 1)));
      n++;
    }
  }
  return n;
}

/**
 * Fills `2 · bytes` nibble tables of 16 uint8 entries at `out` for one query row: entry `v` of
 * table `t` is `round((Σ_i q[d_i] · w[d_i][bucket_i(v)] − lows[t]) · scale)` over the
 * dimensions packed in nibble `t` (one at 4 bits: `d = t`; two at 2 bits: `d = 2t` with bucket
 * `v & 3`, `2t + 1` with `v >> 2`), rounded half up. Float64 throughout, in the order the
 * JavaScript definition sums (`q` float32 `[dim]`, `w` float32 `[dim × buckets]`, `lows`
 * float64 `[tables]`), so its tables are that definition's exactly (tested).
 */
export function fillTables(
  q: usize,
  w: usize,
  lows: usize,
  tables: i32,
  bits: i32,
  scale: f64,
  out: usize,
): void {
  const s = f64x2.splat(scale);
  for (let t = 0; t < tables; t++) {
    const lo = f64x2.splat(load<f64>(lows + ((<usize>t) << 3)));
    let entries: v128;
    if (bits === 4) {
      const x = f64x2.splat(<f64>load<f32>(q + ((<usize>t) << 2)));
      const wt = w + ((<usize>t) << 6);
      // Entries 2i, 2i + 1: (q[t] · w[t][v] − least) · scale.
      entries = table16(
        f64x2.mul(f64x2.sub(f64x2.mul(x, pairOf(wt)), lo), s),
        f64x2.mul(f64x2.sub(f64x2.mul(x, pairOf(wt + 8)), lo), s),
        f64x2.mul(f64x2.sub(f64x2.mul(x, pairOf(wt + 16)), lo), s),
        f64x2.mul(f64x2.sub(f64x2.mul(x, pairOf(wt + 24)), lo), s),
        f64x2.mul(f64x2.sub(f64x2.mul(x, pairOf(wt + 32)), lo), s),
        f64x2.mul(f64x2.sub(f64x2.mul(x, pairOf(wt + 40)), lo), s),
        f64x2.mul(f64x2.sub(f64x2.mul(x, pairOf(wt + 48)), lo), s),
        f64x2.mul(f64x2.sub(f64x2.mul(x, pairOf(wt + 56)), lo), s),
      );
    } else {
      const x = f64x2.splat(<f64>load<f32>(q + ((<usize>t) << 3)));
      const y = <f64>load<f32>(q + ((<usize>t) << 3) + 4);
      const wd = w + ((<usize>t) << 5);
      // Entries 2i, 2i + 1 (buckets v & 3 of dimension 2t, v >> 2 of 2t + 1):
      // (q[2t] · w[2t][v & 3] + q[2t+1] · w[2t+1][v >> 2] − least) · scale.
      const a01 = f64x2.mul(x, pairOf(wd));
      const a23 = f64x2.mul(x, pairOf(wd + 8));
      const b0 = f64x2.splat(y * <f64>load<f32>(wd + 16));
      const b1 = f64x2.splat(y * <f64>load<f32>(wd + 20));
      const b2 = f64x2.splat(y * <f64>load<f32>(wd + 24));
      const b3 = f64x2.splat(y * <f64>load<f32>(wd + 28));
      entries = table16(
        f64x2.mul(f64x2.sub(f64x2.add(a01, b0), lo), s),
        f64x2.mul(f64x2.sub(f64x2.add(a23, b0), lo), s),
        f64x2.mul(f64x2.sub(f64x2.add(a01, b1), lo), s),
        f64x2.mul(f64x2.sub(f64x2.add(a23, b1), lo), s),
        f64x2.mul(f64x2.sub(f64x2.add(a01, b2), lo), s),
        f64x2.mul(f64x2.sub(f64x2.add(a23, b2), lo), s),
        f64x2.mul(f64x2.sub(f64x2.add(a01, b3), lo), s),
        f64x2.mul(f64x2.sub(f64x2.add(a23, b3), lo), s),
      );
    }
    v128.store(out + ((<usize>t) << 4), entries);
  }
}

/** Two float32 buckets at `at`, widened to float64. */
function pairOf(at: usize): v128 {
  return f64x2.promote_low_f32x4(v128.load64_zero(at));
}

/** `Math.round` of two values ≥ 0: `floor(y + ½)`, less one where that sum rounded up past `y`'s nearest integer; as int32 in lanes 0, 1 (2, 3 zero). */
function rounded(y: v128): v128 {
  const half = f64x2.splat(0.5);
  const r = f64x2.floor(f64x2.add(y, half));
  const fixed = v128.bitselect(f64x2.sub(r, f64x2.splat(1)), r, f64x2.gt(f64x2.sub(r, half), y));
  return i32x4.trunc_sat_f64x2_u_zero(fixed);
}

/** Sixteen entries (eight pairs, each 0..127) rounded and packed into bytes, in order. */
function table16(
  p0: v128,
  p1: v128,
  p2: v128,
  p3: v128,
  p4: v128,
  p5: v128,
  p6: v128,
  p7: v128,
): v128 {
  const q0 = i64x2.shuffle(rounded(p0), rounded(p1), 0, 2);
  const q1 = i64x2.shuffle(rounded(p2), rounded(p3), 0, 2);
  const q2 = i64x2.shuffle(rounded(p4), rounded(p5), 0, 2);
  const q3 = i64x2.shuffle(rounded(p6), rounded(p7), 0, 2);
  return i8x16.narrow_i16x8_u(i16x8.narrow_i32x4_u(q0, q1), i16x8.narrow_i32x4_u(q2, q3));
}

/**
 * The best `n` (1 ≤ n ≤ count) of one query row's `count` centroid scores (float32, finite, at
 * `scores`) in probe order — score descending, equal scores by the smaller cluster — their
 * clusters written to `outIds` (int32) and scores to `outVals` (float32); `spare` holds room for
 * `count` int32. Returns `n`.
 *
 * With `sampled` (1) and a row long against `n`, a threshold is taken first: the `⌈2n / 16⌉`-th best of
 * every 16th score, which about `2n` scores reach. The scores that reach it are gathered in
 * cluster order (SIMD compares, four at a time) and the best `n` selected among them: every one
 * of the best `n` is there whenever at least `n` reached it (the n-th best is then at or above
 * it). Fewer than `n`, or without `sampled`: the whole row is selected from.
 */
export function probeTop(
  scores: usize,
  count: i32,
  n: i32,
  outIds: usize,
  outVals: usize,
  spare: usize,
  sampled: i32,
): i32 {
  const pick = (2 * n + SAMPLE_STEP - 1) / SAMPLE_STEP;
  if (sampled !== 0 && count / SAMPLE_STEP >= 4 * pick) {
    const t = sampleThreshold(scores, count, pick, outVals);
    const k = gather(scores, count, t, spare);
    if (k >= n) {
      selectFrom(scores, spare, k, n, outIds, outVals);
      return n;
    }
  }
  selectAll(scores, count, n, outIds, outVals);
  return n;
}

/** Scores between the sampled ones ({@link probeTop}'s threshold). */
const SAMPLE_STEP = 16;

/** The `pick`-th best of every {@link SAMPLE_STEP}-th score (`work`: room for `pick` float32). */
function sampleThreshold(scores: usize, count: i32, pick: i32, work: usize): f32 {
  let kept = 0;
  for (let i = 0; i < count; i += SAMPLE_STEP) {
    const s = load<f32>(scores + ((<usize>i) << 2));
    if (kept === pick && !(s > load<f32>(work + ((<usize>(pick - 1)) << 2)))) continue;
    let p = kept === pick ? pick - 1 : kept++;
    while (p > 0 && s > load<f32>(work + ((<usize>(p - 1)) << 2))) {
      store<f32>(work + ((<usize>p) << 2), load<f32>(work + ((<usize>(p - 1)) << 2)));
      p--;
    }
    store<f32>(work + ((<usize>p) << 2), s);
  }
  return load<f32>(work + ((<usize>(pick - 1)) << 2));
}

/** Writes the clusters whose score is at least `t` to `out` (int32, in cluster order); returns how many. */
function gather(scores: usize, count: i32, t: f32, out: usize): i32 {
  const tv = f32x4.splat(t);
  let k = 0;
  let i = 0;
  for (; i + 4 <= count; i += 4) {
    const mask = i32x4.bitmask(f32x4.ge(v128.load(scores + ((<usize>i) << 2)), tv));
    if (mask === 0) continue;
    for (let j = 0; j < 4; j++) {
      if ((mask & (1 << j)) !== 0) {
        store<i32>(out + ((<usize>k) << 2), i + j);
        k++;
      }
    }
  }
  for (; i < count; i++) {
    if (load<f32>(scores + ((<usize>i) << 2)) >= t) {
      store<i32>(out + ((<usize>k) << 2), i);
      k++;
    }
  }
  return k;
}

/** The best `n` of the `k` clusters listed at `from` (ascending) into `outIds`, `outVals`. */
function selectFrom(
  scores: usize,
  from: usize,
  k: i32,
  n: i32,
  outIds: usize,
  outVals: usize,
): void {
  let i = 0;
  for (; i < n; i++) {
    const id = load<i32>(from + ((<usize>i) << 2));
    insert(load<f32>(scores + ((<usize>id) << 2)), id, i, outIds, outVals);
  }
  let worst = load<f32>(outVals + ((<usize>(n - 1)) << 2));
  for (; i < k; i++) {
    const id = load<i32>(from + ((<usize>i) << 2));
    const s = load<f32>(scores + ((<usize>id) << 2));
    if (s > worst) {
      insert(s, id, n - 1, outIds, outVals);
      worst = load<f32>(outVals + ((<usize>(n - 1)) << 2));
    }
  }
}

/**
 * The best `n` of the whole row: after the first `n`, four scores at a time are compared with the
 * n-th kept one and only those above it inserted (the kept ones came first, so an equal score
 * stays out).
 */
function selectAll(scores: usize, count: i32, n: i32, outIds: usize, outVals: usize): void {
  let i = 0;
  for (; i < n; i++) insert(load<f32>(scores + ((<usize>i) << 2)), i, i, outIds, outVals);
  let worst = load<f32>(outVals + ((<usize>(n - 1)) << 2));
  let w = f32x4.splat(worst);
  for (; i + 4 <= count; i += 4) {
    if (!v128.any_true(f32x4.gt(v128.load(scores + ((<usize>i) << 2)), w))) continue;
    for (let j = i; j < i + 4; j++) {
      const s = load<f32>(scores + ((<usize>j) << 2));
      if (s > worst) {
        insert(s, j, n - 1, outIds, outVals);
        worst = load<f32>(outVals + ((<usize>(n - 1)) << 2));
      }
    }
    w = f32x4.splat(worst);
  }
  for (; i < count; i++) {
    const s = load<f32>(scores + ((<usize>i) << 2));
    if (s > worst) {
      insert(s, i, n - 1, outIds, outVals);
      worst = load<f32>(outVals + ((<usize>(n - 1)) << 2));
    }
  }
}

/** Puts `(s, id)` at place `p` or above it, past every kept score `s` exceeds (equal ones stay above). */
function insert(s: f32, id: i32, p: i32, outIds: usize, outVals: usize): void {
  while (p > 0) {
    const above = load<f32>(outVals + ((<usize>(p - 1)) << 2));
    if (!(s > above)) break;
    store<f32>(outVals + ((<usize>p) << 2), above);
    store<i32>(outIds + ((<usize>p) << 2), load<i32>(outIds + ((<usize>(p - 1)) << 2)));
    p--;
  }
  store<f32>(outVals + ((<usize>p) << 2), s);
  store<i32>(outIds + ((<usize>p) << 2), id);
}
