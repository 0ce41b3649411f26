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
