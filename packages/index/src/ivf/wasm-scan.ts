/**
 * The clustered index's fast scan in WebAssembly SIMD (`assembly/ivf-scan.ts`): the codes held
 * in a shared linear memory (copied in once, or read into a lane's cache by position; appended
 * tokens' tail blocks grown onto it; every scan thread instantiates the module on it and works
 * in a lane of its own), per query row a table of 16 uint8 entries per code nibble
 * (one dimension at 4 bits, two at 2 bits; `quantizeTables`, tables.ts), then 16 tokens scored per
 * `i8x16.swizzle` and only those reaching a threshold handed back. Two builds of one source:
 * with relaxed SIMD's swizzle where the engine has it ({@link relaxedSimd}), else the plain one
 * (`pnpm bench:big-bank --ivf`'s kernel line measures both).
 */
import type { IvfData } from './train.js';
import { blockedCodeBytes, codeBytes, IVF_BLOCK } from './layout.js';
import { KERNEL_WASM_BASE64 } from './wasm-bytes.js';
import { KERNEL_WASM_BASE64 as RELAXED_WASM_BASE64 } from './wasm-bytes-relaxed.js';
import { relaxedSimd, wasm, WASM_PAGE as PAGE, type WasmMemory } from '../wasm-api.js';

interface ScanExports {
  scanBlocks(
    codes: number,
    tables: number,
    bytes: number,
    blockFrom: number,
    blockTo: number,
    threshold: number,
    outPlaces: number,
    outSums: number,
    scratch: number,
  ): number;
  fillTables(
    q: number,
    w: number,
    lows: number,
    tables: number,
    bits: number,
    scale: number,
    out: number,
  ): void;
  probeTop(
    scores: number,
    count: number,
    n: number,
    outIds: number,
    outVals: number,
    spare: number,
    sampled: number,
  ): number;
}

/** Blocks per module call: bounds the output arrays. */
const CHUNK_BLOCKS = 4096;
/** A lane's scratch bytes: a block's sums (32) and, at 64, the nibble mask. */
const SCRATCH = 128;
/** Where the first thread's lane starts (below: nothing of the module's). */
const LANE0 = 1024;
/** The sums of a token fit a uint16. */
export const MAX_SUM = 65535;
/** Scan threads one index's memory holds lanes for at most. */
export const MAX_SCAN_LANES = 64;

/** Which build of the fast scan: relaxed SIMD's swizzle, or the plain one. */
export type ScanKind = 'plain' | 'relaxed';

const compiled: { plain?: object; relaxed?: object } = {};

/**
 * The compiled fast scan: `'relaxed'` (relaxed SIMD's swizzle; {@link relaxedSimd}) or
 * `'plain'`; by default the relaxed one where the engine has it. Both return the same places
 * and sums (tested).
 */
export function scanModule(kind: ScanKind = relaxedSimd() ? 'relaxed' : 'plain'): object {
  return (compiled[kind] ??= new wasm.Module(
    Buffer.from(kind === 'relaxed' ? RELAXED_WASM_BASE64 : KERNEL_WASM_BASE64, 'base64'),
  ));
}

const align64 = (n: number): number => Math.ceil(n / 64) * 64;

/**
 * A lane's inputs of `quantizeTables` for `bytes` code bytes a token: the query row
 * (float32, at most `4 · bytes` dimensions), each table's least entry (float64, `2 · bytes`)
 * and the residual buckets (float32, `dim × buckets` ≤ `32 · bytes`).
 */
const tableInputBytes = (bytes: number): number => 16 * bytes + 16 * bytes + 128 * bytes;

/**
 * One thread's working bytes: scratch, its row's tables and their inputs, the scan's places and
 * sums, and (an index read by position) its cache of code blocks.
 */
function laneBytes(bytes: number, cacheBytes: number): number {
  return (
    SCRATCH +
    align64(2 * bytes * 16) +
    align64(tableInputBytes(bytes)) +
    2 * CHUNK_BLOCKS * IVF_BLOCK * 4 +
    align64(cacheBytes)
  );
}

/**
 * What another thread needs to scan an index's codes: the shared memory that holds them (and
 * every thread's lane), the compiled module, and where the codes are.
 */
export interface ScanShare {
  readonly memory: WasmMemory;
  readonly module: object;
  readonly codesAt: number;
  /** Code bytes per token. */
  readonly bytes: number;
  /** Bytes of each lane's cache of code blocks (0: the codes are resident at `codesAt`). */
  readonly cacheBytes: number;
}

/**
 * One thread's scanner over a {@link ScanShare}: its own module instance on the shared memory
 * and its own lane (tables, places, sums) at byte `at`.
 */
