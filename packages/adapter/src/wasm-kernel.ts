/**
 * The adapter's WebAssembly kernel (`assembly/kernel.ts`, AssemblyScript with SIMD, compiled
 * into `wasm-bytes.ts`): MaxSim's exact float64 maxima from float32 similarities and MaxSim's
 * backward, bit for bit as {@link maxSimFromSimilarities} and {@link maxSimBackwardBlocked}
 * compute them. IEEE float64 in WebAssembly rounds exactly as JavaScript does and is never
 * contracted into FMA; the kernel keeps the reference's summation order per element and uses
 * SIMD lanes only for independent sums.
 *
 * One instance owns one linear memory, with a small first-fit heap on it (64-byte aligned
 * blocks above the first 64 KiB). Growing the memory detaches earlier views of it: take views
 * ({@link WasmKernel.f32} …) only after the last allocation they depend on.
 */
import { Buffer } from 'node:buffer';
import type { MaxSimResult } from './loss.js';
import type { AdapterForwardCache, AdapterParams } from './model.js';
import { KERNEL_WASM_BASE64 } from './wasm-bytes.js';

/** What the module exports (byte offsets into its memory; see `assembly/kernel.ts`). */
interface KernelExports {
  maxSimExact(
    sims: number,
    stride: number,
    offset: number,
    query: number,
    rows: number,
    dim: number,
    x: number,
    offsets: number,
    memories: number,
    slack: number,
    best: number,
    argmax: number,
    work: number,
  ): number;
  backward(
    argmax: number,
    gradScores: number,
    rows: number,
    memories: number,
    dim: number,
    x: number,
    gradQuery: number,
  ): void;
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
}

/** The part of the WebAssembly JS API used here (not in this project's TypeScript libs). */
interface WasmMemory {
  readonly buffer: ArrayBuffer;
  grow(pages: number): number;
}
interface WasmApi {
  Module: new (bytes: Uint8Array) => object;
  Instance: new (module: object, imports: object) => { readonly exports: unknown };
  Memory: new (descriptor: { initial: number; maximum: number }) => WasmMemory;
}
const wasmApi = (globalThis as unknown as { WebAssembly: WasmApi }).WebAssembly;

const PAGE = 65536;
const HEAP_BASE = PAGE;
const ALIGN = 64;
/** wasm32's limit: 4 GiB. */
const MAX_PAGES = 65536;

let compiled: object | undefined;

function kernelModule(): object {
  compiled ??= new wasmApi.Module(Buffer.from(KERNEL_WASM_BASE64, 'base64'));
  return compiled;
}

const align = (bytes: number): number => Math.max(ALIGN, Math.ceil(bytes / ALIGN) * ALIGN);

/** One instance of the kernel and its memory. */
export class WasmKernel {
  readonly memory: WasmMemory;
  readonly #exports: KernelExports;
  /** Free blocks, ascending by address, never adjacent (coalesced). */
  readonly #free: { ptr: number; size: number }[] = [];
  #end = HEAP_BASE;

  constructor() {
    this.memory = new wasmApi.Memory({ initial: 2, maximum: MAX_PAGES });
    const instance = new wasmApi.Instance(kernelModule(), { env: { memory: this.memory } });
    this.#exports = instance.exports as unknown as KernelExports;
  }

  /** Bytes in use by the heap's blocks (allocated, not freed). */
  get used(): number {
    let free = 0;
    for (const block of this.#free) free += block.size;
    return this.#end - HEAP_BASE - free;
  }

  /**
   * A block of at least `bytes` (64-byte aligned, contents undefined); grows the memory when
   * needed (which detaches earlier views).
   * @throws {RangeError} beyond wasm32's 4 GiB.
   */
  alloc(bytes: number): number {
    const size = align(bytes);
    for (let i = 0; i < this.#free.length; i++) {
      const block = this.#free[i]!;
      if (block.size < size) continue;
      const ptr = block.ptr;
      if (block.size === size) this.#free.splice(i, 1);
      else {
        block.ptr += size;
        block.size -= size;
      }
      return ptr;
    }
    const ptr = this.#end;
    const end = ptr + size;
    const have = this.memory.buffer.byteLength;
    if (end > have) {
      const pages = Math.ceil((end - have) / PAGE);
      if (have / PAGE + pages > MAX_PAGES) {
        throw new RangeError(`WasmKernel: ${end} bytes exceed wasm32's 4 GiB`);
      }
      this.memory.grow(pages);
    }
    this.#end = end;
    return ptr;
  }

  /** Returns a block from {@link alloc} (with the same `bytes`). */
  free(ptr: number, bytes: number): void {
    const size = align(bytes);
    const blocks = this.#free;
    let i = 0;
    while (i < blocks.length && blocks[i]!.ptr < ptr) i += 1;
    blocks.splice(i, 0, { ptr, size });
    // coalesce with the next, then with the previous block
    const next = blocks[i + 1];
    if (next !== undefined && ptr + size === next.ptr) {
      blocks[i]!.size += next.size;
      blocks.splice(i + 1, 1);
    }
    const prev = blocks[i - 1];
    if (prev !== undefined && prev.ptr + prev.size === ptr) {
      prev.size += blocks[i]!.size;
      blocks.splice(i, 1);
    }
    const last = blocks[blocks.length - 1];
    if (last !== undefined && last.ptr + last.size === this.#end) {
      this.#end = last.ptr;
      blocks.pop();
    }
  }

  f32(ptr: number, length: number): Float32Array {
    return new Float32Array(this.memory.buffer, ptr, length);
  }

  f64(ptr: number, length: number): Float64Array {
    return new Float64Array(this.memory.buffer, ptr, length);
  }

  i32(ptr: number, length: number): Int32Array {
    return new Int32Array(this.memory.buffer, ptr, length);
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
    const { rows, memories } = out;
    const queryBytes = rows * dim * 8;
    const offsetBytes = (memories + 1) * 4;
    const bestBytes = rows * memories * 8;
    const argBytes = rows * memories * 4;
    const workBytes = rows * 48 + 64 + rows * dim * 8 + 64;
    const total =
      align(queryBytes) +
      align(offsetBytes) +
      align(rows * 8) +
      align(bestBytes) +
      align(argBytes) +
      align(workBytes);
    const base = this.alloc(total);
    try {
      const qPtr = base;
      const oPtr = qPtr + align(queryBytes);
      const sPtr = oPtr + align(offsetBytes);
      const bPtr = sPtr + align(rows * 8);
      const aPtr = bPtr + align(bestBytes);
      const wPtr = aPtr + align(argBytes);
      this.f64(qPtr, rows * dim).set(query.subarray(0, rows * dim));
      this.i32(oPtr, memories + 1).set(offsets);
      this.f64(sPtr, rows).set(slack);
      const failed = this.#exports.maxSimExact(
        simsPtr,
        columns.stride,
        columns.offset,
        qPtr,
        rows,
        dim,
        xPtr,
        oPtr,
        memories,
        sPtr,
        bPtr,
        aPtr,
        wPtr,
      );
      if (failed !== 0) {
        const i = Math.floor((failed - 1) / memories);
        const m = (failed - 1) % memories;
        throw new Error(`maxSimFromSimilarities: no candidate for row ${i}, memory ${m}`);
      }
      out.best.set(this.f64(bPtr, rows * memories));
      out.argmax.set(this.i32(aPtr, rows * memories));
    } finally {
      this.free(base, total);
    }
  }

