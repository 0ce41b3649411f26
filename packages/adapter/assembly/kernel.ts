// AssemblyScript source of the adapter's WebAssembly kernel (`src/kernels/wasm-kernel.ts` loads it;
// `scripts/build-wasm.mjs` compiles it into `src/kernels/wasm-bytes.ts`). The float64 work of
// MaxSim's exact maxima and its backward, bit for bit as the JavaScript reference
// (`maxSimFromSimilarities`, `maxSimBackwardBlocked`): IEEE float64 in WebAssembly is exact
// and never contracted into FMA, every sum keeps the reference's order, and SIMD lanes only
// ever hold independent sums (two query rows, or the interleaved partial sums of `dot`).
// Every pointer is a byte offset into the (imported) linear memory.

import { dot4, seqDot, seqDots4 } from './dots';

/** `EMPTY_MEMORY_SIMILARITY` of loss.ts. */
const EMPTY: f64 = -1;

/**
 * Row `i` of memory `m`: the exact maximum over the tokens `from .. end` whose float32 score
 * reaches `threshold`, ascending, strict `>` (the reference's `exactRow`). Returns false when
 * no token qualifies (NaN scores).
 */
function exactRow(
  sims: usize,
  stride: i32,
  column: i32,
  query: usize,
  dim: i32,
  x: usize,
  sequential: bool,
  threshold: f64,
  from: i32,
  end: i32,
  bestAt: usize,
  argAt: usize,
): bool {
  let b: f64 = -Infinity;
  let arg: i32 = -1;
  for (let t = from; t < end; t++) {
    const v = <f64>load<f32>(sims + ((<usize>t * <usize>stride + <usize>column) << 2));
    if (!(v >= threshold)) continue;
    const xt = x + ((<usize>t * <usize>dim) << 2);
    const s = sequential ? seqDot(query, xt, dim) : dot4(query, xt, dim);
    if (s > b) {
      b = s;
      arg = t;
    }
  }
  if (arg < 0) return false;
  store<f64>(bestAt, b);
  store<i32>(argAt, arg);
  return true;
}

/** Bytes of one query's entry in a batch table: offset, query, rows, slack, best, argmax, qi. */
const ENTRY = 32;

/**
 * The blocked rows' query, pair-interleaved (`f64x2` lanes = two rows): pair `p`, lane `l` at
 * `qi[(p · dim + k) · 2 + l]`. `qi` is 16-byte aligned.
 */
function interleave(query: usize, rows: i32, dim: i32, qi: usize): void {
  const blocked = rows - (rows % 4);
  for (let p = 0; p < blocked >> 1; p++) {
    const qa = query + ((<usize>(2 * p) * <usize>dim) << 3);
    const qb = qa + ((<usize>dim) << 3);
    const dst = qi + ((<usize>p * <usize>dim) << 4);
    for (let k = 0; k < dim; k++) {
      store<f64>(dst + ((<usize>k) << 4), load<f64>(qa + ((<usize>k) << 3)));
      store<f64>(dst + ((<usize>k) << 4), load<f64>(qb + ((<usize>k) << 3)), 8);
    }
  }
}

/**
 * `maxSimFromSimilarities` without the final mean, for `count` queries against one candidate
 * set at once, memories `from .. to`: memory by memory, each query in turn — a memory's
 * tokens and its rows of the similarity matrix are read from memory once for the whole batch,
 * and every query's sums are its own, in the reference's order. `sims` is float32,
 * token-major with `stride` columns, its first row that of token `token0` (the tokens of
 * memories `from .. to` only need to be there); `x` the float32 tokens; `offsets` i32
 * `[M + 1]`; `table` one {@link ENTRY} per query: its column offset, query (f64 `[rows ×
 * dim]`), rows, slack (f64 `[rows]`), best (f64 `[rows × M]`), argmax (i32), qi (scratch of
 * `rows · dim · 8` bytes, 16-byte aligned, filled when `prepare` is set — the first call of
 * a batch); `work` scratch of `rows · 32 + 64` bytes for the largest `rows`. Returns 0, or
 * `1 + q` for the first query `q` with a row (i32 at `work`) and memory (at `work + 4`)
 * without a candidate (NaN scores).
 */
