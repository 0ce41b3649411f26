/**
 * The `onnxruntime` training kernels: the GEMM of MaxSim — every (adapted) query row against
 * every candidate token — runs as one float32 MatMul on onnxruntime's CPU provider (MLAS), and
 * the exact float64 maxima follow bit for bit as the JavaScript kernel computes them: in
 * WebAssembly (`wasm-kernel.ts`, exact `'wasm'`, the `onnxruntime` kernel, MaxSim's backward
 * fused into that pass) or in JavaScript ({@link maxSimFromSimilarities}; exact `'js'`, the
 * `onnxruntime-js` kernel, its backward apart in `loss-ort.ts`). One session per training worker, one intra-op thread (the
 * workers are the parallelism).
 *
 * onnxruntime-node refuses typed arrays over a `SharedArrayBuffer`, so each worker keeps
 * private float32 copies of the candidate sets it has used (in the WebAssembly memory with
 * exact `'wasm'`: onnxruntime reads them there too), least recently used first out beyond
 * {@link ORT_SET_CACHE_BYTES}.
 */
import type * as OrtModule from 'onnxruntime-node';
import type { InferenceSession, Tensor } from 'onnxruntime-node';
import {
  finishMaxSimScores,
  type MaxSimResult,
  type TokenSegments,
  emptyMaxSim,
} from '../loss/loss.js';
import { maxSimFromSimilarities, maxTokenNorm, rowSlack } from '../loss/maxsim-exact.js';
import type { KernelGraph } from './kernel-graph.js';
import { ORT_SLICE_BYTES, memorySlices, type MemorySlice } from './slices.js';
import { wasmMaxTokenNorm } from './wasm-forward.js';
import { WasmKernel, type ExactItem, type FusedSum } from './wasm-kernel.js';

/** Where the exact float64 maxima and the backward run: WebAssembly, or JavaScript. */
export type ExactKernel = 'wasm' | 'js';

/** Most query rows one MatMul takes side by side ({@link OrtMaxSim.maxSimMany}). */
export const ORT_BATCH_COLUMNS = 192;

/** Bytes of private candidate-set copies one worker keeps (least recently used evicted). */
export const ORT_SET_CACHE_BYTES = 512 * 1024 * 1024;

interface CachedSet {
  /** The tokens as onnxruntime reads them (JavaScript exact kernel; else built per run). */
  readonly tensor: Tensor | undefined;
  /** Where the tokens are in the WebAssembly memory (−1 without it). */
  readonly ptr: number;
  readonly tokens: number;
  readonly norm: number;
  readonly bytes: number;
}

type Ort = typeof OrtModule;

/** MaxSim through onnxruntime: one session, a cache of candidate sets. */
export class OrtMaxSim {
  readonly dim: number;
  readonly #ort: Ort;
  readonly #session: InferenceSession;
  readonly #sets = new Map<Float32Array, CachedSet>();
  readonly #budget: number;
  readonly #wasm: WasmKernel | undefined;
  readonly #sliceBytes: number;
  #bytes = 0;

  private constructor(
    ort: Ort,
    session: InferenceSession,
    dim: number,
    budget: number,
    exact: ExactKernel,
    sliceBytes: number,
  ) {
    this.#ort = ort;
    this.#session = session;
    this.dim = dim;
    this.#budget = budget;
    this.#wasm = exact === 'wasm' ? new WasmKernel() : undefined;
    this.#sliceBytes = sliceBytes;
  }

  /** The WebAssembly kernel (exact `'wasm'`), for the adapter's passes (`loss-ort.ts`). */
  get wasm(): WasmKernel | undefined {
    return this.#wasm;
  }

