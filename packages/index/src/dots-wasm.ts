/**
 * Float64 inner products in WebAssembly SIMD (`assembly/dots.ts`): the rows copied into a
 * linear memory of this thread's, their sums computed two rows to an instruction, eight at a
 * time. Each row's sum runs in order of the dimension exactly as the JavaScript loop
 * ({@link dotsIntoJs} in `dots.ts`) sums it, so the results are bit-identical (tested).
 */
import { KERNEL_WASM_BASE64 } from './dots-wasm-bytes.js';
import { wasm, WASM_PAGE as PAGE, type WasmMemory } from './wasm-api.js';

interface DotsExports {
  dots(rows: number, count: number, dim: number, q2: number, out: number): void;
  dots32(rows: number, count: number, dim: number, q: number, out: number): void;
}

/** Rows copied in and summed per kernel call (bounds the memory: 1,024 × 384 floats = 1.5 MiB). */
export const ROWS_PER_CALL = 1024;
/** Where the query pairs start (below: nothing of the module's). */
const BASE = 1024;

const align64 = (n: number): number => Math.ceil(n / 64) * 64;

/**
 * `out[h] = Σ_j vectors[offsets[h] + j] · query[at + j]` for `h < count`, in float64, in order
 * of `j` (`dotsInto` in `dots.ts`).
 */
export type RowDots = (
  vectors: Float32Array,
  offsets: Int32Array,
  count: number,
  query: Float32Array,
  at: number,
  out: Float64Array,
  dim: number,
) => void;

/** This thread's kernel: its module instance and memory, grown to the largest call's need. */
class DotsKernel {
  readonly #exports: DotsExports;
  readonly #memory: WasmMemory;
  #f32 = new Float32Array(0);
  #f64 = new Float64Array(0);

  constructor() {
    this.#memory = new wasm.Memory({ initial: 2, maximum: 65536 });
    const module = new wasm.Module(Buffer.from(KERNEL_WASM_BASE64, 'base64'));
    const instance = new wasm.Instance(module, {
      env: { memory: this.#memory, abort: () => undefined },
    });
    this.#exports = instance.exports as DotsExports;
    this.#views();
  }

  #views(): void {
    this.#f32 = new Float32Array(this.#memory.buffer);
    this.#f64 = new Float64Array(this.#memory.buffer);
  }

  #room(bytes: number): void {
    const have = this.#memory.buffer.byteLength;
    if (bytes <= have) return;
    this.#memory.grow(Math.ceil((bytes - have) / PAGE));
    this.#views();
  }

  /** The rows {@link estimatesInto} last copied in: their array, first float and count. */
  #run = { from: -1, count: 0, vectors: undefined as Float32Array | undefined };

  /** Forgets the run copied in (its rows may change before the next call). */
  forgetRun(): void {
    this.#run = { from: -1, count: 0, vectors: undefined };
  }

  /** Where {@link estimatesInto}'s query, estimates and run live, for `dim`. */
  #layout(dim: number): { q: number; out: number; rows: number } {
    const out = align64(BASE + 4 * dim);
    return { q: BASE, out, rows: align64(out + 4 * ROWS_PER_CALL) };
  }

  /**
   * Float32 estimates (`assembly/dots.ts` `dots32`) of the consecutive rows
   * `vectors[from .. from + count · dim)` against `query[at .. at + dim)`, into `out[0..count)`;
   * at most {@link ROWS_PER_CALL} rows. The rows stay copied in until {@link forgetRun}: the
   * next call on the same run (another query row against the same memory's tokens) copies only
   * its query row.
   */
  readonly estimatesInto = (
    vectors: Float32Array,
    from: number,
    count: number,
    query: Float32Array,
    at: number,
    out: Float32Array,
    dim: number,
  ): void => {
    if (count > ROWS_PER_CALL)
      throw new Error(`estimatesInto: ${count} rows, at most ${ROWS_PER_CALL}`);
    const layout = this.#layout(dim);
    const run = this.#run;
    if (run.vectors !== vectors || run.from !== from || run.count < count) {
      this.#room(layout.rows + 4 * dim * count);
      this.#f32.set(vectors.subarray(from, from + count * dim), layout.rows / 4);
      this.#run = { from, count, vectors };
    }
    const f32 = this.#f32;
    f32.set(query.subarray(at, at + dim), layout.q / 4);
    this.#exports.dots32(layout.rows, count, dim, layout.q, layout.out);
    out.set(f32.subarray(layout.out / 4, layout.out / 4 + count));
  };

  readonly dotsInto: RowDots = (vectors, offsets, count, query, at, out, dim) => {
    this.forgetRun();
    const q2 = BASE;
    const outAt = align64(q2 + 16 * dim);
    const chunk = Math.min(count, ROWS_PER_CALL);
    const rowsAt = align64(outAt + 8 * chunk);
    this.#room(rowsAt + 4 * dim * chunk);
    const f32 = this.#f32;
    const f64 = this.#f64;
    for (let j = 0; j < dim; j++) {
      const v = query[at + j]!;
      f64[q2 / 8 + 2 * j] = v;
      f64[q2 / 8 + 2 * j + 1] = v;
    }
    for (let h0 = 0; h0 < count; h0 += ROWS_PER_CALL) {
      const n = Math.min(ROWS_PER_CALL, count - h0);
      // Rows copied in, a run of consecutive rows in one copy.
      for (let h = 0; h < n;) {
        const from = offsets[h0 + h]!;
        let e = h + 1;
        while (e < n && offsets[h0 + e] === from + (e - h) * dim) e++;
        f32.set(vectors.subarray(from, from + (e - h) * dim), rowsAt / 4 + h * dim);
        h = e;
      }
      this.#exports.dots(rowsAt, n, dim, q2, outAt);
      out.set(f64.subarray(outAt / 8, outAt / 8 + n), h0);
    }
  };
}

let kernel: DotsKernel | undefined;

/** This thread's WebAssembly inner-product kernel (made at first use). */
export function wasmDots(): DotsKernel {
  return (kernel ??= new DotsKernel());
}
