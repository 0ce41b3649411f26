/**
 * The WebAssembly API the index's kernels use (`ivf/wasm-scan.ts`, `dots-wasm.ts`), typed: the
 * global is not in this package's `lib` (no DOM types).
 */
export interface WasmMemory {
  readonly buffer: ArrayBuffer;
  grow(pages: number): number;
}

interface WasmApi {
  Module: new (bytes: Uint8Array) => object;
  Instance: new (module: object, imports: object) => { readonly exports: unknown };
  Memory: new (descriptor: { initial: number; maximum: number; shared?: boolean }) => WasmMemory;
}

export const wasm = (globalThis as unknown as { WebAssembly: WasmApi }).WebAssembly;

/** Bytes of a WebAssembly memory page. */
export const WASM_PAGE = 65536;
