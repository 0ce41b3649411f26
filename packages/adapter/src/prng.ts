/**
 * A tiny seeded PRNG for the adapter's initialisation and per-epoch shuffling (the adapter has
 * no PRNG dependency). mulberry32 (Tommy Ettinger's 32-bit generator: period 2³², passes
 * gjrand/PractRand to 2⁴⁰ bytes) for uniforms, Box–Muller for normals. Far more draws than an
 * adapter needs (rank × dim ≈ 12k normals per init), and the same sequence on every platform:
 * only 32-bit integer arithmetic and `Math.log`/`Math.cos`/`Math.sin` of float64.
 */

/**
 * mulberry32 with Box–Muller normals.
 * @example
 * const prng = new Prng(42);
 * prng.next(); // float in [0, 1)
 * prng.normal(); // standard normal
 */
export class Prng {
  #state: number;
  #spare: number | undefined;

  constructor(seed: number) {
    if (!Number.isInteger(seed)) throw new Error(`Prng: seed must be an integer, got ${seed}`);
    this.#state = seed >>> 0;
  }

  /** The next uniform 32-bit unsigned integer. */
  nextUint32(): number {
    this.#state = (this.#state + 0x6d2b79f5) >>> 0;
    let t = this.#state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return (t ^ (t >>> 14)) >>> 0;
  }

  /** A uniform float in [0, 1) with 32 random bits. */
  next(): number {
    return this.nextUint32() / 4294967296;
  }

  /** An integer uniform in [0, n) (n ≤ 2³²; the modulo bias is below 2⁻²⁰ for n < 4096). */
  nextInt(n: number): number {
    return Math.floor(this.next() * n);
  }

  /**
   * A standard normal draw (Box–Muller: `√(−2 ln u₁)·cos(2πu₂)`, then the paired `sin` value
   * on the next call). `u₁ = 1 − next()` lies in (0, 1], so the logarithm is finite.
   */
  normal(): number {
    const spare = this.#spare;
    if (spare !== undefined) {
      this.#spare = undefined;
      return spare;
    }
    const radius = Math.sqrt(-2 * Math.log(1 - this.next()));
    const angle = 2 * Math.PI * this.next();
    this.#spare = radius * Math.sin(angle);
    return radius * Math.cos(angle);
  }
}

/** Chris Wellons' lowbias32 integer hash (uint32 → uint32), used to derive stream seeds. */
function lowbias32(x: number): number {
  let h = x >>> 0;
  h ^= h >>> 16;
  h = Math.imul(h, 0x7feb352d);
  h ^= h >>> 15;
  h = Math.imul(h, 0x846ca68b);
  h ^= h >>> 16;
  return h >>> 0;
}

/**
 * An independent-looking seed for stream `stream` of run seed `seed` (the initialisation is
 * stream 0, the shuffle of epoch `e` is stream `e`+1), so that changing the number of epochs
 * never changes the initial weights.
 * @example deriveSeed(42, 0) !== deriveSeed(42, 1) // true
 */
export function deriveSeed(seed: number, stream: number): number {
  return lowbias32((lowbias32(seed >>> 0) + Math.imul(stream + 1, 0x9e3779b1)) >>> 0);
}

/** Fisher–Yates shuffle of `items` in place, driven by `prng`. */
export function shuffleInPlace<T>(items: T[], prng: Prng): T[] {
  for (let i = items.length - 1; i > 0; i--) {
    const j = prng.nextInt(i + 1);
    const tmp = items[i] as T;
    items[i] = items[j] as T;
    items[j] = tmp;
  }
  return items;
}
