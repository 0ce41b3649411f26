import type { TokenHits, TokenStore } from '@bfe/index';

/** Per query row, the ranked top `k` of a maintained index's proposals over a bank view. */
export interface RankedProposals {
  /** `[rows × k]` float64 similarities, each row descending. */
  readonly values: Float64Array;
  /** `[rows × k]` the view's tokens. */
  readonly tokens: Int32Array;
  /**
   * `[rows]` the smallest similarity among each row's own proposals (+∞ for none): a caller
   * whose index returned a top list can tell whether a tie at its last place decided the row.
   */
  readonly ownWorst: Float64Array;
}

/**
 * Rescoring and ranking shared by the store's maintained indexes (HNSW graphs, IVF): per query
 * row, its own proposals (view tokens) joined by `extra` (the view's tokens the index lacks,
 * scored one by one), every one rescored in float64 from the view's float32 states and ranked
 * as the exact backend ranks — similarity descending, then the memories' tie order (`rank`),
 * then token position. Undefined when a row has fewer than `k` tokens to rank (the caller then
 * searches exactly).
 * @example
 * const r = rankViewProposals(store, q, 2, 16, 64, (row) => proposed[row]!, missing, rank, tokenMemory);
 * r?.values; // Float64Array [2 × 64]
 */
export function rankViewProposals(
  store: TokenStore,
  queries: Float32Array,
  rows: number,
  dim: number,
  k: number,
  proposed: (row: number) => Int32Array,
  extra: Int32Array,
  rank: Int32Array,
  tokenMemory: Int32Array,
): RankedProposals | undefined {
  const values = new Float64Array(rows * k);
  const tokens = new Int32Array(rows * k);
  const ownWorst = new Float64Array(rows).fill(Number.POSITIVE_INFINITY);
  let most = 0;
  for (let r = 0; r < rows; r++) most = Math.max(most, proposed(r).length);
  const list = new Int32Array(most + extra.length);
  const scores = new Float64Array(most + extra.length);
  for (let r = 0; r < rows; r++) {
    const own = proposed(r);
    list.set(own, 0);
    list.set(extra, own.length);
    const c = own.length + extra.length;
    if (c < k) return undefined;
    store.dots(list, c, queries, r * dim, scores);
    for (let i = 0; i < own.length; i++) ownWorst[r] = Math.min(ownWorst[r]!, scores[i]!);
    const order = Array.from({ length: c }, (_, i) => i).sort((a, b) => {
      const d = scores[b]! - scores[a]!;
      if (d !== 0) return d;
      const ta = list[a]!;
      const tb = list[b]!;
      return rank[tokenMemory[ta]!]! - rank[tokenMemory[tb]!]! || ta - tb;
    });
    for (let h = 0; h < k; h++) {
      values[r * k + h] = scores[order[h]!]!;
      tokens[r * k + h] = list[order[h]!]!;
    }
  }
  return { values, tokens, ownWorst };
}

/** Whether `memories` is every row `0..n-1` in order (a whole-bank search). */
export function isEveryRow(memories: Int32Array, n: number): boolean {
  if (memories.length !== n) return false;
  for (let i = 0; i < n; i++) if (memories[i] !== i) return false;
  return true;
}

/** `[tokens]` the memory row of each token of a view with these offsets. */
export function memoryOfToken(offsets: Int32Array, n: number): Int32Array {
  const out = new Int32Array(offsets[n]!);
  for (let m = 0; m < n; m++) out.fill(m, offsets[m]!, offsets[m + 1]!);
  return out;
}

/**
 * The hits of ranked proposals over every memory of a view (`slots` are the memory rows): what a
 * maintained index returns for a whole-bank search.
 */
export function viewHits(
  rows: number,
  k: number,
  { values, tokens }: Pick<RankedProposals, 'values' | 'tokens'>,
  tokenMemory: Int32Array,
): TokenHits {
  const memories = tokens.map((t) => tokenMemory[t]!);
  return { rows, k, values, tokens, memories, slots: memories.slice(), passes: 1, widenedRows: 0 };
}
