import { setFlagsFromString } from 'node:v8';

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
  validate(bytes: Uint8Array): boolean;
  Memory: new (descriptor: { initial: number; maximum: number; shared?: boolean }) => WasmMemory;
}

export const wasm = (globalThis as unknown as { WebAssembly: WasmApi }).WebAssembly;

/** Bytes of a WebAssembly memory page. */
export const WASM_PAGE = 65536;

/** `(func (param v128 v128) (result v128) (i8x16.relaxed_swizzle (local.get 0) (local.get 1)))` */
const RELAXED_PROBE = Buffer.from(
  '0061736d0100000001070160027b7b017b030201000a0b01090020002001fd80020b',
  'hex',
);

let relaxed: boolean | undefined;

/**
 * Whether this engine compiles relaxed SIMD (the kernels use only its swizzle, with indices
 * 0..15, where it equals the plain one). V8 ships it from 11.4 (Node 21 and later); Node 20's
 * V8 11.3 implements it behind `--experimental-wasm-relaxed-simd`, which is set here, once,
 * when the probe does not validate without it. `BFE_RELAXED_SIMD=0` declines it (the plain kernels).
 */
export function relaxedSimd(): boolean {
  if (relaxed !== undefined) return relaxed;
  if (process.env['BFE_RELAXED_SIMD'] === '0') return (relaxed = false);
  relaxed = wasm.validate(RELAXED_PROBE);
  if (!relaxed) {
    setFlagsFromString('--experimental-wasm-relaxed-simd');
    relaxed = wasm.validate(RELAXED_PROBE);
  }
  return relaxed;
}
