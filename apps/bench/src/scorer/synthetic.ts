/**
 * Synthetic unit vectors that the Python peers (`apps/bench/python/scorer_peers.py`) generate
 * bit-for-bit the same way, so that every peer searches the same bank and the benchmark can
 * check that they return the same top-k.
 *
 * Element `(t, j)` of bank `seed`: `h_t = lowbias32(t ^ lowbias32(seed))`,
 * `h = lowbias32((h_t + j · 0x9e3779b1) mod 2³²)`, `r = (h >>> 8) / 2²³ − 1` (exact in
 * float32, uniform in [−1, 1)); each row is divided by its float64 L2 norm and rounded to
 * float32.
 */

/** Chris Wellons' lowbias32 integer hash (uint32 → uint32). */
export function lowbias32(x: number): number {
  let h = x >>> 0;
  h ^= h >>> 16;
  h = Math.imul(h, 0x7feb352d);
  h ^= h >>> 15;
  h = Math.imul(h, 0x846ca68b);
  h ^= h >>> 16;
  return h >>> 0;
}

const STEP = 0x9e3779b1;
const INV_2_23 = 2 ** -23;

/** Writes tokens `start..start+n-1` of bank `seed` into `out [n * dim]`. */
export function syntheticInto(
  out: Float32Array,
  start: number,
  n: number,
  dim: number,
  seed: number,
): Float32Array {
  if (out.length < n * dim) throw new Error(`syntheticInto: out holds ${out.length} < ${n * dim}`);
  const s = lowbias32(seed);
  const row = new Float64Array(dim);
  for (let i = 0; i < n; i++) {
    const ht = lowbias32(((start + i) ^ s) >>> 0);
    let ss = 0;
    for (let j = 0; j < dim; j++) {
      const h = lowbias32((ht + Math.imul(j, STEP)) >>> 0);
      const r = (h >>> 8) * INV_2_23 - 1;
      row[j] = r;
      ss += r * r;
    }
    const norm = Math.sqrt(ss);
    const at = i * dim;
    for (let j = 0; j < dim; j++) out[at + j] = row[j]! / norm;
  }
  return out;
}

/** A whole synthetic bank `[n * dim]`. */
export function synthetic(n: number, dim: number, seed: number): Float32Array {
  return syntheticInto(new Float32Array(n * dim), 0, n, dim, seed);
}
