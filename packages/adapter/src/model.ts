/**
 * The query adapter of METHOD.md §4: a bias-free, activation-free, norm-preserving low-rank
 * residual on query token states,
 *
 *   `T(h) = ‖h‖₂ · (h + BAh) / max(‖h + BAh‖₂, ε)`, `A ∈ R^{r×d}`, `B ∈ R^{d×r}`, `ε = 1e-12`,
 *
 * with its hand-written backward pass. Every product accumulates in float64 whatever the
 * storage (`Float32Array` on the fast path, `Float64Array` for the gradient checks).
 */
import { Prng, deriveSeed } from './prng.js';
import { dot, type FloatArray } from './loss/dot.js';

export type { FloatArray } from './loss/dot.js';

/** `ε` of `max(‖h + BAh‖, ε)`: only a zero (or denormal) residual sum ever reaches it. */
export const NORM_EPSILON = 1e-12;
/** METHOD.md §4's rank. */
export const DEFAULT_RANK = 32;
/** Standard deviation of the initial `A` entries (`B` starts at zero). */
export const DEFAULT_INIT_STD = 0.02;

/** The adapter's parameters, row-major. */
export interface AdapterParams<T extends FloatArray = FloatArray> {
  readonly dim: number;
  readonly rank: number;
  /** `A [rank × dim]`. */
  readonly a: T;
  /** `B [dim × rank]`. */
  readonly b: T;
}

/**
 * Seeded initial parameters: `A_{jk} ~ N(0, initStd²)` drawn row by row from
 * `Prng(deriveSeed(seed, 0))`, `B = 0`, so the adapter starts as exactly the identity.
 * Float64 storage: the trainer's master weights.
 * @example
 * const p = initAdapterParams(384, 32, 42); // p.a: Float64Array [32 * 384], p.b: zeros [384 * 32]
 */
export function initAdapterParams(
  dim: number,
  rank: number = DEFAULT_RANK,
  seed = 42,
  initStd: number = DEFAULT_INIT_STD,
): AdapterParams<Float64Array> {
  checkShape(dim, rank);
  const prng = new Prng(deriveSeed(seed, 0));
  const a = new Float64Array(rank * dim);
  for (let i = 0; i < a.length; i++) a[i] = initStd * prng.normal();
  return { dim, rank, a, b: new Float64Array(dim * rank) };
}

/** What the backward pass needs from the forward pass, for `rows` token rows. */
export interface AdapterForwardCache {
  readonly rows: number;
  /** `u = Ah`, `[rows × rank]`. */
  readonly u: Float64Array;
  /** `z = h + Bu`, `[rows × dim]`. */
  readonly z: Float64Array;
  /** `‖h‖` per row. */
  readonly hNorm: Float64Array;
  /** `‖z‖` per row (before the `ε` floor). */
  readonly zNorm: Float64Array;
}

/** An empty forward cache for `rows` rows of an adapter of this shape. */
export function createForwardCache(rows: number, dim: number, rank: number): AdapterForwardCache {
  return {
    rows,
    u: new Float64Array(rows * rank),
    z: new Float64Array(rows * dim),
    hNorm: new Float64Array(rows),
    zNorm: new Float64Array(rows),
  };
}

/**
 * `T` applied to each row of `tokens [rows × dim]`, written into `out [rows × dim]` (which must
 * not overlap `tokens`); fills `cache` for {@link adapterBackward} when given. With `B = 0` the
 * output equals the input bit for bit (rows with `‖h‖ ≥ ε`; a `−0` entry comes out `+0`):
 * `z = h` exactly, `‖z‖ = ‖h‖` by the same summation, so the scale is exactly 1. A zero row
 * maps to zero.
 */
export function applyAdapterInto<T extends FloatArray>(
  out: T,
  params: AdapterParams,
  tokens: FloatArray,
  rows: number,
  cache?: AdapterForwardCache,
): T {
  const { dim, rank, a, b } = params;
  if (tokens.length !== rows * dim) {
    throw new Error(`applyAdapter: tokens hold ${tokens.length} values, not ${rows} × ${dim}`);
  }
  if (out.length < rows * dim)
    throw new Error(`applyAdapter: out holds ${out.length} < ${rows * dim}`);
  if (
    out.buffer === tokens.buffer &&
    out.byteOffset < tokens.byteOffset + tokens.byteLength &&
    tokens.byteOffset < out.byteOffset + out.byteLength
  ) {
    throw new Error('applyAdapter: out must not overlap tokens');
  }
  if (cache !== undefined && cache.rows < rows) {
    throw new Error(`applyAdapter: the cache holds ${cache.rows} < ${rows} rows`);
  }
  const u = cache?.u ?? new Float64Array(rank);
  const zRow = new Float64Array(dim);
  const z = cache?.z;
  for (let row = 0; row < rows; row++) {
    const h0 = row * dim;
    const u0 = cache === undefined ? 0 : row * rank;
    // u = A h (4-way unrolled dot products of length d)
    for (let j = 0; j < rank; j++) u[u0 + j] = dot(a, j * dim, tokens, h0, dim);
    // z = h + B u; both norms by the same summation so that B = 0 gives a scale of exactly 1
    let hh = 0;
    let zz = 0;
    for (let k = 0; k < dim; k++) {
      const b0 = k * rank;
      let v = 0;
      for (let j = 0; j < rank; j++) v += b[b0 + j]! * u[u0 + j]!;
      const h = tokens[h0 + k]!;
      const zk = h + v;
      zRow[k] = zk;
      hh += h * h;
      zz += zk * zk;
    }
    const hNorm = Math.sqrt(hh);
    const zNorm = Math.sqrt(zz);
    const scale = hNorm / Math.max(zNorm, NORM_EPSILON);
    for (let k = 0; k < dim; k++) out[h0 + k] = zRow[k]! * scale;
    if (cache !== undefined && z !== undefined) {
      z.set(zRow, h0);
      cache.hNorm[row] = hNorm;
      cache.zNorm[row] = zNorm;
    }
  }
  return out;
}

