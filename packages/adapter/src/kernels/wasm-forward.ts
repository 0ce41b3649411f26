/**
 * The adapter's forward pass on the WebAssembly kernel (`assembly/forward.ts`), bit for bit as
 * `applyAdapterInto` (model.ts) computes it with a forward cache: `A` and `B` are copied into the
 * kernel's memory once for a whole batch of queries.
 */
import type { AdapterForwardCache, AdapterParams, FloatArray } from '../model.js';
import type { WasmKernel } from './wasm-kernel.js';

interface ForwardExports {
  adapterBackward(
    b: number,
    dim: number,
    rank: number,
    tokens: number,
    rows: number,
    u: number,
    z: number,
    hNorm: number,
    zNorm: number,
    gradOut: number,
    gradA: number,
    gradB: number,
    gz: number,
    gu: number,
  ): void;
  maxSquaredNorm(x: number, tokens: number, dim: number): number;
  adapterForward(
    a: number,
    bT: number,
    dim: number,
    rank: number,
    tokens: number,
    rows: number,
    u: number,
    z: number,
    hNorm: number,
    zNorm: number,
    out: number,
  ): void;
}

/** One query of a forward pass: its token rows, and where the results go. */
export interface ForwardItem {
  /** Float32 for {@link wasmAdapterForward}. */
  readonly tokens: FloatArray;
  readonly rows: number;
  /** Filled (`u`, `z`, `hNorm`, `zNorm`), as `applyAdapterInto` fills it. */
  readonly cache: AdapterForwardCache;
  /** `T` of each row, `[rows × dim]`. */
  readonly out: Float64Array;
}

/**
 * `applyAdapterInto(item.out, params, item.tokens, item.rows, item.cache)` for every item, bit
 * for bit, on `kernel`.
 */
export function wasmAdapterForward(
  kernel: WasmKernel,
  params: AdapterParams,
  items: readonly ForwardItem[],
): void {
  const { dim, rank, a, b } = params;
  let most = 0;
  for (const { tokens, rows, cache, out } of items) {
    if (!(tokens instanceof Float32Array))
      throw new Error('wasmAdapterForward: float32 tokens only');
    if (tokens.length !== rows * dim) {
      throw new Error(`applyAdapter: tokens hold ${tokens.length} values, not ${rows} × ${dim}`);
    }
    if (out.length < rows * dim || cache.rows < rows) {
      throw new Error(`applyAdapter: out or cache smaller than ${rows} × ${dim}`);
    }
    most = Math.max(most, rows);
  }
  const matrix = rank * dim * 8;
  const sizes = [matrix, matrix, most * dim * 4, most * rank * 8, most * dim * 8, most * 8];
  // A, Bᵀ, tokens, u, z, hNorm, zNorm, out
  const layout = [...sizes, sizes[5]!, sizes[4]!];
  kernel.withParts(layout, (at) => {
    const [pa, pb, pt, pu, pz, ph, pn, po] = at as [
      number,
      number,
      number,
      number,
      number,
      number,
      number,
      number,
    ];
    kernel.f64(pa, rank * dim).set(a.subarray(0, rank * dim));
    const bT = kernel.f64(pb, rank * dim);
    for (let k = 0; k < dim; k++) {
      for (let j = 0; j < rank; j++) bT[j * dim + k] = b[k * rank + j]!;
    }
    const run = (kernel.exports as ForwardExports).adapterForward;
    for (const { tokens, rows, cache, out } of items) {
      kernel.f32(pt, rows * dim).set(tokens as Float32Array);
      run(pa, pb, dim, rank, pt, rows, pu, pz, ph, pn, po);
      cache.u.set(kernel.f64(pu, rows * rank));
      cache.z.set(kernel.f64(pz, rows * dim));
      cache.hNorm.set(kernel.f64(ph, rows));
      cache.zNorm.set(kernel.f64(pn, rows));
      out.set(kernel.f64(po, rows * dim));
    }
  });
}

/** One query of {@link wasmAdapterBackward}: its tokens, forward cache and `∂L/∂T`. */
export interface BackwardItem {
  readonly tokens: Float32Array;
  readonly rows: number;
  readonly cache: AdapterForwardCache;
  readonly gradOut: Float64Array;
}

/**
 * `adapterBackward(params, item.tokens, item.rows, item.cache, item.gradOut, gradA, gradB)`
 * for each item in order, bit for bit, on `kernel`: `B`, `gradA` and `gradB` are copied in
 * once and the gradients out once, for the whole run.
 */
export function wasmAdapterBackward(
  kernel: WasmKernel,
  params: AdapterParams,
  items: readonly BackwardItem[],
  gradA: Float64Array,
  gradB: Float64Array,
): void {
  const { dim, rank, b } = params;
  if (gradA.length !== rank * dim || gradB.length !== dim * rank) {
    throw new Error(`adapterBackward: gradients must hold ${rank * dim} values each`);
  }
  let most = 0;
  for (const { rows, cache, gradOut } of items) {
    if (gradOut.length < rows * dim || cache.rows < rows) {
      throw new Error(`adapterBackward: gradOut or cache smaller than ${rows} × ${dim}`);
    }
    most = Math.max(most, rows);
  }
  const matrix = rank * dim * 8;
  // B, gradA, gradB, tokens, u, z, hNorm, zNorm, gradOut, gz, gu
  const sizes = [matrix, matrix, matrix, most * dim * 4, most * rank * 8, most * dim * 8];
  sizes.push(most * 8, most * 8, most * dim * 8, dim * 8, rank * 8);
  kernel.withParts(sizes, (at) => {
    const [pb, ga, gb, pt, pu, pz, ph, pn, go, gz, gu] = at as [
      number,
      number,
      number,
      number,
      number,
      number,
      number,
      number,
      number,
      number,
      number,
    ];
    kernel.f64(pb, rank * dim).set(b.subarray(0, rank * dim));
    kernel.f64(ga, rank * dim).set(gradA);
    kernel.f64(gb, rank * dim).set(gradB);
    const run = (kernel.exports as ForwardExports).adapterBackward;
    for (const { tokens, rows, cache, gradOut } of items) {
      kernel.f32(pt, rows * dim).set(tokens.subarray(0, rows * dim));
      kernel.f64(pu, rows * rank).set(cache.u.subarray(0, rows * rank));
      kernel.f64(pz, rows * dim).set(cache.z.subarray(0, rows * dim));
      kernel.f64(ph, rows).set(cache.hNorm.subarray(0, rows));
      kernel.f64(pn, rows).set(cache.zNorm.subarray(0, rows));
      kernel.f64(go, rows * dim).set(gradOut.subarray(0, rows * dim));
      run(pb, dim, rank, pt, rows, pu, pz, ph, pn, go, ga, gb, gz, gu);
    }
    gradA.set(kernel.f64(ga, rank * dim));
    gradB.set(kernel.f64(gb, rank * dim));
  });
}

/**
 * `maxTokenNorm(tokens at xPtr, tokens, dim)` (maxsim-exact.ts) of float32 tokens in the
 * kernel's memory, bit for bit.
 */
export function wasmMaxTokenNorm(
  kernel: WasmKernel,
  xPtr: number,
  tokens: number,
  dim: number,
): number {
  const most = (kernel.exports as ForwardExports).maxSquaredNorm(xPtr, tokens, dim);
  return Math.sqrt(most) * (1 + 2 ** -20);
}
