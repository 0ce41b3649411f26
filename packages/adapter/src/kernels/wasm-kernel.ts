/**
 * The adapter's WebAssembly kernel (`assembly/kernel.ts`, AssemblyScript with SIMD, compiled
 * into `wasm-bytes.ts`): MaxSim's exact float64 maxima from float32 similarities, bit for bit
 * as {@link maxSimFromSimilarities} computes them. IEEE float64 in WebAssembly rounds exactly as JavaScript does and is never
 * contracted into FMA; the kernel keeps the reference's summation order per element and uses
 * SIMD lanes only for independent sums.
 *
 * With `invTau`, {@link WasmKernel.maxSimExactSliced} also runs MaxSim's backward fused into
 * the maxima's pass (`assembly/fused.ts`): not the reference's order, equal within rounding.
 *
 * One instance owns one linear memory and its heap ({@link WasmHeap}).
 */
import { Buffer } from 'node:buffer';
import type { MaxSimResult } from '../loss/loss.js';
import type { MemorySlice } from './slices.js';
import { KERNEL_WASM_BASE64 } from './wasm-bytes.js';
import { WasmHeap, wasmApi } from './wasm-heap.js';

/** What the module exports (byte offsets into its memory; see `assembly/kernel.ts`). */
interface KernelExports {
  maxSimExactMany(
    sims: number,
    stride: number,
    x: number,
    dim: number,
    offsets: number,
    memories: number,
    table: number,
    count: number,
    work: number,
    from: number,
    to: number,
    token0: number,
    prepare: boolean,
  ): number;
  accumulateMany(
    x: number,
    dim: number,
    memories: number,
    table: number,
    count: number,
    from: number,
    to: number,
    invTau: number,
    weights: number,
  ): void;
}

/**
 * A query's fused accumulation (`assembly/fused.ts`): `acc` `[rows × dim]` =
 * Σ_m e^{s_m/τ − max} · x[argmax[i, m]] over the memories with a token, `max` the largest
 * `s_m/τ` (−∞ before any memory).
 */
export interface FusedSum {
  readonly acc: Float64Array;
  max: number;
}

/** One query of an exact-maxima batch (see {@link WasmKernel.maxSimExactMany}). */
export interface ExactItem {
  readonly out: MaxSimResult;
  readonly query: Float64Array;
  /** Its first column in the similarity matrix. */
  readonly offset: number;
  /** {@link rowSlack} of its rows. */
  readonly slack: Float64Array;
  /** With {@link WasmKernel.maxSimExactSliced}'s `invTau`: filled with the fused sum. */
  readonly fused?: FusedSum;
}

/** The fused sums' block in the WebAssembly memory. */
interface FusedBlock {
  readonly base: number;
  readonly total: number;
  readonly table: number;
  readonly weights: number;
  readonly accs: readonly number[];
}

/** A batch's block in the WebAssembly memory (addresses of its parts). */
interface ExactBatch {
  readonly base: number;
  readonly total: number;
  readonly at: readonly number[];
  readonly dim: number;
  readonly memories: number;
  readonly count: number;
}

let compiled: object | undefined;

function kernelModule(): object {
  compiled ??= new wasmApi.Module(Buffer.from(KERNEL_WASM_BASE64, 'base64'));
  return compiled;
}

/** One instance of the kernel, on its own memory and heap. */
export class WasmKernel extends WasmHeap {
  readonly #exports: KernelExports;

  constructor() {
    super();
    const instance = new wasmApi.Instance(kernelModule(), { env: { memory: this.memory } });
    this.#exports = instance.exports as unknown as KernelExports;
  }

  /** The module's exports, for the kernel's other wrappers (`wasm-forward.ts`). */
  get exports(): unknown {
    return this.#exports;
  }

