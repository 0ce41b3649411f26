import type { GraphParams } from './graph-params.js';

/**
 * Graph builds and loads at a time: one (they share one usearch worker), so the graphs held stay
 * within the budget but for the one being built.
 */
export const MAX_BUILDS = 1;

/**
 * Estimated bytes of one token in a usearch HNSW graph: its vector in the graph's kind, the
 * base layer's 2·M neighbour ids (4 B), and ~20 B of node header and upper layers.
 */
export function graphBytesPerToken(dim: number, params: Pick<GraphParams, 'kind' | 'M'>): number {
  const scalar = params.kind === 'f32' ? 4 : params.kind === 'f16' ? 2 : 1;
  return dim * scalar + 2 * params.M * 4 + 20;
}

/** At most `limit` holders at a time; the others wait their turn, first come first served. */
export class Gate {
  #inside = 0;
  readonly #waiting: (() => void)[] = [];

  constructor(readonly limit: number) {}

  async enter(): Promise<void> {
    if (this.#inside >= this.limit) await new Promise<void>((go) => this.#waiting.push(go));
    else this.#inside++;
  }

  /** Lets the next waiter in (its place is handed over), or frees the place. */
  leave(): void {
    const next = this.#waiting.shift();
    if (next !== undefined) next();
    else this.#inside--;
  }
}

/**
 * The entry that `eligible` accepts with the smallest `used` (the largest with `sign` −1), or
 * undefined.
 */
export function leastRecent<T extends { readonly used: number }>(
  entries: Iterable<readonly [string, T]>,
  eligible: (key: string, value: T) => boolean,
  sign: 1 | -1 = 1,
): readonly [string, T] | undefined {
  let best: readonly [string, T] | undefined;
  for (const e of entries)
    if (eligible(e[0], e[1]) && (best === undefined || sign * (e[1].used - best[1].used) < 0))
      best = e;
  return best;
}
