/**
 * Where the segmented build's bank tokens come from (`segmented.ts`):
 *
 * - **tiled** (one bank, `noise` > 0 or not): the scale curve's tiled bank — token `t` is the
 *   source bank's token `t mod n` plus Gaussian noise of norm ≈ `noise`, re-normalised (the
 *   generator of `scale.ts`: same seed, same draws, so token `t` is the token every earlier
 *   build added);
 * - **real** (`--real`, one or more banks): the banks' own content-token states, concatenated
 *   in the order given, copied as they are — no tiling, no noise; asking for more tokens than
 *   the banks hold is refused.
 *
 * Queries in both: the first bank's real query token states, consecutive questions joined into
 * queries of `rows` rows (`tiledQueries`).
 */
import { openBank, type OpenedBank } from '@bfe/encoder';

/** The tiled bank's noise: standard normal draws (xorshift32, Box–Muller), one per call. */
function gaussianSource(seed: number): () => number {
  let s = seed >>> 0 || 1;
  const u = (): number => {
    s ^= s << 13;
    s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5;
    s >>>= 0;
    return (s + 0.5) / 4294967296;
  };
  return () => Math.sqrt(-2 * Math.log(u())) * Math.cos(2 * Math.PI * u());
}

/**
 * `queries` queries of `rows` real query token states each: the tokens of consecutive questions
 * from evenly spaced starts, joined until `rows` rows.
 */
export function tiledQueries(
  qs: { ids: readonly string[]; tokenOffsets: Int32Array; tokenVectors: Float32Array },
  dim: number,
  queries: number,
  rows: number,
): Float32Array {
  const q = new Float32Array(queries * rows * dim);
  const step = Math.floor(qs.ids.length / queries);
  for (let i = 0; i < queries; i++) {
    let w = 0;
    for (let j = i * step; w < rows; j = (j + 1) % qs.ids.length) {
      for (let t = qs.tokenOffsets[j]!; t < qs.tokenOffsets[j + 1]! && w < rows; t++, w++) {
        q.set(qs.tokenVectors.subarray(t * dim, (t + 1) * dim), (i * rows + w) * dim);
      }
    }
  }
  return q;
}

export interface TokenSource {
  /** Tokens available (Infinity for a tiled source). */
  readonly tokens: number;
  readonly dim: number;
  /** For `meta.json`. */
  readonly describe: string;
  /** The query rows: `queries × rows` real query token states. */
  readonly queries: Float32Array;
  /** Writes tokens `from … from + count − 1` into `x` (row-major, `dim` per token), in order. */
  fill(x: Float32Array, from: number, count: number): void;
}

export interface TokenSourceOptions {
  readonly banks: readonly string[];
  readonly real: boolean;
  readonly noise: number;
  readonly seed: number;
  readonly queries: number;
  readonly rows: number;
}

export async function openTokenSource(o: TokenSourceOptions): Promise<TokenSource> {
  if (o.banks.length === 0) throw new Error('--bank names no bank');
  const opened: OpenedBank[] = [];
  for (const path of o.banks) opened.push(await openBank(path, { verifyHashes: false }));
  const dim = opened[0]!.dim;
  if (opened.some((b) => b.dim !== dim)) throw new Error('the banks have different dimensions');
  const queries = tiledQueries(opened[0]!.queries, dim, o.queries, o.rows);
  const sizes = opened.map((b) => b.memories.tokenOwner.length);
  if (!o.real) {
    if (opened.length !== 1) throw new Error('a tiled source takes one bank (--real for several)');
    const src = opened[0]!.memories.tokenVectors;
    const srcN = sizes[0]!;
    const next = gaussianSource(o.seed);
    const sigma = o.noise / Math.sqrt(dim);
    let expected = 0;
    return {
      tokens: Infinity,
      dim,
      describe: `${o.banks[0]} (${srcN} LoCoMo tokens, tiled)`,
      queries,
      fill(x, from, count) {
        // The noise stream is sequential: tokens must be asked for in order.
        if (from !== expected)
          throw new Error(`tiled tokens asked from ${from}, next is ${expected}`);
        expected = from + count;
        for (let t = 0; t < count; t++) {
          const at = ((from + t) % srcN) * dim;
          let ss = 0;
          for (let d = 0; d < dim; d++) {
            const v = src[at + d]! + sigma * next();
            x[t * dim + d] = v;
            ss += v * v;
          }
          const f = 1 / Math.sqrt(ss);
          for (let d = 0; d < dim; d++) x[t * dim + d]! *= f;
        }
      },
    };
  }
  const total = sizes.reduce((a, b) => a + b, 0);
  return {
    tokens: total,
    dim,
    describe: `real states, no noise: ${o.banks.map((p, i) => `${p} (${sizes[i]} tokens)`).join(' + ')}`,
    queries,
    fill(x, from, count) {
      if (from + count > total) {
        throw new Error(`tokens ${from}…${from + count - 1} asked, the banks hold ${total}`);
      }
      let w = 0;
      let base = 0;
      for (let b = 0; b < opened.length && w < count; b++) {
        const n = sizes[b]!;
        const a = Math.max(from + w - base, 0);
        if (a < n) {
          const take = Math.min(n - a, count - w);
          x.set(opened[b]!.memories.tokenVectors.subarray(a * dim, (a + take) * dim), w * dim);
          w += take;
        }
        base += n;
      }
    },
  };
}
