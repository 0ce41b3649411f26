import { tieOrder, type TokenHits, type TokenStore } from '@bfe/index';
import type { BankView } from '../types.js';
import { viewTokens } from '../view-tokens.js';

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
function rankViewProposals(
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
function isEveryRow(memories: Int32Array, n: number): boolean {
  if (memories.length !== n) return false;
  for (let i = 0; i < n; i++) if (memories[i] !== i) return false;
  return true;
}

/** `[tokens]` the memory row of each token of a view with these offsets. */
function memoryOfToken(offsets: Int32Array, n: number): Int32Array {
  const out = new Int32Array(offsets[n]!);
  for (let m = 0; m < n; m++) out.fill(m, offsets[m]!, offsets[m + 1]!);
  return out;
}

/**
 * The hits of ranked proposals over every memory of a view (`slots` are the memory rows): what a
 * maintained index returns for a whole-bank search.
 */
function viewHits(
  rows: number,
  k: number,
  { values, tokens }: Pick<RankedProposals, 'values' | 'tokens'>,
  tokenMemory: Int32Array,
): TokenHits {
  const memories = tokens.map((t) => tokenMemory[t]!);
  return { rows, k, values, tokens, memories, slots: memories.slice(), passes: 1, widenedRows: 0 };
}

/**
 * One view's side of a maintained index's search (HNSW graphs, IVF): whether a search covers
 * the whole view, the rescoring and ranking of proposals ({@link rankViewProposals}) and the hits
 * they make. The view's tie order and token-to-memory map are made at the first ranking.
 */
export class ViewRanker {
  readonly store: TokenStore;
  readonly dim: number;
  /** Tokens in the view. */
  readonly size: number;
  #rank: Int32Array | undefined;
  #tokenMemory: Int32Array | undefined;

  constructor(readonly view: BankView) {
    this.store = viewTokens(view);
    this.dim = view.dim;
    this.size = view.tokenOffsets[view.ids.length]!;
  }

  /** Whether a search over the candidate rows `memories` covers every memory of the view. */
  wholeView(memories: Int32Array): boolean {
    return isEveryRow(memories, this.view.ids.length);
  }

  /** {@link rankViewProposals} over this view; undefined when a row has fewer than `k`. */
  rank(
    queries: Float32Array,
    rows: number,
    k: number,
    proposed: (row: number) => Int32Array,
    extra: Int32Array,
  ): RankedProposals | undefined {
    const { view } = this;
    const rank = (this.#rank ??= tieOrder(view.ids).rank);
    return rankViewProposals(
      this.store,
      queries,
      rows,
      this.dim,
      k,
      proposed,
      extra,
      rank,
      this.#memories(),
    );
  }

  /** The hits of ranked proposals ({@link viewHits}). */
  hits(rows: number, k: number, ranked: RankedProposals): TokenHits {
    return viewHits(rows, k, ranked, this.#memories());
  }

  #memories(): Int32Array {
    return (this.#tokenMemory ??= memoryOfToken(this.view.tokenOffsets, this.view.ids.length));
  }
}
