/**
 * A first-fit heap on a WebAssembly linear memory (64-byte aligned blocks above the first
 * 64 KiB, which the module keeps for itself), for the adapter's WebAssembly kernel
 * (`wasm-kernel.ts`). Growing the memory detaches earlier views of it: take views
 * ({@link WasmHeap.f32} …) only after the last allocation they depend on.
 */
/** The part of the WebAssembly JS API used here (not in this project's TypeScript libs). */
export interface WasmMemory {
  readonly buffer: ArrayBuffer;
  grow(pages: number): number;
}
export interface WasmApi {
  Module: new (bytes: Uint8Array) => object;
  Instance: new (module: object, imports: object) => { readonly exports: unknown };
  Memory: new (descriptor: { initial: number; maximum: number }) => WasmMemory;
}
export const wasmApi = (globalThis as unknown as { WebAssembly: WasmApi }).WebAssembly;

const PAGE = 65536;
const HEAP_BASE = PAGE;
const ALIGN = 64;
/** wasm32's limit: 4 GiB. */
const MAX_PAGES = 65536;

export const align = (bytes: number): number => Math.max(ALIGN, Math.ceil(bytes / ALIGN) * ALIGN);

/** The memory and its heap. */
export class WasmHeap {
  readonly memory: WasmMemory;
  /** Free blocks, ascending by address, never adjacent (coalesced). */
  readonly #free: { ptr: number; size: number }[] = [];
  #end = HEAP_BASE;

  constructor() {
    this.memory = new wasmApi.Memory({ initial: 2, maximum: MAX_PAGES });
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
   * Allocates `parts` (each {@link align}ed) as one block: its address and size (for
   * {@link free}) and each part's address.
   */
  allocParts(parts: readonly number[]): { base: number; total: number; at: number[] } {
    const total = parts.reduce((sum, bytes) => sum + align(bytes), 0);
    const base = this.alloc(total);
    const at: number[] = [];
    let next = base;
    for (const bytes of parts) {
      at.push(next);
      next += align(bytes);
    }
    return { base, total, at };
  }

  /** {@link allocParts}, runs `body` with the parts' addresses, frees the block. */
  withParts<T>(parts: readonly number[], body: (at: number[]) => T): T {
    const { base, total, at } = this.allocParts(parts);
    try {
      return body(at);
    } finally {
      this.free(base, total);
    }
  }
}
