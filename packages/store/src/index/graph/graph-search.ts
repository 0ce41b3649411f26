import {
  searchK,
  type TokenHits,
  type TokenIndex,
  type TokenSearchOptions,
  type KeyProposals,
} from '@bfe/index';
import type { BankView } from '../../types.js';
import { ViewRanker } from '../view-proposals.js';
import type { BankGraph } from './bank-graph.js';

/** Proposals per query token beyond `k` taken from the graph, all rescored in float64. */
export const GRAPH_MARGIN = 16;

/** How a view reads a graph: which graph keys are its tokens, and which of its tokens it lacks. */
interface Reading {
  readonly graph: BankGraph;
  readonly removals: number;
  readonly version: number;
  /** `[graph.nextKey at the reading]` the view's token of each key, −1 for a foreign key. */
  readonly keyToToken: Int32Array;
  /** The view's tokens the graph did not hold at the reading (scored exhaustively). */
  readonly missing: Int32Array;
  /** The view's tokens the graph held. */
  readonly present: number;
}

/** A search's proposals per query row and the reading they were made under. */
interface Proposed {
  readonly reading: Reading;
  readonly proposed: Int32Array[];
}

/** Limits past which a search goes to the exact index instead (correct either way). */
export interface GraphSearchLimits {
  /** Most view tokens the graph may lack (they are scored one by one in float64). */
  readonly maxMissing: number;
  /** Most foreign tokens (in the graph, not in the view) to fetch past. */
  readonly maxForeign: number;
}

/** What a graph search did, for counters. */
export type GraphSearchOutcome = 'graph' | 'exact';

/**
 * The HNSW backend over one bank view and its bank's maintained {@link BankGraph}: the search
 * sees exactly the view's tokens. The graph may hold versions the view does not (written after
 * it: foreign keys, skipped — the fetch grows by their count, so `k + margin` of the view's
 * own tokens survive) and lack versions the view holds (not yet added, or removed by a later
 * delete or update: their tokens are scored exhaustively and join the proposals). Proposals
 * are rescored in float64 from the view's float32 vectors and ranked as the exact backend
 * ranks (similarity, then the memories' tie order, then token position), so where a graph
 * proposes the true top `k` the values equal the exact search's bit for bit. A search the graph
 * cannot serve well — MaxSim's per-memory best, a candidate subset, too many foreign or
 * missing tokens, a row with fewer than `k` proposals — runs on `exact`.
 */
export class GraphTokenIndex implements TokenIndex {
  readonly backend = 'hnsw';
  readonly codec = 'fp32';
  readonly dim: number;
  readonly size: number;
  readonly #ranker: ViewRanker;
  #reading: Reading | undefined;

  constructor(
    readonly view: BankView,
    readonly graph: BankGraph,
    readonly exact: TokenIndex,
    readonly limits: GraphSearchLimits,
    readonly onSearch: (outcome: GraphSearchOutcome) => void = () => {},
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
    const total = this.size;
    if (
      options.bestPerMemory === true ||
      !this.#ranker.wholeView(options.memories) ||
      this.graph.disposed // replaced (a compaction) or dropped since this index was made
    )
      return this.#exact(queries, rows, k, options);
    const kk = searchK(k, total, options.clampK);
    let seen: Proposed | undefined;
    try {
      seen = await this.#propose(queries, rows, kk);
    } catch {
      seen = undefined; // the graph was dropped or replaced meanwhile
    }
    if (seen === undefined) return this.#exact(queries, rows, k, options);
    const { proposed, reading } = seen;

    const { missing } = reading;
    const ranked = this.#ranker.rank(queries, rows, kk, (r) => proposed[r]!, missing);
    if (ranked === undefined) return this.#exact(queries, rows, k, options);
    this.onSearch('graph');
    return this.#ranker.hits(rows, kk, ranked);
  }

  /**
   * Per query row, the view's tokens among the graph's proposals — `k + margin` of them where
   * the graph holds that many — and the view's reading of the graph as the search saw it (read
   * when the search ran: writes the graph applies meanwhile are recorded in order, see
   * `GraphHnsw`). Foreign keys (later versions) are skipped: a first fetch allows for them in
   * proportion to their share of the graph; when a row comes back short, every row is fetched
   * again past every foreign key, so none can crowd out the view's own tokens. Undefined: too
   * many missing or foreign tokens, or still short after three fetches (the search runs
   * exactly).
   */
  async #propose(queries: Float32Array, rows: number, kk: number): Promise<Proposed | undefined> {
    const over = (r: Reading, size: number): boolean =>
      r.missing.length > this.limits.maxMissing || size - r.present > this.limits.maxForeign;
    let reading = this.#read();
    let size = this.graph.tokens;
    if (over(reading, size)) return undefined;
    const wanted = (r: Reading): number => Math.min(kk + GRAPH_MARGIN, r.present);
    let want = wanted(reading);
    if (want === 0)
      return { reading, proposed: Array.from({ length: rows }, () => new Int32Array(0)) };
    const foreign = size - reading.present;
    let fetch =
      foreign === 0
        ? want
        : Math.min(want + foreign, Math.ceil((want * size) / reading.present) + GRAPH_MARGIN);
    for (let attempt = 0; attempt < 3; attempt++) {
      const seen = await this.graph.search(queries, rows, fetch, (res) => {
        const r = this.#read();
        return { reading: r, size: this.graph.tokens, proposed: ownTokens(res, rows, r) };
      });
      ({ reading, size } = seen);
      if (over(reading, size)) return undefined;
      want = wanted(reading);
      const full = Math.min(size, want + size - reading.present);
      if (fetch >= full || seen.proposed.every((p) => p.length >= want))
        return { reading, proposed: seen.proposed };
      fetch = full;
    }
    return undefined;
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

  /**
   * The view's reading of the graph, redone after any removal (a key it counted present may be
   * gone) and, while it lacks tokens, after any change (they may have been added since).
   */
  #read(): Reading {
    const g = this.graph;
    const last = this.#reading;
    if (
      last !== undefined &&
      last.removals === g.removals &&
      (last.missing.length === 0 || last.version === g.version)
    )
      return last;
    const { view } = this;
    const { seqs, tokenOffsets } = view;
    if (seqs === undefined) throw new Error('GraphTokenIndex: the view has no write sequences');
    const keyToToken = new Int32Array(g.nextKey).fill(-1);
    const missing: number[] = [];
    let present = 0;
    for (let m = 0; m < view.ids.length; m++) {
      const t0 = tokenOffsets[m]!;
      const count = tokenOffsets[m + 1]! - t0;
      const e = g.entryOfSeq(seqs[m]!);
      if (e !== undefined && e.count === count && e.id === view.ids[m]) {
        for (let j = 0; j < count; j++) keyToToken[e.first + j] = t0 + j;
        present += count;
      } else for (let j = 0; j < count; j++) missing.push(t0 + j);
    }
    this.#reading = {
      graph: g,
      removals: g.removals,
      version: g.version,
      keyToToken,
      missing: Int32Array.from(missing),
      present,
    };
    return this.#reading;
  }
}

/** Per query row, the view's tokens among the proposed keys (foreign keys skipped). */
function ownTokens(res: KeyProposals, rows: number, reading: Reading): Int32Array[] {
  const { keyToToken } = reading;
  return Array.from({ length: rows }, (_, r) => {
    const kept: number[] = [];
    for (let c = 0; c < res.counts[r]!; c++) {
      const key = res.keys[r * res.fetch + c]!;
      const t = key < keyToToken.length ? keyToToken[key]! : -1;
      if (t >= 0) kept.push(t);
    }
    return Int32Array.from(kept);
  });
}