  /**
   * `maxSimFromSimilarities(out, sims, query, dim, segments, tokenNorm, columns)` without the
   * final mean ({@link finishMaxSimScores}), all in this memory: `simsPtr` float32
   * `[N × stride]`, this query's rows from column `offset`; `xPtr` the float32 tokens;
   * `offsets` the memories' token offsets; `slack` per row ({@link rowSlack}). Fills
   * `out.best` and `out.argmax`.
   * @throws {Error} when a row of a non-empty memory has no candidate (NaN similarities).
   */
  maxSimExact(
    out: MaxSimResult,
    simsPtr: number,
    columns: { readonly stride: number; readonly offset: number },
    query: Float64Array,
    dim: number,
    xPtr: number,
    offsets: ArrayLike<number>,
    slack: Float64Array,
  ): void {
    const item = { out, query, offset: columns.offset, slack };
    this.maxSimExactMany(simsPtr, columns.stride, dim, xPtr, offsets, [item]);
  }

  /**
   * {@link maxSimExact} of several queries against one candidate set (`offsets`, tokens at
   * `xPtr`), each with its columns from `offset` of the `stride`-column similarity matrix at
   * `simsPtr`: memory by memory across the queries (each memory's tokens read once for all),
   * each query's result the same bit for bit as alone.
   */
  maxSimExactMany(
    simsPtr: number,
    stride: number,
    dim: number,
    xPtr: number,
    offsets: ArrayLike<number>,
    items: readonly ExactItem[],
  ): void {
    const batch = this.#exactBegin(dim, offsets, items);
    try {
      this.#exactRun(batch, simsPtr, stride, xPtr, 0, offsets.length - 1, 0, true);
      this.#exactEnd(batch, items);
    } finally {
      this.free(batch.base, batch.total);
    }
  }

  /**
   * {@link maxSimExactMany} one slice of memories at a time: for each slice in order, `fill`
   * writes the similarities of the tokens `slice.token0 ..` (at least those of memories
   * `slice.from .. slice.to`) and gives their address; the slice's maxima follow at once,
   * while its tokens are still in cache. The same results bit for bit, however sliced.
   */
  async maxSimExactSliced(
    stride: number,
    dim: number,
    xPtr: number,
    offsets: ArrayLike<number>,
    items: readonly ExactItem[],
    slices: readonly MemorySlice[],
    fill: (slice: MemorySlice) => Promise<number>,
    invTau?: number,
  ): Promise<void> {
    const batch = this.#exactBegin(dim, offsets, items);
    const fused = invTau === undefined ? undefined : this.#fusedBegin(batch, items);
    try {
      let prepare = true;
      for (const slice of slices) {
        const simsPtr = await fill(slice);
        this.#exactRun(batch, simsPtr, stride, xPtr, slice.from, slice.to, slice.token0, prepare);
        prepare = false;
        if (fused === undefined) continue;
        const { memories, count } = batch;
        const { from, to } = slice;
        const { table, weights } = fused;
        this.#exports.accumulateMany(xPtr, dim, memories, table, count, from, to, invTau!, weights);
      }
      this.#exactEnd(batch, items);
      if (fused !== undefined) this.#fusedEnd(fused, items, dim);
    } finally {
      if (fused !== undefined) this.free(fused.base, fused.total);
      this.free(batch.base, batch.total);
    }
  }

