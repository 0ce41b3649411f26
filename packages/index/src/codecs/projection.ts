import { uniformFloat64 } from 'pure-rand/distribution/uniformFloat64';
import { xoroshiro128plus } from 'pure-rand/generator/xoroshiro128plus';

/**
 * The seeded random projection of `rp128+sq4`: a `rows × dim` matrix whose rows are orthonormal
 * (Gaussian entries from pure-rand xoroshiro128plus through Box–Muller, then modified
 * Gram–Schmidt in float64), scaled by √(dim / rows) so that E[⟨Px, Py⟩] = ⟨x, y⟩ over the
 * random draw. Orthonormal rows rather than raw Gaussian ones: the same expectation with a
 * smaller variance of the projected inner products. The same seed gives the same matrix.
 *
 * @example
 * const p = projectionMatrix(42, 384, 128); // Float64Array(128 · 384), row-major
 */
export function projectionMatrix(seed: number, dim: number, rows: number): Float64Array {
  if (!Number.isInteger(seed) || seed < 0 || seed > 0xffff_ffff) {
    throw new Error(`Projection seed must be an integer in [0, 2^32 − 1], got ${seed}.`);
  }
  if (rows > dim) throw new Error(`Cannot project ${dim} dims onto ${rows} orthonormal rows.`);
  const rng = xoroshiro128plus(seed);
  const m = new Float64Array(rows * dim);
  for (let i = 0; i < m.length; i += 2) {
    // Box–Muller: two standard normals from two uniforms; 1 − u keeps the log finite.
    const r = Math.sqrt(-2 * Math.log(1 - uniformFloat64(rng)));
    const t = 2 * Math.PI * uniformFloat64(rng);
    m[i] = r * Math.cos(t);
    if (i + 1 < m.length) m[i + 1] = r * Math.sin(t);
  }
  const scale = Math.sqrt(dim / rows);
  for (let r = 0; r < rows; r++) {
    const ro = r * dim;
    for (let p = 0; p < r; p++) {
      const po = p * dim;
      let dot = 0;
      for (let d = 0; d < dim; d++) dot += m[ro + d]! * m[po + d]!;
      // Rows before r are already scaled; undo the scale in the projection coefficient.
      const c = dot / (scale * scale);
      for (let d = 0; d < dim; d++) m[ro + d] = m[ro + d]! - c * m[po + d]!;
    }
    let norm = 0;
    for (let d = 0; d < dim; d++) norm += m[ro + d]! * m[ro + d]!;
    const f = scale / Math.sqrt(norm);
    for (let d = 0; d < dim; d++) m[ro + d] = m[ro + d]! * f;
  }
  return m;
}

/**
 * `out[i] = P · x_i` for the `n` rows of `x` (`n × dim` → `n × rows`), accumulated in float64.
 *
 * @example
 * project(projectionMatrix(42, 384, 128), 128, x, n, 384); // Float32Array(n · 128)
 */
export function project(
  matrix: Float64Array,
  rows: number,
  x: Float32Array,
  n: number,
  dim: number,
  out: Float32Array = new Float32Array(n * rows),
): Float32Array {
  for (let i = 0; i < n; i++) {
    const xo = i * dim;
    const oo = i * rows;
    for (let r = 0; r < rows; r++) {
      const mo = r * dim;
      let s = 0;
      for (let d = 0; d < dim; d++) s += matrix[mo + d]! * x[xo + d]!;
      out[oo + r] = s;
    }
  }
  return out;
}
