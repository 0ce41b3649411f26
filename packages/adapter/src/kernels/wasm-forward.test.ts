import { describe, expect, it } from 'vitest';
import { maxTokenNorm } from '../loss/maxsim-exact.js';
import {
  adapterBackward,
  applyAdapterInto,
  createForwardCache,
  initAdapterParams,
} from '../model.js';
import { Prng } from '../prng.js';
import {
  wasmAdapterBackward,
  wasmAdapterForward,
  wasmMaxTokenNorm,
  type ForwardItem,
} from './wasm-forward.js';
import { WasmKernel } from './wasm-kernel.js';

describe('wasmAdapterForward (the adapter forward in WebAssembly)', () => {
  it('gives applyAdapterInto bit for bit: odd rank and dim, zero rows, B = 0, a huge B', () => {
    const kernel = new WasmKernel();
    for (const [dim, rank, rows, bScale] of [
      [23, 3, 5, 0.05],
      [384, 32, 12, 0.02],
      [31, 7, 1, 0],
      [9, 9, 3, 1e6],
    ] as const) {
      const prng = new Prng(dim * 7 + rank);
      const params = initAdapterParams(dim, rank, 4, 0.05);
      params.b.forEach((_, k) => (params.b[k] = bScale * prng.normal()));
      const items: (ForwardItem & { readonly expected: Float64Array; cacheRef: unknown })[] = [];
      for (const n of [rows, 2, 1]) {
        const tokens = Float32Array.from({ length: n * dim }, () => prng.normal());
        if (n > 1) tokens.fill(0, dim, 2 * dim); // row 1 is zero
        const ref = createForwardCache(n, dim, rank);
        const expected = applyAdapterInto(new Float64Array(n * dim), params, tokens, n, ref);
        items.push({
          tokens,
          rows: n,
          cache: createForwardCache(n, dim, rank),
          out: new Float64Array(n * dim).fill(Number.NaN),
          expected,
          cacheRef: ref,
        });
      }
      wasmAdapterForward(kernel, params, items);
      for (const item of items) {
        expect(item.out).toEqual(item.expected);
        expect(item.cache).toEqual(item.cacheRef);
      }
    }
    expect(kernel.used).toBe(0); // everything it took came back
  });

  it('refuses float64 tokens and shapes that do not fit', () => {
    const kernel = new WasmKernel();
    const params = initAdapterParams(8, 2, 1);
    const item = (tokens: Float32Array | Float64Array, rows: number): ForwardItem => ({
      tokens,
      rows,
      cache: createForwardCache(rows, 8, 2),
      out: new Float64Array(rows * 8),
    });
    expect(() => wasmAdapterForward(kernel, params, [item(new Float64Array(8), 1)])).toThrow(
      /float32/,
    );
    expect(() => wasmAdapterForward(kernel, params, [item(new Float32Array(9), 1)])).toThrow(
      /tokens hold 9 values/,
    );
  });
});

describe('wasmMaxTokenNorm', () => {
  it('gives maxTokenNorm bit for bit (rows beside multiples of eight, the longest anywhere, NaN)', () => {
    const kernel = new WasmKernel();
    for (const [tokens, dim, longest] of [
      [1, 5, 0],
      [8, 384, 7],
      [13, 31, 12],
      [21, 24, 3],
    ] as const) {
      const prng = new Prng(tokens * dim);
      const x = new Float32Array(tokens * dim);
      for (let t = 0; t < tokens; t++) {
        const row = Array.from({ length: dim }, () => prng.normal());
        const scale = (t === longest ? 1.5 : 1) / Math.hypot(...row);
        row.forEach((v, k) => (x[t * dim + k] = v * scale));
      }
      const ptr = kernel.alloc(x.byteLength);
      kernel.f32(ptr, x.length).set(x);
      const got = wasmMaxTokenNorm(kernel, ptr, tokens, dim);
      expect(got).toBe(maxTokenNorm(x, tokens, dim));
      expect(got).toBeGreaterThan(1.2); // the longest row decides
      if (tokens > 1) {
        kernel.f32(ptr, x.length)[((longest + 1) % tokens) * dim] = Number.NaN;
        x[((longest + 1) % tokens) * dim] = Number.NaN;
        expect(wasmMaxTokenNorm(kernel, ptr, tokens, dim)).toBe(maxTokenNorm(x, tokens, dim));
      }
      kernel.free(ptr, x.byteLength);
    }
  });
});

describe('wasmAdapterBackward', () => {
  it('gives adapterBackward over a run of queries bit for bit, added into non-zero gradients', () => {
    const kernel = new WasmKernel();
    for (const [dim, rank] of [
      [23, 3],
      [384, 32],
    ] as const) {
      const prng = new Prng(dim + 2 * rank);
      const params = initAdapterParams(dim, rank, 4, 0.05);
      params.b.forEach((_, k) => (params.b[k] = 0.03 * prng.normal()));
      const items = [5, 1, 12].map((rows, n) => {
        const tokens = Float32Array.from({ length: rows * dim }, () => prng.normal());
        if (n === 0) tokens.fill(0, dim, 2 * dim); // a zero row
        const cache = createForwardCache(rows, dim, rank);
        applyAdapterInto(new Float64Array(rows * dim), params, tokens, rows, cache);
        if (n === 2) cache.zNorm[3] = 1e-13; // the ε branch
        const gradOut = Float64Array.from({ length: rows * dim }, () => prng.normal());
        return { tokens, rows, cache, gradOut };
      });
      const start = Float64Array.from({ length: rank * dim }, () => prng.normal());
      const expected = { a: start.slice(), b: start.slice().reverse() };
      for (const { tokens, rows, cache, gradOut } of items) {
        adapterBackward(params, tokens, rows, cache, gradOut, expected.a, expected.b);
      }
      const got = { a: start.slice(), b: start.slice().reverse() };
      wasmAdapterBackward(kernel, params, items, got.a, got.b);
      expect(got).toEqual(expected);
      expect(got.a).not.toEqual(start);
    }
    expect(kernel.used).toBe(0);
  });
});