  /**
   * `maxSimBackwardBlocked(result, gradScores, dim, segments, gradQuery)` with the tokens at
   * `xPtr` in this memory: adds into `gradQuery`, bit for bit the same.
   */
  backward(
    result: MaxSimResult,
    gradScores: ArrayLike<number>,
    dim: number,
    xPtr: number,
    gradQuery: Float64Array,
  ): Float64Array {
    const { rows, memories } = result;
    if (gradQuery.length < rows * dim) throw new Error(`maxSimBackward: gradQuery < ${rows * dim}`);
    if (rows === 0) return gradQuery;
    const argBytes = rows * memories * 4;
    const gradBytes = memories * 8;
    const queryBytes = rows * dim * 8;
    const total = align(argBytes) + align(gradBytes) + align(queryBytes);
    const base = this.alloc(total);
    try {
      const aPtr = base;
      const gPtr = aPtr + align(argBytes);
      const qPtr = gPtr + align(gradBytes);
      this.i32(aPtr, rows * memories).set(result.argmax.subarray(0, rows * memories));
      this.f64(gPtr, memories).set(gradScores);
      this.f64(qPtr, rows * dim).set(gradQuery.subarray(0, rows * dim));
      this.#exports.backward(aPtr, gPtr, rows, memories, dim, xPtr, qPtr);
      gradQuery.set(this.f64(qPtr, rows * dim));
    } finally {
      this.free(base, total);
    }
    return gradQuery;
  }

  /**
   * `adapterBackward(params, tokens, rows, cache, gradOut, gradA, gradB)` of model.ts, bit for
   * bit (float32 `tokens`): adds into `gradA` and `gradB`.
   */
  adapterBackward(
    params: AdapterParams,
    tokens: Float32Array,
    rows: number,
    cache: AdapterForwardCache,
    gradOut: Float64Array,
    gradA: Float64Array,
    gradB: Float64Array,
  ): void {
    const { dim, rank } = params;
    if (gradOut.length < rows * dim || cache.rows < rows) {
      throw new Error(`adapterBackward: gradOut or cache smaller than ${rows} × ${dim}`);
    }
    if (gradA.length !== rank * dim || gradB.length !== dim * rank) {
      throw new Error(`adapterBackward: gradients must hold ${rank * dim} values each`);
    }
    const parts = [
      rank * dim * 8, // B
      rows * dim * 4, // tokens
      rows * rank * 8, // u
      rows * dim * 8, // z
      rows * 8, // hNorm
      rows * 8, // zNorm
      rows * dim * 8, // gradOut
      rank * dim * 8, // gradA
      rank * dim * 8, // gradB
      dim * 8, // gz
      rank * 8, // gu
    ];
    const total = parts.reduce((sum, bytes) => sum + align(bytes), 0);
    const base = this.alloc(total);
    try {
      const at: number[] = [];
      let next = base;
      for (const bytes of parts) {
        at.push(next);
        next += align(bytes);
      }
      const [b, tk, u, z, hn, zn, go, ga, gb, gz, gu] = at as [
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
      this.f64(b, rank * dim).set(params.b.subarray(0, rank * dim));
      this.f32(tk, rows * dim).set(tokens.subarray(0, rows * dim));
      this.f64(u, rows * rank).set(cache.u.subarray(0, rows * rank));
      this.f64(z, rows * dim).set(cache.z.subarray(0, rows * dim));
      this.f64(hn, rows).set(cache.hNorm.subarray(0, rows));
      this.f64(zn, rows).set(cache.zNorm.subarray(0, rows));
      this.f64(go, rows * dim).set(gradOut.subarray(0, rows * dim));
      this.f64(ga, rank * dim).set(gradA);
      this.f64(gb, rank * dim).set(gradB);
      this.#exports.adapterBackward(b, dim, rank, tk, rows, u, z, hn, zn, go, ga, gb, gz, gu);
      gradA.set(this.f64(ga, rank * dim));
      gradB.set(this.f64(gb, rank * dim));
    } finally {
      this.free(base, total);
    }
  }
}
