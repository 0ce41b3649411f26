/**
 * How the `onnxruntime` kernel cuts a candidate set for its MatMuls: consecutive slices of
 * whole memories of about {@link ORT_SLICE_BYTES} of tokens, so that the exact maxima of a
 * slice's memories run right after its MatMul, while its tokens are still in cache (a
 * LoCoMo-sized set is 30 MiB, beyond the caches; one slice about the size of a core's L2).
 */

/** Memories `from .. to` of a candidate set, whose tokens are `token0 .. token1`. */
export interface MemorySlice {
  readonly from: number;
  readonly to: number;
  readonly token0: number;
  readonly token1: number;
}

/** Bytes of candidate tokens per MatMul slice (default; predeclared, not tuned). */
export const ORT_SLICE_BYTES = 1024 * 1024;

/**
 * Memories `0 .. M` cut into consecutive slices of at most `bytes` of tokens each (at least
 * one memory per slice), when the memories' tokens are consecutive (non-decreasing offsets
 * within `[0, tokens]`); otherwise one slice of every token.
 * @example memorySlices([0, 2, 4, 7], 7, 1, 16); // [{ from: 0, to: 2, token0: 0, token1: 4 }, { from: 2, to: 3, token0: 4, token1: 7 }]
 */
export function memorySlices(
  offsets: ArrayLike<number>,
  tokens: number,
  dim: number,
  bytes = ORT_SLICE_BYTES,
): MemorySlice[] {
  const memories = offsets.length - 1;
  const whole = [{ from: 0, to: memories, token0: 0, token1: tokens }];
  for (let m = 0; m < memories; m++) {
    if (!(offsets[m]! <= offsets[m + 1]!)) return whole;
  }
  if (memories <= 0 || !(offsets[0]! >= 0 && offsets[memories]! <= tokens)) return whole;
  const most = Math.max(1, Math.floor(bytes / (dim * 4)));
  const slices: MemorySlice[] = [];
  let from = 0;
  while (from < memories) {
    let to = from + 1;
    while (to < memories && offsets[to + 1]! - offsets[from]! <= most) to += 1;
    slices.push({ from, to, token0: offsets[from]!, token1: offsets[to]! });
    from = to;
  }
  return slices;
}