  /** The fused sums' block: per query its table entry, `acc` (zeroed) and running max (−∞). */
  #fusedBegin(batch: ExactBatch, items: readonly ExactItem[]): FusedBlock {
    const { at, dim } = batch;
    for (const { out, fused } of items) {
      if (fused === undefined) throw new Error('maxSimExactSliced: invTau needs every item fused');
      if (fused.acc.length < out.rows * dim) throw new Error('maxSimExactSliced: acc too small');
    }
    const entry = 20; // FUSED_ENTRY of assembly/fused.ts
    const parts = [
      items.length * entry,
      batch.memories * 8, // the weights of a slice's memories
      ...items.map(({ out }) => out.rows * dim * 8 + 8),
    ];
    const placed = this.allocParts(parts);
    const { base, total } = placed;
    const [table, weights, ...accs] = placed.at as [number, number, ...number[]];
    items.forEach(({ out }, j) => {
      const acc = accs[j]!;
      this.f64(acc, out.rows * dim).fill(0);
      this.f64(acc + out.rows * dim * 8, 1)[0] = -Infinity;
      const [b, a] = at.slice(4 + 5 * j, 6 + 5 * j) as [number, number];
      this.i32(table + j * entry, 5).set([b, a, out.rows, acc, acc + out.rows * dim * 8]);
    });
    return { base, total, table, weights, accs };
  }

  /** Copies each query's fused sum and running max out. */
  #fusedEnd(block: FusedBlock, items: readonly ExactItem[], dim: number): void {
    items.forEach(({ out, fused }, j) => {
      const n = out.rows * dim;
      fused!.acc.set(this.f64(block.accs[j]!, n));
      fused!.max = this.f64(block.accs[j]! + n * 8, 1)[0]!;
    });
  }

  /** Allocates a batch's block and copies its queries, slacks and memory offsets in. */
  #exactBegin(dim: number, offsets: ArrayLike<number>, items: readonly ExactItem[]): ExactBatch {
    const memories = offsets.length - 1;
    let most = 0;
    const parts: number[] = [items.length * 32, offsets.length * 4];
    for (const { out } of items) {
      const { rows } = out;
      if (out.memories !== memories) throw new Error('maxSimExactMany: another candidate set');
      most = Math.max(most, rows);
      // query, slack, best, argmax, qi
      parts.push(
        rows * dim * 8,
        rows * 8,
        rows * memories * 8,
        rows * memories * 4,
        rows * dim * 8,
      );
    }
    parts.push(most * 32 + 128); // work
    const { base, total, at } = this.allocParts(parts);
    const table = at[0]!;
    this.i32(at[1]!, offsets.length).set(offsets);
    const entries = this.i32(table, items.length * 8);
    items.forEach(({ out, query, offset, slack }, j) => {
      const { rows } = out;
      const [q, s, b, a, qi] = at.slice(2 + 5 * j, 7 + 5 * j) as [
        number,
        number,
        number,
        number,
        number,
      ];
      this.f64(q, rows * dim).set(query.subarray(0, rows * dim));
      this.f64(s, rows).set(slack.subarray(0, rows));
      entries.set([offset, q, rows, s, b, a, qi, 0], j * 8);
    });
    return { base, total, at, dim, memories, count: items.length };
  }

  /** One call of the kernel over memories `from .. to`; throws on a row without a candidate. */
  #exactRun(
    batch: ExactBatch,
    simsPtr: number,
    stride: number,
    xPtr: number,
    from: number,
    to: number,
    token0: number,
    prepare: boolean,
  ): void {
    const { at, dim, memories, count } = batch;
    const work = at[at.length - 1]!;
    const failed = this.#exports.maxSimExactMany(
      simsPtr,
      stride,
      xPtr,
      dim,
      at[1]!,
      memories,
      at[0]!,
      count,
      work,
      from,
      to,
      token0,
      prepare,
    );
    if (failed !== 0) {
      const [row, m] = this.i32(work, 2) as unknown as [number, number];
      throw new Error(`maxSimFromSimilarities: no candidate for row ${row}, memory ${m}`);
    }
  }

  /** Copies each query's maxima and argmax out of the batch's block. */
  #exactEnd(batch: ExactBatch, items: readonly ExactItem[]): void {
    const { at, memories } = batch;
    items.forEach(({ out }, j) => {
      const { rows } = out;
      const [b, a] = at.slice(4 + 5 * j, 6 + 5 * j) as [number, number];
      out.best.set(this.f64(b, rows * memories));
      out.argmax.set(this.i32(a, rows * memories));
    });
  }
}
