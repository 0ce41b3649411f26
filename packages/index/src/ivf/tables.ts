// A query row's fast-scan tables: one 16-entry uint8 table per code nibble (the query against the
// residual buckets, shifted to start at 0 and scaled), their least entries and scale computed
// here, the entries filled in the module (`ScanLane.fillTables`).
import type { IvfData } from './train.js';
import { codeBytes } from './layout.js';
import { MAX_SUM, type ScanLane } from './wasm-scan.js';

/** A row's quantised tables: approximate similarity = `base + bias + sum / scale`. */
export interface RowTables {
  readonly bias: number;
  readonly scale: number;
}

/**
 * Fills `lane`'s tables (`2 · bytes` tables of 16 entries) for query row `q[at..at+dim)`: nibble
 * table `(j, h)` entry `v` is `Σ_i q[d_i] · weights[d_i][bucket_i(v)]` over the dimensions
 * packed in nibble `h` of code byte `j`, minus the table's least entry (their sum is `bias`),
 * times `scale`, rounded half up: every entry ≤ 127 and a token's total ≤ 65535. The least
 * entries and the scale are computed here, the entries in the module ({@link ScanLane.fillTables}).
 */
export function quantizeTables(
  data: Pick<IvfData, 'dim' | 'residualBits' | 'weights'>,
  q: Float32Array,
  at: number,
  lane: ScanLane,
): RowTables {
  const { dim, residualBits: bits, weights: w } = data;
  const tables = 2 * codeBytes(dim, bits);
  const range = bucketRange(w, dim, 1 << bits);
  if (lows.length < tables) lows = new Float64Array(tables);
  // A nibble's least and largest entries without computing its 16: rounding is monotone, so
  // the least product of q[d] with a bucket is q[d] times the least (or, q[d] < 0, the largest)
  // bucket, and the least sum of two nibble dimensions the sum of their least products.
  let bias = 0;
  let widest = 0;
  let total = 0;
  for (let t = 0; t < tables; t++) {
    let lo: number;
    let hi: number;
    // (Indices chosen by sign, not array destructuring: V8 allocates the pairs.)
    if (bits === 4) {
      const x = q[at + t]!;
      const neg = x >= 0 ? 0 : 1;
      lo = 0 + x * range[2 * t + neg]!;
      hi = 0 + x * range[2 * t + 1 - neg]!;
    } else {
      const x = q[at + 2 * t]!;
      const y = q[at + 2 * t + 1]!;
      const d = 4 * t;
      const nx = x >= 0 ? 0 : 1;
      const ny = y >= 0 ? 0 : 1;
      lo = 0 + x * range[d + nx]! + y * range[d + 2 + ny]!;
      hi = 0 + x * range[d + 1 - nx]! + y * range[d + 3 - ny]!;
    }
    lows[t] = lo;
    bias += lo;
    widest = Math.max(widest, hi - lo);
    total += hi - lo;
  }
  // Rounding adds at most ½ a table: keep that room under the uint16 total.
  const scale =
    widest === 0 ? 1 : Math.min(127 / widest, (MAX_SUM - tables / 2) / Math.max(total, 1e-30));
  lane.fillTables(data, q, at, lows, tables, scale);
  return { bias, scale };
}

/** {@link quantizeTables}' per-nibble least entries, reused call to call (one thread's). */
let lows = new Float64Array(0);
/** Per weights: each dimension's least and largest bucket. */
const ranges = new WeakMap<Float32Array, Float32Array>();

/** `[dim × 2]` each dimension's least and largest decoded bucket (computed once per weights). */
function bucketRange(w: Float32Array, dim: number, buckets: number): Float32Array {
  let range = ranges.get(w);
  if (range === undefined) {
    range = new Float32Array(2 * dim);
    for (let d = 0; d < dim; d++) {
      let lo = Infinity;
      let hi = -Infinity;
      for (let b = 0; b < buckets; b++) {
        lo = Math.min(lo, w[d * buckets + b]!);
        hi = Math.max(hi, w[d * buckets + b]!);
      }
      range[2 * d] = lo;
      range[2 * d + 1] = hi;
    }
    ranges.set(w, range);
  }
  return range;
}
