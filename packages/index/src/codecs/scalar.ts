/**
 * Per-dimension scalar quantisation (SQ8: 256 levels in a byte; SQ4: 16 levels, two dims per
 * byte, the even dim in the low nibble). Levels are uniform on `[lo_d, hi_d]`:
 * `x̂ = lo_d + q · step_d`, `q = round((x − lo_d) / step_d)` clamped to `[0, L − 1]`, so a value
 * inside the range is off by at most `step_d / 2`.
 */

/** How the per-dimension range is fitted: the sample's min/max, or its 0.1 % / 99.9 % quantiles. */
export type ScalarRange = 'minmax' | 'quantile';

/** The fitted levels: `lo` and `step` per dimension. */
export interface ScalarFit {
  readonly lo: Float32Array;
  readonly step: Float32Array;
}

/**
 * Tokens a quantile range is fitted on at most (min/max reads every row): `trainCodec` draws
 * them in the seeded hash order of the tokens' identity (`hashSampleRows`), never in file order.
 */
export const QUANTILE_ROWS = 65536;
const QUANTILE_TAIL = 0.001;

/**
 * Fits `lo`/`step` per dimension on `n × dim` sample rows for `levels` levels. A quantile range
 * reads the rows `quantileRows` lists (default: every row); each dimension's values are sorted,
 * so the fit depends on which rows are listed, not on their order.
 *
 * @example
 * fitScalar(sample, n, 384, 16, 'minmax'); // { lo: Float32Array(384), step: Float32Array(384) }
 */
export function fitScalar(
  sample: Float32Array,
  n: number,
  dim: number,
  levels: number,
  range: ScalarRange,
  quantileRows?: Int32Array,
): ScalarFit {
  if (n < 1) throw new Error('Cannot fit a scalar quantiser on an empty sample.');
  const lo = new Float32Array(dim);
  const hi = new Float32Array(dim);
  if (range === 'minmax') {
    lo.fill(Infinity);
    hi.fill(-Infinity);
    for (let i = 0; i < n; i++) {
      const o = i * dim;
      for (let d = 0; d < dim; d++) {
        const v = sample[o + d]!;
        if (v < lo[d]!) lo[d] = v;
        if (v > hi[d]!) hi[d] = v;
      }
    }
  } else {
    const picked = quantileRows ?? Int32Array.from({ length: n }, (_, i) => i);
    const rows = picked.length;
    if (rows < 1) throw new Error('Cannot fit a quantile range on no rows.');
    const col = new Float32Array(rows);
    for (let d = 0; d < dim; d++) {
      for (let r = 0; r < rows; r++) col[r] = sample[picked[r]! * dim + d]!;
      col.sort();
      lo[d] = col[Math.floor(QUANTILE_TAIL * (rows - 1))]!;
      hi[d] = col[Math.ceil((1 - QUANTILE_TAIL) * (rows - 1))]!;
    }
  }
  const step = new Float32Array(dim);
  for (let d = 0; d < dim; d++) step[d] = (hi[d]! - lo[d]!) / (levels - 1);
  return { lo, step };
}

/** Quantises `n × dim` rows to one byte per dim (`levels` ≤ 256). */
export function encodeSq8(fit: ScalarFit, x: Float32Array, n: number, dim: number): Uint8Array {
  const out = new Uint8Array(n * dim);
  const { lo, step } = fit;
  for (let i = 0; i < n; i++) {
    const o = i * dim;
    for (let d = 0; d < dim; d++) out[o + d] = level(x[o + d]!, lo[d]!, step[d]!, 255);
  }
  return out;
}

/** Quantises `n × dim` rows (dim even) to 4 bits per dim, two dims per byte. */
export function encodeSq4(fit: ScalarFit, x: Float32Array, n: number, dim: number): Uint8Array {
  const half = dim >> 1;
  const out = new Uint8Array(n * half);
  const { lo, step } = fit;
  for (let i = 0; i < n; i++) {
    const o = i * dim;
    const b = i * half;
    for (let j = 0; j < half; j++) {
      const d = 2 * j;
      const a = level(x[o + d]!, lo[d]!, step[d]!, 15);
      const c = level(x[o + d + 1]!, lo[d + 1]!, step[d + 1]!, 15);
      out[b + j] = a | (c << 4);
    }
  }
  return out;
}

function level(v: number, lo: number, step: number, top: number): number {
  if (!(step > 0)) return 0;
  const q = Math.round((v - lo) / step);
  return q < 0 ? 0 : q > top ? top : q;
}

/** Decodes SQ8 codes of rows `[start, end)` into `out` (`(end − start) × dim`). */
export function decodeSq8Into(
  out: Float32Array,
  fit: ScalarFit,
  codes: Uint8Array,
  start: number,
  end: number,
  dim: number,
): void {
  const { lo, step } = fit;
  for (let i = start; i < end; i++) {
    const c = i * dim;
    const o = (i - start) * dim;
    for (let d = 0; d < dim; d++) out[o + d] = lo[d]! + codes[c + d]! * step[d]!;
  }
}

/** Decodes SQ4 codes of rows `[start, end)` into `out` (`(end − start) × dim`). */
export function decodeSq4Into(
  out: Float32Array,
  fit: ScalarFit,
  codes: Uint8Array,
  start: number,
  end: number,
  dim: number,
): void {
  const { lo, step } = fit;
  const half = dim >> 1;
  for (let i = start; i < end; i++) {
    const c = i * half;
    const o = (i - start) * dim;
    for (let j = 0; j < half; j++) {
      const byte = codes[c + j]!;
      const d = 2 * j;
      out[o + d] = lo[d]! + (byte & 15) * step[d]!;
      out[o + d + 1] = lo[d + 1]! + (byte >> 4) * step[d + 1]!;
    }
  }
}
