// The exact rescoring every proposing backend (HNSW graphs, clustered residual codes) ends with.
import { tokensOf } from './hnsw/layout.js';
import { positionOf, topInto } from './hnsw/top.js';
import type { TokenHits } from './token-index.js';
import type { TokenStore } from './token-store.js';

/** What {@link rescoreProposals} needs: the stored rows, the query, the proposals per row. */
export interface ProposalRescore {
  /** The stored token rows the float64 scores are computed from. */
  readonly store: Pick<TokenStore, 'dots'>;
  /** The prepared queries, `rows × codeDim`. */
  readonly q: Float32Array;
  readonly codeDim: number;
  readonly rows: number;
  /** Hits kept per row. */
  readonly k: number;
  /** Row r's proposed bank tokens (distinct). */
  readonly proposals: (r: number) => Int32Array;
  readonly tokenOffsets: ArrayLike<number>;
  /** The candidate memories (ascending, distinct). */
  readonly memories: Int32Array;
  /** Tokens the candidate memories hold. */
  readonly candidateTokens: number;
  /** Bank token → its memory row. */
  readonly tokenMemory: Int32Array;
  /** The memories' tie rank (`tieOrder(ids).rank`), or undefined to break ties by token. */
  readonly rank: Int32Array | undefined;
}

/**
 * The exact top-k of each row's proposals as {@link TokenHits} (one pass; `best` is the
 * caller's). Rescores each row's proposals from the stored rows in float64 and keeps the best `k` (equal
 * scores by the tie rank, then token). A row with fewer than `k` proposals, or whose k-th kept
 * score ties the worst proposal (the tie may run past the proposals, and the tie order must
 * choose among all of it), is searched over every candidate token instead: exhaustive.
 */
export function rescoreProposals(p: ProposalRescore): TokenHits {
  const rescore = new ProposalRescorer(p);
  for (let r = 0; r < p.rows; r++) rescore.row(r, p.proposals(r));
  return rescore.hits();
}

/**
 * {@link rescoreProposals} a row at a time, in any order (each row's result depends on its
 * proposals alone): a caller rescores rows as their proposals arrive, then takes {@link hits}.
 */
export class ProposalRescorer {
  readonly #p: Omit<ProposalRescore, 'proposals'>;
  readonly #values: Float64Array;
  readonly #tokens: Int32Array;
  #widened = 0;
  #all: Int32Array | undefined;
  #scores = new Float64Array(0);
  /** Seconds spent in {@link row}. */
  seconds = 0;

  constructor(p: Omit<ProposalRescore, 'proposals'>) {
    this.#p = p;
    this.#values = new Float64Array(p.rows * p.k);
    this.#tokens = new Int32Array(p.rows * p.k);
  }

  /** Rescores row `r`'s proposed bank tokens `found` (distinct; once per row). */
  row(r: number, found: Int32Array): void {
    const t0 = performance.now();
    const p = this.#p;
    const { store, q, codeDim, k, tokenMemory, rank } = p;
    const values = this.#values;
    const tokens = this.#tokens;
    let exhaustive = found.length < k;
    if (!exhaustive) {
      if (this.#scores.length < found.length) this.#scores = new Float64Array(found.length);
      const scores = this.#scores;
      store.dots(found, found.length, q, r * codeDim, scores);
      topInto(values, tokens, r * k, k, found, scores, tokenMemory, rank);
      if (found.length < p.candidateTokens) {
        let worst = Infinity;
        for (let i = 0; i < found.length; i++) worst = Math.min(worst, scores[i]!);
        exhaustive = values[r * k + k - 1] === worst;
      }
    }
    if (exhaustive) {
      this.#all ??= tokensOf(p.tokenOffsets, p.memories);
      found = this.#all;
      if (this.#scores.length < found.length) this.#scores = new Float64Array(found.length);
      store.dots(found, found.length, q, r * codeDim, this.#scores);
      topInto(values, tokens, r * k, k, found, this.#scores, tokenMemory, rank);
      this.#widened++;
    }
    this.seconds += (performance.now() - t0) / 1000;
  }

  /** The hits of every row (each rescored by {@link row} first). */
  hits(): TokenHits {
    const p = this.#p;
    const { rows, k, tokenMemory } = p;
    const tokens = this.#tokens;
    const memories = new Int32Array(rows * k);
    const slots = new Int32Array(rows * k);
    // Every memory a candidate (ascending, distinct: 0 .. M − 1): a memory's slot is itself.
    const every = p.memories.length === p.tokenOffsets.length - 1;
    for (let i = 0; i < rows * k; i++) {
      const m = tokenMemory[tokens[i]!]!;
      memories[i] = m;
      slots[i] = every ? m : positionOf(p.memories, m);
    }
    const values = this.#values;
    return { rows, k, values, tokens, memories, slots, passes: 1, widenedRows: this.#widened };
  }
}
