import { searchK, type TokenHits, type TokenIndex, type TokenSearchOptions } from '@bfe/index';
import type { BankView } from '../../types.js';
import { ViewRanker } from '../view-proposals.js';
import type { IvfBank } from './ivf-bank.js';

/** Hits per query token beyond `k` asked of the IVF index, all rescored from the view. */
export const IVF_VIEW_MARGIN = 16;

/** What an IVF search did, for counters. */
export type IvfSearchOutcome = 'ivf' | 'exact';

/** How a view reads its bank's index: which index rows are its versions, which it lacks. */
interface Reading {
  readonly version: number;
  /** Index rows of the view's versions the index holds live (ascending). */
  readonly candidates: Int32Array;
  readonly candidateTokens: number;
  /** `[index rows]` the view row of each candidate, −1 for other rows. */
  readonly viewRow: Int32Array;
  /** The index's token offsets at the reading. */
  readonly offsets: Int32Array;
  /** The view's tokens the index does not hold live (scored one by one). */
  readonly missing: Int32Array;
}

/**
 * The IVF backend over one bank view and its bank's maintained {@link IvfBank}: the search sees
 * exactly the view's tokens. The index is asked for the top `k + 16` tokens per query row among
 * the index rows of the view's own versions (a candidate filter: later versions are never
 * proposed); the view's versions the index does not hold live — written after the index last
 * caught up, or tombstoned by a later delete or update — are scored one by one and join the
 * proposals. Everything is rescored in float64 from the view's float32 states and ranked as the
 * exact backend ranks (`ViewRanker`), so where the index proposes the true top `k` the
 * hits equal the exact search's bit for bit. Runs on `exact` instead for MaxSim's per-memory
 * best, a candidate subset, more than `maxMissing` missing tokens, a bank being compacted or
 * replaced, or a row whose `k`-th similarity equals the index's last proposal (a tie the index
 * may have cut).
 */
export class IvfViewIndex implements TokenIndex {
  readonly backend = 'ivf';
  readonly codec = 'fp32';
  readonly dim: number;
  readonly size: number;
  readonly #ranker: ViewRanker;
  #reading: Reading | undefined;

  constructor(
    readonly view: BankView,
    readonly bank: IvfBank,
    readonly exact: TokenIndex,
    readonly maxMissing: number,
    readonly onSearch: (outcome: IvfSearchOutcome) => void = () => {},
  ) {
    this.#ranker = new ViewRanker(view);
    this.dim = this.#ranker.dim;
    this.size = this.#ranker.size;
  }

  async search(
    queries: Float32Array,
    rows: number,
    k: number,
    options: TokenSearchOptions,
  ): Promise<TokenHits> {
    const { bank } = this;
    if (
      options.bestPerMemory === true ||
      !this.#ranker.wholeView(options.memories) ||
      bank.disposed ||
      bank.busy
    )
      return this.#exact(queries, rows, k, options);
    const kk = searchK(k, this.size, options.clampK);
    const reading = this.#read();
    if (reading.missing.length > this.maxMissing) return this.#exact(queries, rows, k, options);
    const ask = Math.min(kk + IVF_VIEW_MARGIN, reading.candidateTokens);
    let proposed: Int32Array[];
    try {
      proposed = await this.#propose(reading, queries, rows, ask);
    } catch {
      return this.#exact(queries, rows, k, options); // the index was closed meanwhile
    }
    const ranked = this.#ranker.rank(queries, rows, kk, (r) => proposed[r]!, reading.missing);
    if (ranked === undefined) return this.#exact(queries, rows, k, options);
    const { values, ownWorst } = ranked;
    // Tokens the index did not return score at most its last proposal: a tie there at the
    // k-th place could have been cut by the index's order rather than the memories' tie order.
    if (ask < reading.candidateTokens)
      for (let r = 0; r < rows; r++)
        if (values[r * kk + kk - 1] === ownWorst[r]) return this.#exact(queries, rows, k, options);
    this.onSearch('ivf');
    return this.#ranker.hits(rows, kk, ranked);
  }

  /** Per query row, the view tokens of the index's top `ask` among the view's live versions. */
  async #propose(
    reading: Reading,
    queries: Float32Array,
    rows: number,
    ask: number,
  ): Promise<Int32Array[]> {
    if (ask === 0) return Array.from({ length: rows }, () => new Int32Array(0));
    const hits = await this.bank.index.search(queries, rows, ask, {
      memories: reading.candidates,
      clampK: true,
    });
    const { viewRow, offsets } = reading;
    const starts = this.view.tokenOffsets;
    const out: Int32Array[] = [];
    for (let r = 0; r < rows; r++) {
      const own = new Int32Array(hits.k);
      for (let h = 0; h < hits.k; h++) {
        const i = r * hits.k + h;
        const m = hits.memories[i]!;
        const v = viewRow[m]!;
        if (v < 0) throw new Error(`IvfViewIndex: index row ${m} is not a candidate`);
        own[h] = starts[v]! + hits.tokens[i]! - offsets[m]!;
      }
      out.push(own);
    }
    return out;
  }

  #exact(
    q: Float32Array,
    rows: number,
    k: number,
    options: TokenSearchOptions,
  ): Promise<TokenHits> {
    this.onSearch('exact');
    return this.exact.search(q, rows, k, options);
  }

  /** The view's reading of the index, redone after any change the bank recorded. */
  #read(): Reading {
    const bank = this.bank;
    const last = this.#reading;
    if (last !== undefined && last.version === bank.version) return last;
    const { view } = this;
    const { seqs, tokenOffsets } = view;
    if (seqs === undefined) throw new Error('IvfViewIndex: the view has no write sequences');
    const viewRow = new Int32Array(bank.rows).fill(-1);
    const candidates: number[] = [];
    const missing: number[] = [];
    let candidateTokens = 0;
    for (let m = 0; m < view.ids.length; m++) {
      const t0 = tokenOffsets[m]!;
      const count = tokenOffsets[m + 1]! - t0;
      const e = bank.entryOfSeq(seqs[m]!);
      if (e !== undefined && !e.dead && e.count === count && e.id === view.ids[m]) {
        viewRow[e.row] = m;
        candidates.push(e.row);
        candidateTokens += count;
      } else for (let j = 0; j < count; j++) missing.push(t0 + j);
    }
    this.#reading = {
      version: bank.version,
      candidates: Int32Array.from(candidates),
      candidateTokens,
      viewRow,
      offsets: bank.tokenOffsets,
      missing: Int32Array.from(missing),
    };
    return this.#reading;
  }
}
