import type { ChunkTopK } from './kernel.js';

/**
 * Running top-k of `rows` rows. Each row is kept sorted by score descending, then index
 * ascending; {@link merge} folds in one chunk's sorted top-k in `O(k)` per row.
 */
export class RunningTopK {
  readonly rows: number;
  readonly k: number;
  /** `[rows * k]`; the first `count` entries of each row are valid. */
  readonly values: Float32Array;
  readonly indices: Int32Array;
  count = 0;
  /** Whether a merged chunk's entries were chosen by an approximate product. */
  approximate = false;
  readonly #scratchValues: Float32Array;
  readonly #scratchIndices: Int32Array;

  constructor(rows: number, k: number) {
    this.rows = rows;
    this.k = k;
    this.values = new Float32Array(rows * k);
    this.indices = new Int32Array(rows * k);
    this.#scratchValues = new Float32Array(k);
    this.#scratchIndices = new Int32Array(k);
  }

  /** Folds in a chunk's per-row top-k; `offset` turns its chunk-local indices into bank ones. */
  merge(top: ChunkTopK, offset: number): void {
    const { rows, k, values, indices } = this;
    if (top.approximate === true) this.approximate = true;
    const kOut = top.kOut;
    const cv = top.values;
    const ci = top.indices;
    const count = this.count;
    const total = Math.min(k, count + kOut);
    const sv = this.#scratchValues;
    const si = this.#scratchIndices;
    for (let r = 0; r < rows; r++) {
      const base = r * k;
      const cBase = r * kOut;
      let a = 0;
      let b = 0;
      for (let o = 0; o < total; o++) {
        let takeA: boolean;
        if (a >= count) takeA = false;
        else if (b >= kOut) takeA = true;
        else {
          const va = values[base + a]!;
          const vb = cv[cBase + b]!;
          takeA = va > vb || (va === vb && indices[base + a]! < ci[cBase + b]! + offset);
        }
        if (takeA) {
          sv[o] = values[base + a]!;
          si[o] = indices[base + a]!;
          a++;
        } else {
          sv[o] = cv[cBase + b]!;
          si[o] = ci[cBase + b]! + offset;
          b++;
        }
      }
      values.set(sv.subarray(0, total), base);
      indices.set(si.subarray(0, total), base);
    }
    this.count = total;
  }
}