  /** Candidate sets held, and their bytes (the newest one is kept even beyond the budget). */
  get cached(): { readonly sets: number; readonly bytes: number } {
    return { sets: this.#sets.size, bytes: this.#bytes };
  }

  /**
   * Loads onnxruntime-node (only now: the JavaScript kernel never loads it) and `graph`
   * (`kernelGraph(dim, threads)`: the graph and its session options, intra-op threads
   * included); `cacheBytes` bounds the private copies of candidate sets; `exact` where the
   * float64 maxima run (and MaxSim's backward: fused into them
   * in WebAssembly, apart and bit for bit in JavaScript; `loss-ort.ts`);
   * `sliceBytes` the tokens per MatMul slice with exact `'wasm'` ({@link memorySlices}; the
   * result does not depend on it).
   */
  static async create(
    graph: KernelGraph,
    dim: number,
    cacheBytes = ORT_SET_CACHE_BYTES,
    exact: ExactKernel = 'wasm',
    sliceBytes = ORT_SLICE_BYTES,
  ): Promise<OrtMaxSim> {
    const ort = await import('onnxruntime-node');
    const session = await ort.InferenceSession.create(graph.bytes, graph.options);
    return new OrtMaxSim(ort, session, dim, cacheBytes, exact, sliceBytes);
  }

  /**
   * MaxSim of `query [rows × dim]` (adapted, float64) against `segments`, equal bit for bit
   * to `maxSim(query, rows, dim, segments)`.
   */
  async maxSim(
    query: Float64Array,
    rows: number,
    segments: TokenSegments & { readonly tokenVectors: Float32Array },
  ): Promise<MaxSimResult> {
    return (await this.maxSimMany([{ query, rows, segments }]))[0]!;
  }

  /**
   * {@link maxSim} of several queries, equal bit for bit: the queries against one candidate
   * set share a MatMul (their rows side by side, up to {@link ORT_BATCH_COLUMNS} columns),
   * which MLAS runs at full width where one query's few rows would not fill its 16-column
   * blocks. Results in the order given. With `invTau` (the WebAssembly exact kernel only),
   * each item's `fused` sum is filled too (`FusedSum`, `assembly/fused.ts`).
   */
  async maxSimMany(
    items: readonly {
      readonly query: Float64Array;
      readonly rows: number;
      readonly segments: TokenSegments & { readonly tokenVectors: Float32Array };
      readonly fused?: FusedSum;
    }[],
    invTau?: number,
  ): Promise<MaxSimResult[]> {
    if (invTau !== undefined && this.#wasm === undefined) {
      throw new Error('OrtMaxSim: fused sums need the WebAssembly exact kernel');
    }
    const { dim } = this;
    const results: MaxSimResult[] = new Array<MaxSimResult>(items.length);
    const groups = new Map<Float32Array, number[]>();
    for (let j = 0; j < items.length; j++) {
      const key = items[j]!.segments.tokenVectors;
      const group = groups.get(key);
      if (group === undefined) groups.set(key, [j]);
      else group.push(j);
    }
    for (const group of groups.values()) {
      for (let g = 0; g < group.length;) {
        // a chunk of whole queries, up to ORT_BATCH_COLUMNS rows (at least one query)
        let width = 0;
        let h = g;
        while (
          h < group.length &&
          (h === g || width + items[group[h]!]!.rows <= ORT_BATCH_COLUMNS)
        ) {
          width += items[group[h]!]!.rows;
          h += 1;
        }
        const chunk = group.slice(g, h);
        g = h;
        const first = items[chunk[0]!]!;
        const memories = first.segments.memoryOffsets.length - 1;
        const set = this.#set(first.segments.tokenVectors, first.segments.memoryOffsets[memories]!);
        let sims: Float32Array = new Float32Array(0);
        const wasm = this.#wasm;
        if (set.tokens > 0 && width > 0) {
          const queryT = new Float32Array(dim * width);
          let column = 0;
          for (const j of chunk) {
            const { query, rows } = items[j]!;
            for (let i = 0; i < rows; i++) {
              for (let k = 0; k < dim; k++) queryT[k * width + column + i] = query[i * dim + k]!;
            }
            column += rows;
          }
          const queryTensor = new this.#ort.Tensor('float32', queryT, [dim, width]);
          if (wasm !== undefined) {
            await this.#exactWasm(wasm, items, chunk, results, queryTensor, width, set, invTau);
            continue;
          }
          const feeds = { memory: this.#tensor(set), queryT: queryTensor };
          sims = (await this.#session.run(feeds)).scores!.data as Float32Array<ArrayBuffer>;
        }
        let column = 0;
        for (const j of chunk) {
          const { query, rows, segments } = items[j]!;
          const count = segments.memoryOffsets.length - 1;
          const out = emptyMaxSim(rows, count);
          const columns = { stride: Math.max(width, 1), offset: column };
          results[j] = maxSimFromSimilarities(out, sims, query, dim, segments, set.norm, columns);
          column += rows;
        }
      }
    }
    return results;
  }

  /**
   * The MatMul and the exact maxima of a chunk with the WebAssembly kernel, one slice of
   * memories ({@link memorySlices}) at a time: the MatMul of the slice's
   * tokens writes into the WebAssembly memory (no copy, no garbage) and its exact maxima
   * follow while those tokens are still in cache.
   */
  async #exactWasm(
    wasm: WasmKernel,
    items: Parameters<OrtMaxSim['maxSimMany']>[0],
    chunk: readonly number[],
    results: MaxSimResult[],
    queryTensor: Tensor,
    width: number,
    set: CachedSet,
    invTau?: number,
  ): Promise<void> {
    const { dim } = this;
    const offsets = items[chunk[0]!]!.segments.memoryOffsets;
    const entries: ExactItem[] = [];
    let column = 0;
    for (const j of chunk) {
      const { query, rows, segments } = items[j]!;
      const count = segments.memoryOffsets.length - 1;
      const out = emptyMaxSim(rows, count);
      if (segments.memoryOffsets[count]! > set.tokens) {
        throw new Error('maxSimFromSimilarities: the similarity matrix is too small');
      }
      const slack = rowSlack(query, rows, dim, set.norm);
      const { fused } = items[j]!;
      entries.push({
        out,
        query,
        offset: column,
        slack,
        ...(fused === undefined ? {} : { fused }),
      });
      results[j] = out;
      column += rows;
    }
    // one kernel pass per distinct offsets array (one per candidate set in practice); only
    // the usual case is sliced, the last slice first (each memory's maxima are its own; the
    // fused sums gather slice by slice in this order)
    const sameOffsets = chunk.every((j) => items[j]!.segments.memoryOffsets === offsets);
    const slices = () => memorySlices(offsets, set.tokens, dim, this.#sliceBytes).reverse();
    const groups = sameOffsets
      ? [{ offsets, entries, slices: slices() }]
      : chunk.map((j, n) => {
          const own = items[j]!.segments.memoryOffsets;
          const whole = { from: 0, to: own.length - 1, token0: 0, token1: set.tokens };
          return { offsets: own, entries: [entries[n]!], slices: [whole] };
        });
    const most = Math.max(...groups.flatMap((g) => g.slices.map((s) => s.token1 - s.token0)));
    const simBytes = Math.max(most, 1) * width * 4;
    const simsPtr = wasm.alloc(simBytes);
    try {
      const fill = async (slice: MemorySlice): Promise<number> => {
        const tokens = slice.token1 - slice.token0;
        if (tokens > 0) {
          const memory = new this.#ort.Tensor(
            'float32',
            wasm.f32(set.ptr + slice.token0 * dim * 4, tokens * dim),
            [tokens, dim],
          );
          const scores = new this.#ort.Tensor('float32', wasm.f32(simsPtr, tokens * width), [
            tokens,
            width,
          ]);
          await this.#session.run({ memory, queryT: queryTensor }, { scores });
        }
        return simsPtr;
      };
      for (const group of groups) {
        await wasm.maxSimExactSliced(
          width,
          dim,
          set.ptr,
          group.offsets,
          group.entries,
          group.slices,
          fill,
          invTau,
        );
        for (const { out } of group.entries) finishMaxSimScores(out);
      }
    } finally {
      wasm.free(simsPtr, simBytes);
    }
  }