/**
 * `T` applied to each row of a row-major token matrix; a new `Float32Array`, the input is
 * never changed.
 * @example
 * const adapted = applyAdapter(adapter, queryTokens, 12); // queryTokens: Float32Array [12 * 384]
 * adapted; // Float32Array [12 * 384], each row with the norm of its input row
 */
export function applyAdapter(
  params: AdapterParams,
  tokens: FloatArray,
  rows: number,
): Float32Array {
  return applyAdapterInto(new Float32Array(rows * params.dim), params, tokens, rows);
}

/**
 * Backward pass of `T` over a batch of rows: adds `∂L/∂A` into `gradA [rank × dim]` and
 * `∂L/∂B` into `gradB [dim × rank]`, given `gradOut = ∂L/∂T [rows × dim]` and the forward
 * `cache` of the same `tokens`. With `ẑ = z/‖z‖` and `n = ‖h‖`:
 * `∂L/∂z = (n/‖z‖)(g − ẑ(ẑ·g))` (or `(n/ε) g` below the floor), `∂L/∂B += (∂L/∂z) uᵀ`,
 * `∂L/∂u = Bᵀ ∂L/∂z`, `∂L/∂A += (∂L/∂u) hᵀ`. `‖h‖` does not depend on A or B.
 */
export function adapterBackward(
  params: AdapterParams,
  tokens: FloatArray,
  rows: number,
  cache: AdapterForwardCache,
  gradOut: FloatArray,
  gradA: Float64Array,
  gradB: Float64Array,
): void {
  const { dim, rank, b } = params;
  if (gradOut.length < rows * dim || cache.rows < rows) {
    throw new Error(`adapterBackward: gradOut or cache smaller than ${rows} × ${dim}`);
  }
  if (gradA.length !== rank * dim || gradB.length !== dim * rank) {
    throw new Error(`adapterBackward: gradients must hold ${rank * dim} values each`);
  }
  const { u, z, hNorm, zNorm } = cache;
  const gz = new Float64Array(dim);
  const gu = new Float64Array(rank);
  for (let row = 0; row < rows; row++) {
    const n = hNorm[row]!;
    if (n === 0) continue; // T ≡ 0 around a zero row
    const s = zNorm[row]!;
    const h0 = row * dim;
    const u0 = row * rank;
    if (s > NORM_EPSILON) {
      let zg = 0;
      for (let k = 0; k < dim; k++) zg += z[h0 + k]! * gradOut[h0 + k]!;
      const c = n / s;
      const proj = zg / (s * s);
      for (let k = 0; k < dim; k++) gz[k] = c * (gradOut[h0 + k]! - z[h0 + k]! * proj);
    } else {
      const c = n / NORM_EPSILON;
      for (let k = 0; k < dim; k++) gz[k] = c * gradOut[h0 + k]!;
    }
    gu.fill(0);
    for (let k = 0; k < dim; k++) {
      const g = gz[k]!;
      if (g === 0) continue;
      const b0 = k * rank;
      for (let j = 0; j < rank; j++) {
        gradB[b0 + j]! += g * u[u0 + j]!;
        gu[j]! += b[b0 + j]! * g;
      }
    }
    for (let j = 0; j < rank; j++) {
      const g = gu[j]!;
      if (g === 0) continue;
      const a0 = j * dim;
      for (let k = 0; k < dim; k++) gradA[a0 + k]! += g * tokens[h0 + k]!;
    }
  }
}

function checkShape(dim: number, rank: number): void {
  if (!Number.isInteger(dim) || dim < 1) throw new Error(`adapter: dim must be ≥ 1, got ${dim}`);
  if (!Number.isInteger(rank) || rank < 1 || rank > dim) {
    throw new Error(`adapter: rank must be an integer in [1, dim = ${dim}], got ${rank}`);
  }
}