export function maxSimExactMany(
  sims: usize,
  stride: i32,
  x: usize,
  dim: i32,
  offsets: usize,
  memories: i32,
  table: usize,
  count: i32,
  work: usize,
  from: i32,
  to: i32,
  token0: i32,
  prepare: bool,
): i32 {
  if (prepare) {
    for (let q = 0; q < count; q++) {
      const e = table + <usize>q * ENTRY;
      interleave(load<u32>(e, 4), load<i32>(e, 8), dim, load<u32>(e, 24));
    }
  }
  // token t's row at `origin + t · stride · 4` (wrapping address arithmetic, as the loads do)
  const origin = sims - <usize>token0 * ((<usize>stride) << 2);
  for (let m = from; m < to; m++) {
    const start = load<i32>(offsets + ((<usize>m) << 2));
    const end = load<i32>(offsets + ((<usize>m) << 2), 4);
    for (let q = 0; q < count; q++) {
      const e = table + <usize>q * ENTRY;
      const failed = exactMemory(
        origin,
        stride,
        load<i32>(e),
        load<u32>(e, 4),
        load<i32>(e, 8),
        dim,
        x,
        m,
        start,
        end,
        memories,
        load<u32>(e, 12),
        load<u32>(e, 16),
        load<u32>(e, 20),
        work,
        load<u32>(e, 24),
      );
      if (failed >= 0) {
        store<i32>(work, failed);
        store<i32>(work, m, 4);
        return 1 + q;
      }
    }
  }
  return 0;
}

/**
 * Memory `m` (tokens `start .. end`) of one query: its exact maxima and argmax per row, as
 * the reference's per-memory step. Returns −1, or the first row without a candidate.
 */
