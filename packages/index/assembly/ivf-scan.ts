// AssemblyScript source of the clustered index's fast scan (`src/ivf/wasm-scan.ts` loads it;
// `scripts/build-wasm.mjs` compiles it into `src/ivf/wasm-bytes.ts`). Codes are laid out in
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
  let n = 0;
  for (let b = blockFrom; b < blockTo; b++) {
    sumBlock(codes + <usize>b * stride, tables, bytes, scratch);
    n = emit(scratch, b, threshold, outPlaces, outSums, n);
  }
  return n;
}

/** One byte's two lookups for 16 tokens, added (each entry ≤ 127: no overflow). */
function lookup(v: v128, t: usize): v128 {
  const nibble = i8x16.splat(0x0f);
  return i8x16.add(
    i8x16.swizzle(v128.load(t), v128.and(v, nibble)),
    i8x16.swizzle(v128.load(t, 16), i8x16.shr_u(v, 4)),
  );
}

/**
 * Block at `p`: its 16 sums to `scratch` as two u16x8 (even places, then odd). While summing,
 * lane i of `even` holds token 2i in its low byte plus 256 · token 2i+1 (removed at the end).
 */
function sumBlock(p: usize, tables: usize, bytes: i32, scratch: usize): void {
  let even = i16x8.splat(0);
  let odd = i16x8.splat(0);
  let t = tables;
  for (let j = 0; j < bytes; j++) {
    const x = lookup(v128.load(p), t);
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
