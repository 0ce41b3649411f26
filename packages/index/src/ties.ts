import { createHash } from 'node:crypto';

/**
 * The predeclared seed of the tie order (METHOD.md §8, "Ties"). Fixed for every run, system,
 * dataset and training seed; never tuned.
 */
export const TIE_SEED = 42;

/** Ranked positions examined when counting ties: the headline cut-off, k = 10. */
export const TIE_DEPTH = 10;

/**
 * A memory id's tie key: the SHA-256 (hex) of `${seed}:${id}`. Equal scores rank by ascending
 * key, an order that carries no information about relevance, the bank or the file order.
 *
 * @example
 * tieKey('conv-26:D1:3'); // 64 hex digits; the same on every machine and run
 */
export function tieKey(id: string, seed: number = TIE_SEED): string {
  return createHash('sha256').update(`${seed}:${id}`, 'utf8').digest('hex');
}

/** The tie order of one bank's memory rows. */
export interface TieOrder {
  readonly seed: number;
  /** The rows' memory ids, as given. */
  readonly ids: readonly string[];
  /** `rank[row]`: the row's place in the tie order, a permutation of `0..rows-1`. */
  readonly rank: Int32Array;
}

const memo = new WeakMap<readonly string[], Map<number, TieOrder>>();

/**
 * Orders memory rows by {@link tieKey} (then by id, then by row, so the order is total even for
 * a repeated id). Memoised per `ids` array and seed: a bank's order is computed once.
 *
 * @example
 * const ties = tieOrder(['a', 'b', 'c']);
 * ties.rank; // Int32Array: each row's place by SHA-256('42:a'), …, not by row
 */
export function tieOrder(ids: readonly string[], seed: number = TIE_SEED): TieOrder {
  let bySeed = memo.get(ids);
  const known = bySeed?.get(seed);
  if (known !== undefined && known.rank.length === ids.length) return known;
  const keys = ids.map((id) => tieKey(id, seed));
  const rows = Array.from(ids, (_, row) => row);
  rows.sort((a, b) => {
    const ka = keys[a]!;
    const kb = keys[b]!;
    if (ka !== kb) return ka < kb ? -1 : 1;
    const ia = ids[a]!;
    const ib = ids[b]!;
    return ia < ib ? -1 : ia > ib ? 1 : a - b;
  });
  const rank = new Int32Array(ids.length);
  rows.forEach((row, place) => (rank[row] = place));
  const order: TieOrder = { seed, ids, rank };
  if (bySeed === undefined) {
    bySeed = new Map();
    memo.set(ids, bySeed);
  }
  bySeed.set(seed, order);
  return order;
}

/**
 * Positions `i < depth` of a ranking, scores descending, whose score equals a neighbour's
 * (position `i − 1` or `i + 1`, the latter possibly beyond `depth`): the positions whose
 * occupant the tie order decided.
 *
 * @example
 * tiedPositions(Float64Array.of(3, 2, 2, 1, 0, 0), 5); // 3: positions 1, 2 and 4 (tied with 5)
 */
export function tiedPositions(sorted: ArrayLike<number>, depth: number = TIE_DEPTH): number {
  const n = Math.min(depth, sorted.length);
  let tied = 0;
  for (let i = 0; i < n; i++) {
    const s = sorted[i]!;
    if ((i > 0 && sorted[i - 1] === s) || (i + 1 < sorted.length && sorted[i + 1] === s)) tied++;
  }
  return tied;
}

/** How many ranked positions within the top {@link TIE_DEPTH} a tie decided, over queries. */
export interface TieCounts {
  /** Rankings counted (queries). */
  readonly queries: number;
  /** Of those, rankings with at least one tied position within the top {@link TIE_DEPTH}. */
  readonly queriesWithTies: number;
  /** Tied positions within the top {@link TIE_DEPTH}, summed over queries. */
  readonly tiedPositions: number;
}

/** Accumulates {@link TieCounts}, one ranking at a time. */
export class TieTally {
  #queries = 0;
  #withTies = 0;
  #positions = 0;

  /** Counts one ranking's sorted scores. */
  add(sorted: ArrayLike<number>): void {
    const tied = tiedPositions(sorted);
    this.#queries += 1;
    this.#positions += tied;
    if (tied > 0) this.#withTies += 1;
  }

  counts(): TieCounts {
    return {
      queries: this.#queries,
      queriesWithTies: this.#withTies,
      tiedPositions: this.#positions,
    };
  }
}