export class ScanLane {
  readonly #exports: ScanExports;
  readonly #bytes: number;
  readonly #codesAt: number;
  readonly #scratchAt: number;
  readonly #tablesAt: number;
  readonly #qAt: number;
  readonly #lowsAt: number;
  readonly #weightsAt: number;
  /** The residual buckets copied to `#weightsAt` (copied again for other ones). */
  #weights: Float32Array | undefined;
  readonly #placesAt: number;
  readonly #sumsAt: number;
  /** The current row's tables, a view into the memory (`quantizeTables` fills them). */
  readonly tables: Uint8Array;
  /** The last {@link scan}'s places and sums. */
  readonly places: Int32Array;
  readonly sums: Int32Array;
  /** Where this lane's cache of code blocks starts ({@link ScanShare.cacheBytes} long). */
  readonly cacheAt: number;
  /** The shared memory (its `buffer` grows: take a view when needed, not once). */
  readonly memory: WasmMemory;
  /** {@link probeTop}'s region (grown onto the memory at its first use) and its size. */
  #probeAt = 0;
  #probeBytes = 0;

  constructor(share: ScanShare, at: number) {
    const { memory, bytes } = share;
    const instance = new wasm.Instance(share.module, { env: { memory, abort: () => undefined } });
    this.#exports = instance.exports as ScanExports;
    this.#bytes = bytes;
    this.#codesAt = share.codesAt;
    const out = CHUNK_BLOCKS * IVF_BLOCK * 4;
    this.#scratchAt = at;
    this.#tablesAt = at + SCRATCH;
    this.#qAt = this.#tablesAt + align64(2 * bytes * 16);
    this.#lowsAt = this.#qAt + 16 * bytes;
    this.#weightsAt = this.#lowsAt + 16 * bytes;
    this.#placesAt = this.#qAt + align64(tableInputBytes(bytes));
    this.#sumsAt = this.#placesAt + out;
    this.cacheAt = this.#sumsAt + out;
    this.memory = memory;
    const buffer = memory.buffer;
    this.tables = new Uint8Array(buffer, this.#tablesAt, 2 * bytes * 16);
    this.places = new Int32Array(buffer, this.#placesAt, out / 4);
    this.sums = new Int32Array(buffer, this.#sumsAt, out / 4);
  }

  /**
   * Scores every place of blocks `blockFrom .. blockTo-1` (at most {@link CHUNK_BLOCKS}) of the
   * blocked codes at byte `codesAt` (default: the index's resident codes) with the current
   * tables; returns how many reached `threshold` (their places, `16 · block + lane` counted from
   * `codesAt`, and sums are the first entries of {@link places} and {@link sums}, in place order).
   */
  scan(blockFrom: number, blockTo: number, threshold: number, codesAt = this.#codesAt): number {
    if (blockTo - blockFrom > CHUNK_BLOCKS) throw new RangeError('WasmScanner: too many blocks');
    return this.#exports.scanBlocks(
      codesAt,
      this.#tablesAt,
      this.#bytes,
      blockFrom,
      blockTo,
      threshold,
      this.#placesAt,
      this.#sumsAt,
      this.#scratchAt,
    );
  }

  /**
   * The first `n` clusters (1 ≤ `n` < `count`) of a query row's centroid scores
   * `scores[at..at+count)` (finite) in probe order — score descending, equal scores by the
   * smaller cluster — as `probeOrder` orders them, selected in the module (the scores at or above
   * a threshold sampled from every 16th gathered by SIMD compares, then the best `n` of those;
   * `sampled` false: selected by insertion over the whole row, the same clusters). A view into this
   * lane's memory, valid until its next call.
   */
  probeTop(scores: Float32Array, at: number, count: number, n: number, sampled = true): Int32Array {
    const need = 2 * align64(4 * count) + 2 * align64(4 * n);
    if (this.#probeBytes < need) {
      // Whole pages past the memory's end, its old size returned by the grow itself (another
      // thread may grow it at the same time).
      const pages = Math.ceil(need / PAGE);
      let start: number;
      try {
        start = this.memory.grow(pages) * PAGE;
      } catch (cause) {
        throw new RangeError(`IVF scan: no room for a probe order of ${count} clusters`, { cause });
      }
      this.#probeAt = start;
      this.#probeBytes = pages * PAGE;
    }
    const buffer = this.memory.buffer;
    const idsAt = this.#probeAt + align64(4 * count);
    const valsAt = idsAt + align64(4 * n);
    new Float32Array(buffer, this.#probeAt, count).set(scores.subarray(at, at + count));
    this.#exports.probeTop(
      this.#probeAt,
      count,
      n,
      idsAt,
      valsAt,
      valsAt + align64(4 * n),
      sampled ? 1 : 0,
    );
    return new Int32Array(buffer, idsAt, n);
  }

  /**
   * Fills {@link tables} for query row `q[at..at+dim)` in the module: the tables of
   * `quantizeTables`, given each one's least entry (`lows`) and the scale.
   */
  fillTables(
    data: Pick<IvfData, 'dim' | 'residualBits' | 'weights'>,
    q: Float32Array,
    at: number,
    lows: Float64Array,
    tables: number,
    scale: number,
  ): void {
    const { dim, residualBits: bits, weights } = data;
    if (dim > 4 * this.#bytes || weights.length > 32 * this.#bytes || tables > 2 * this.#bytes) {
      throw new RangeError(`ScanLane: tables of ${dim} dimensions exceed the lane`);
    }
    const buffer = this.memory.buffer;
    if (this.#weights !== weights) {
      new Float32Array(buffer, this.#weightsAt, weights.length).set(weights);
      this.#weights = weights;
    }
    new Float32Array(buffer, this.#qAt, dim).set(q.subarray(at, at + dim));
    new Float64Array(buffer, this.#lowsAt, tables).set(lows.subarray(0, tables));
    this.#exports.fillTables(
      this.#qAt,
      this.#weightsAt,
      this.#lowsAt,
      tables,
      bits,
      scale,
      this.#tablesAt,
    );
  }
}

/**
 * The shared memory for `length` bytes of codes after the first lane. Its maximum is wasm32's
 * 4 GiB (an address-space reservation, not memory): it grows for more lanes and for appended
 * tokens' code blocks.
 */
function allocate(
  bytes: number,
  length: number,
  cacheBytes: number,
  kind: ScanKind | undefined,
): ScanShare {
  const codesAt = align64(LANE0 + laneBytes(bytes, cacheBytes));
  const pages = Math.ceil((codesAt + length) / PAGE);
  if (pages > 65536) throw new RangeError(`IVF codes of ${length} bytes exceed wasm32's 4 GiB`);
  const memory = new wasm.Memory({ initial: pages, maximum: 65536, shared: true });
  return { memory, module: scanModule(kind), codesAt, bytes, cacheBytes };
}

/**
 * One index's scanner: its codes in a shared WebAssembly memory of their own, with the calling
 * thread's lane; {@link addLane} makes room for another thread's ({@link ScanLane}), {@link grow}
 * for appended code blocks.
 */
export class WasmScanner extends ScanLane {
  /** The resident codes (blocked layout), a view into the shared memory (empty: read by position). */
  readonly codes: Uint8Array;
  /** The memory, module and code offset another thread's {@link ScanLane} needs. */
  readonly share: ScanShare;

  /**
   * With `data.codes`: the codes copied into the shared memory (resident); with `data.fill`
   * instead, resident too, written in place by `fill` (an index file read straight into the
   * memory, never held twice). With neither: none resident, and each lane holds a cache of
   * `cacheBytes` for code blocks read by position. `kind`: the build (default
   * {@link scanModule}'s).
   */
  constructor(
    data: Pick<IvfData, 'dim' | 'residualBits' | 'tokens'> & {
      readonly codes?: Uint8Array;
      readonly fill?: (into: Uint8Array) => void;
    },
    cacheBytes = 0,
    kind?: ScanKind,
  ) {
    const tokens = data.tokens.length;
    const length = blockedCodeBytes(tokens, data.dim, data.residualBits);
    if (data.codes !== undefined && data.codes.length !== length) {
      throw new Error(`IVF codes of ${data.codes.length} bytes, expected ${length} (blocked)`);
    }
    const given = data.codes !== undefined || data.fill !== undefined;
    if (given === (cacheBytes !== 0) || (data.codes !== undefined && data.fill !== undefined)) {
      throw new Error('WasmScanner: resident codes, or a cache for codes read by position');
    }
    const resident = given ? length : 0;
    const share = allocate(codeBytes(data.dim, data.residualBits), resident, cacheBytes, kind);
    super(share, LANE0);
    this.share = share;
    this.codes = new Uint8Array(share.memory.buffer, share.codesAt, resident);
    if (data.codes !== undefined) this.codes.set(data.codes);
    data.fill?.(this.codes);
  }

  /** Grows the shared memory by one lane for another thread; returns where it starts. */
  addLane(): number {
    const { bytes, cacheBytes } = this.share;
    return this.grow(laneBytes(bytes, cacheBytes), "another thread's lane");
  }

  /** Grows the shared memory by at least `bytes` (whole pages); returns where they start. */
  grow(bytes: number, what = 'appended codes'): number {
    const { memory } = this.share;
    try {
      // The old size as the grow returns it: a scan thread may grow the memory meanwhile
      // ({@link ScanLane.probeTop}).
      return memory.grow(Math.ceil(bytes / PAGE)) * PAGE;
    } catch (cause) {
      const held = memory.buffer.byteLength;
      throw new RangeError(`IVF scan: no room for ${what} (${held} bytes held)`, { cause });
    }
  }
}

export { CHUNK_BLOCKS };