  #tensor(set: CachedSet): Tensor {
    if (set.tensor !== undefined) return set.tensor;
    const view = this.#wasm!.f32(set.ptr, set.tokens * this.dim);
    return new this.#ort.Tensor('float32', view, [set.tokens, this.dim]);
  }

  /** Releases the session and the cached copies. */
  async release(): Promise<void> {
    for (const set of this.#sets.values()) if (set.ptr >= 0) this.#wasm?.free(set.ptr, set.bytes);
    this.#sets.clear();
    this.#bytes = 0;
    await this.#session.release();
  }

  #set(tokenVectors: Float32Array, tokens: number): CachedSet {
    const hit = this.#sets.get(tokenVectors);
    if (hit !== undefined) {
      this.#sets.delete(tokenVectors); // re-insert: most recently used last
      this.#sets.set(tokenVectors, hit);
      return hit;
    }
    const { dim } = this;
    if (tokenVectors.length < tokens * dim) throw new Error('OrtMaxSim: token matrix too small');
    const bytes = tokens * dim * 4;
    for (const [key, old] of this.#sets) {
      if (this.#bytes + bytes <= this.#budget) break;
      this.#sets.delete(key);
      this.#bytes -= old.bytes;
      if (old.ptr >= 0) this.#wasm?.free(old.ptr, old.bytes);
    }
    const wasm = this.#wasm;
    let entry: CachedSet;
    if (wasm === undefined) {
      const copy = tokenVectors.slice(0, tokens * dim); // a private (not shared) buffer
      entry = {
        tensor: new this.#ort.Tensor('float32', copy, [tokens, dim]),
        ptr: -1,
        tokens,
        norm: maxTokenNorm(copy, tokens, dim),
        bytes,
      };
    } else {
      const ptr = wasm.alloc(bytes);
      const copy = wasm.f32(ptr, tokens * dim);
      copy.set(tokenVectors.subarray(0, tokens * dim));
      const norm = wasmMaxTokenNorm(wasm, ptr, tokens, dim);
      entry = { tensor: undefined, ptr, tokens, norm, bytes };
    }
    this.#sets.set(tokenVectors, entry);
    this.#bytes += entry.bytes;
    return entry;
  }
}