function exactMemory(
  sims: usize,
  stride: i32,
  offset: i32,
  query: usize,
  rows: i32,
  dim: i32,
  x: usize,
  m: i32,
  start: i32,
  end: i32,
  memories: i32,
  slack: usize,
  best: usize,
  argmax: usize,
  work: usize,
  qiAligned: usize,
): i32 {
  const blocked = rows - (rows % 4);
  const r = <usize>rows;
  const top = work;
  const second = top + (r << 3);
  const threshold = second + (r << 3);
  const count = threshold + (r << 3);
  const first = count + (r << 2);
  const rows4 = rows & ~3;
  const sim0 = sims + ((<usize>offset) << 2);
  const rowStride = (<usize>stride) << 2;
  if (end <= start) {
    for (let i = 0; i < rows; i++) {
      const o = <usize>i * <usize>memories + <usize>m;
      store<f64>(best + (o << 3), EMPTY);
      store<i32>(argmax + (o << 2), -1);
    }
    return -1;
  }
  // Pass 1: largest and second largest float32 score per row, and where the largest is.
  // Float32 comparisons equal the reference's (float32 values compared as float64).
  const minus = f32x4.splat(-Infinity);
  for (let i = 0; i < rows4; i += 4) {
    v128.store(top + ((<usize>i) << 2), minus);
    v128.store(second + ((<usize>i) << 2), minus);
  }
  for (let i = rows4; i < rows; i++) {
    store<f32>(top + ((<usize>i) << 2), -Infinity);
    store<f32>(second + ((<usize>i) << 2), -Infinity);
  }
  for (let t = start; t < end; t++) {
    const o = sim0 + <usize>t * rowStride;
    const tv = i32x4.splat(t);
    for (let i = 0; i < rows4; i += 4) {
      const at = (<usize>i) << 2;
      const v = v128.load(o + at);
      const tp = v128.load(top + at);
      const sc = v128.load(second + at);
      const gt = f32x4.gt(v, tp);
      const gs = f32x4.gt(v, sc);
      v128.store(second + at, v128.bitselect(tp, v128.bitselect(v, sc, gs), gt));
      v128.store(top + at, v128.bitselect(v, tp, gt));
      v128.store(first + at, v128.bitselect(tv, v128.load(first + at), gt));
    }
    for (let i = rows4; i < rows; i++) {
      const at = (<usize>i) << 2;
      const v = load<f32>(o + at);
      const tp = load<f32>(top + at);
      if (v > tp) {
        store<f32>(second + at, tp);
        store<f32>(top + at, v);
        store<i32>(first + at, t);
      } else if (v > load<f32>(second + at)) store<f32>(second + at, v);
    }
  }
  let crowded = false;
  for (let i = 0; i < rows; i++) {
    const th = <f64>load<f32>(top + ((<usize>i) << 2)) - load<f64>(slack + ((<usize>i) << 3));
    store<f64>(threshold + ((<usize>i) << 3), th);
    const one = <f64>load<f32>(second + ((<usize>i) << 2)) < th;
    store<i32>(count + ((<usize>i) << 2), one ? 1 : 0);
    if (!one) crowded = true;
  }
  // Pass 2, only where needed: mark the rows with several candidates.
  if (crowded) {
    for (let t = start; t < end; t++) {
      const o = sim0 + <usize>t * rowStride;
      for (let i = 0; i < rows; i++) {
        const c = count + ((<usize>i) << 2);
        if (
          load<i32>(c) != 1 &&
          <f64>load<f32>(o + ((<usize>i) << 2)) >= load<f64>(threshold + ((<usize>i) << 3))
        ) {
          store<i32>(c, 2);
        }
      }
    }
  }
  let i = 0;
  for (; i < blocked; i += 4) {
    const c = count + ((<usize>i) << 2);
    const f = first + ((<usize>i) << 2);
    const o = <usize>i * <usize>memories + <usize>m;
    const mm = <usize>memories;
    if (
      load<i32>(c) == 1 &&
      load<i32>(c, 4) == 1 &&
      load<i32>(c, 8) == 1 &&
      load<i32>(c, 12) == 1
    ) {
      const t0 = load<i32>(f);
      const t1 = load<i32>(f, 4);
      const t2 = load<i32>(f, 8);
      const t3 = load<i32>(f, 12);
      const dimBytes = (<usize>dim) << 2;
      // the four sums into best[o], best[o + M], … through a 32-byte staging area
      const stage = (first + (r << 2) + 31) & ~(<usize>15);
      seqDots4(
        qiAligned + ((<usize>(i >> 1) * <usize>dim) << 4),
        x + <usize>t0 * dimBytes,
        x + <usize>t1 * dimBytes,
        x + <usize>t2 * dimBytes,
        x + <usize>t3 * dimBytes,
        dim,
        stage,
      );
      store<f64>(best + (o << 3), load<f64>(stage));
      store<f64>(best + ((o + mm) << 3), load<f64>(stage, 8));
      store<f64>(best + ((o + 2 * mm) << 3), load<f64>(stage, 16));
      store<f64>(best + ((o + 3 * mm) << 3), load<f64>(stage, 24));
      store<i32>(argmax + (o << 2), t0);
      store<i32>(argmax + ((o + mm) << 2), t1);
      store<i32>(argmax + ((o + 2 * mm) << 2), t2);
      store<i32>(argmax + ((o + 3 * mm) << 2), t3);
      continue;
    }
    for (let row = i; row < i + 4; row++) {
      const ok = exactOne(
        sims,
        stride,
        offset,
        query,
        dim,
        x,
        true,
        row,
        m,
        memories,
        start,
        end,
        threshold,
        count,
        first,
        best,
        argmax,
      );
      if (!ok) return row;
    }
  }
  for (; i < rows; i++) {
    const ok = exactOne(
      sims,
      stride,
      offset,
      query,
      dim,
      x,
      false,
      i,
      m,
      memories,
      start,
      end,
      threshold,
      count,
      first,
      best,
      argmax,
    );
    if (!ok) return i;
  }
  return -1;
}

function exactOne(
  sims: usize,
  stride: i32,
  offset: i32,
  query: usize,
  dim: i32,
  x: usize,
  sequential: bool,
  row: i32,
  m: i32,
  memories: i32,
  start: i32,
  end: i32,
  threshold: usize,
  count: usize,
  first: usize,
  best: usize,
  argmax: usize,
): bool {
  const one = load<i32>(count + ((<usize>row) << 2)) == 1;
  const from = one ? load<i32>(first + ((<usize>row) << 2)) : start;
  const o = <usize>row * <usize>memories + <usize>m;
  return exactRow(
    sims,
    stride,
    offset + row,
    query + ((<usize>row * <usize>dim) << 3),
    dim,
    x,
    sequential,
    load<f64>(threshold + ((<usize>row) << 3)),
    from,
    one ? from + 1 : end,
    best + (o << 3),
    argmax + (o << 2),
  );
}

export { adapterBackward } from './backward';
export { adapterForward, maxSquaredNorm } from './forward';
export { accumulateMany } from './fused';
