import {
  ExactTokenIndex,
  searchK,
  tieOrder,
  type SimilarityKernel,
  type TokenHits,
  type TokenIndex,
  type TokenSearchOptions,
  type TokenSide,
} from '@bfe/index';
import {
  FIELDS,
  literal,
  type MemoryRows,
  type TokenCollection,
  type TokenHit,
} from './collection.js';
import { MilvusRequestError } from './errors.js';

/** Proposals fetched per query row beyond `k`, all rescored in float64 (as HNSW's margin). */
export const MILVUS_MARGIN = 16;
/** Widening rounds (×4 the fetch each) before a row is searched exhaustively in process. */
const WIDEN_ROUNDS = 2;
/** The largest `limit` a Milvus cluster accepts for one search. */
export const MILVUS_MAX_LIMIT = 16_384;

/** The memory side of a Milvus index: the token side plus each memory's id, bank and write. */
export interface MilvusSide extends TokenSide {
  /** Memory ids, unique within a bank: the collection's `memory_id`. */
  readonly ids: readonly string[];
  /** `[memories]` the bank id of each memory row (the partition key). */
  readonly banks: readonly string[];
  /** `[memories]` the write sequence of each memory's vectors; default 0 for every memory. */
  readonly seqs?: ArrayLike<number>;
}

/** Options of {@link MilvusTokenIndex}. */
export interface MilvusTokenIndexOptions {
  /** An exact kernel: lets `bestPerMemory` (MaxSim) run exhaustively in process. */
  readonly kernel?: SimilarityKernel;
  /**
   * The largest L2 norm of any token (default: computed once, at the first search): bounds
   * Milvus's float32 rounding, so a FLAT proposal list provably holds the exact top-k.
   */
  readonly maxTokenNorm?: number;
  /**
   * Called when Milvus is away (a retryable {@link MilvusRequestError}) during a search: with an
   * exact `kernel`, the search is then answered by {@link ExactTokenIndex} from the local
   * tokens (the same hits as FLAT) instead of failing. Without it the error is thrown.
   */
  readonly onUnavailable?: (error: MilvusRequestError) => void;
}

/**
 * The Milvus backend: one row per content token in a {@link TokenCollection} (a Milvus Lite
 * server or a cluster). A search sends every query row in one request, restricted by filter to
 * the candidates' banks (`bank_id`, the partition key; plus `memory_id in […]` when the
 * candidates are not whole banks), takes `k + MILVUS_MARGIN` proposals per row, and rescores
 * them in float64 from the local token store, ranked as {@link ExactTokenIndex} ranks:
 * similarity descending, then the memories' tie order (`tieOrder` of the ids), then token
 * position. Hits of rows the side does not hold (another write of a memory) are ignored; every
 * memory of the side must be in the collection at its write (`build` inserts them; the
 * store's `milvusIndexFactory` keeps a collection in step with its banks).
 *
 * Under a FLAT index the result is the exact backend's, order included: a row is accepted only
 * when its k-th rescored similarity exceeds the last proposal's float32 score by more than
 * float32's rounding bound (`2·dim·2⁻²⁴·‖q‖·max‖h‖`), so no unreturned token can reach it;
 * otherwise the row is fetched 4× wider (twice), then scored exhaustively in process
 * (`widenedRows`). Under HNSW the proposals are approximate (recall measured by
 * `pnpm bench:big-bank --milvus`); a row with fewer than `k` proposals is scored exhaustively.
 *
 * @example
 * const c = await TokenCollection.open('milvus://127.0.0.1:19530', 384);
 * const index = await MilvusTokenIndex.build(c, { tokens, tokenOffsets, ids, banks });
 * const hits = await index.search(q, rows, 64, { memories }); // same top-k as ExactTokenIndex
 */
export class MilvusTokenIndex implements TokenIndex {
  readonly backend = 'milvus';
  readonly codec = 'fp32';
  readonly dim: number;
  readonly size: number;
  readonly collection: TokenCollection;
  readonly #side: MilvusSide;
  readonly #options: MilvusTokenIndexOptions;
  /** bank → memory id → row. */
  readonly #rows = new Map<string, Map<string, number>>();
  readonly #tokenMemory: Int32Array;
  readonly #rank: Int32Array;
  #maxNorm: number | undefined;

  constructor(
    collection: TokenCollection,
    side: MilvusSide,
    options: MilvusTokenIndexOptions = {},
  ) {
    const memories = side.tokenOffsets.length - 1;
    if (side.ids.length !== memories || side.banks.length !== memories) {
      throw new Error(
        `MilvusTokenIndex: ${side.ids.length} ids and ${side.banks.length} banks for ${memories} memories`,
      );
    }
    if (side.tokens.dim !== collection.dim) {
      throw new Error(
        `MilvusTokenIndex: ${side.tokens.dim}-d tokens, a ${collection.dim}-d collection`,
      );
    }
    this.collection = collection;
    this.#side = side;
    this.#options = options;
    this.dim = side.tokens.dim;
    this.size = side.tokens.size;
    this.#maxNorm = options.maxTokenNorm;
    this.#tokenMemory = new Int32Array(this.size);
    for (let m = 0; m < memories; m++) {
      this.#tokenMemory.fill(m, side.tokenOffsets[m]!, side.tokenOffsets[m + 1]!);
      let byId = this.#rows.get(side.banks[m]!);
      if (byId === undefined) this.#rows.set(side.banks[m]!, (byId = new Map()));
      if (byId.has(side.ids[m]!)) {
        throw new Error(
          `MilvusTokenIndex: memory '${side.ids[m]}' twice in bank '${side.banks[m]}'`,
        );
      }
      byId.set(side.ids[m]!, m);
    }
    this.#rank = tieOrder(side.ids).rank;
  }

  /** Inserts every memory of `side` into the collection and flushes, then opens the index over it. */
  static async build(
    collection: TokenCollection,
    side: MilvusSide,
    options: MilvusTokenIndexOptions = {},
  ): Promise<MilvusTokenIndex> {
    const index = new MilvusTokenIndex(collection, side, options);
    const byBank = new Map<string, number[]>();
    side.banks.forEach((b, m) => {
      let list = byBank.get(b);
      if (list === undefined) byBank.set(b, (list = []));
      list.push(m);
    });
    for (const [bank, rows] of byBank) await collection.insert(bank, memoryRows(side, rows));
    await collection.flush();
    return index;
  }

  async search(
    queries: Float32Array,
    rows: number,
    k: number,
    options: TokenSearchOptions,
  ): Promise<TokenHits> {
    const { kernel, onUnavailable } = this.#options;
    try {
      return await this.#search(queries, rows, k, options);
    } catch (error) {
      const away = error instanceof MilvusRequestError && error.retryable;
      if (!away || kernel === undefined || onUnavailable === undefined) throw error;
      onUnavailable(error);
      return new ExactTokenIndex(this.#side, kernel).search(queries, rows, k, options);
    }
  }

  async #search(
    queries: Float32Array,
    rows: number,
    k: number,
    options: TokenSearchOptions,
  ): Promise<TokenHits> {
    const { memories } = options;
    const offsets = this.#side.tokenOffsets;
    const dim = this.dim;
    let candidateTokens = 0;
    for (const m of memories) candidateTokens += offsets[m + 1]! - offsets[m]!;
    const kk = searchK(k, candidateTokens, options.clampK);
    if (rows === 0) {
      const none = new Int32Array(0);
      return {
        rows,
        k: kk,
        values: new Float64Array(0),
        tokens: none,
        memories: none,
        slots: none,
        passes: 0,
        widenedRows: 0,
      };
    }
    const isCandidate = new Uint8Array(offsets.length - 1);
    for (const m of memories) isCandidate[m] = 1;
    const filter = this.#filter(memories);
    const flat = this.collection.options.indexType === 'FLAT';
    const bound = flat ? this.#roundingBound() : 0;

    const values = new Float64Array(rows * kk);
    const tokens = new Int32Array(rows * kk);
    let pending = Array.from({ length: rows }, (_, r) => r);
    let limit = Math.min(kk + MILVUS_MARGIN, candidateTokens, MILVUS_MAX_LIMIT);
    let widened = 0;
    for (let round = 0; pending.length > 0; round++) {
      const q = new Float32Array(pending.length * dim);
      pending.forEach((r, i) => q.set(queries.subarray(r * dim, (r + 1) * dim), i * dim));
      const lists = await this.collection.search(q, pending.length, limit, filter);
      const again: number[] = [];
      for (let i = 0; i < pending.length; i++) {
        const r = pending[i]!;
        const list = lists[i]!;
        const found = this.#tokensOf(list, isCandidate);
        const scores = new Float64Array(found.length);
        this.#side.tokens.dots(found, found.length, queries, r * dim, scores);
        const order = this.#order(found, scores);
        const complete = list.length < limit; // every row that passes the filter came back
        let ok = found.length >= kk;
        if (ok && flat && !complete) {
          const last = list[list.length - 1]!.score;
          ok = scores[order[kk - 1]!]! > last + bound * norm(queries, r * dim, dim);
        }
        if (ok) {
          for (let h = 0; h < kk; h++) {
            values[r * kk + h] = scores[order[h]!]!;
            tokens[r * kk + h] = found[order[h]!]!;
          }
        } else again.push(r);
      }
      if (again.length === 0) break;
      widened += round === 0 ? again.length : 0;
      const wider = Math.min(limit * 4, candidateTokens, MILVUS_MAX_LIMIT);
      if (round >= WIDEN_ROUNDS || wider === limit || !flat) {
        for (const r of again) this.#exhaustive(queries, r, kk, memories, values, tokens);
        break;
      }
      limit = wider;
      pending = again;
    }
    const slotOf = new Int32Array(offsets.length - 1).fill(-1);
    memories.forEach((m, s) => (slotOf[m] = s));
    const memOf = tokens.map((t) => this.#tokenMemory[t]!);
    let best: Float32Array | undefined;
    if (options.bestPerMemory === true && this.#options.kernel !== undefined) {
      const exact = new ExactTokenIndex(this.#side, this.#options.kernel);
      best = (await exact.search(queries, rows, kk, { ...options, clampK: true })).best;
    }
    return {
      rows,
      k: kk,
      values,
      tokens,
      memories: memOf,
      slots: memOf.map((m) => slotOf[m]!),
      ...(best === undefined ? {} : { best }),
      passes: 1,
      widenedRows: widened,
    };
  }

  /** The filter of a search: the candidates' banks, and their ids unless they are whole banks. */
  #filter(memories: Int32Array): string {
    const counts = new Map<string, number>();
    for (const m of memories) {
      const b = this.#side.banks[m]!;
      counts.set(b, (counts.get(b) ?? 0) + 1);
    }
    const banks = [...counts.keys()];
    const bankFilter =
      banks.length === 1
        ? `${FIELDS.bank} == ${literal(banks[0]!)}`
        : `${FIELDS.bank} in [${banks.map(literal).join(', ')}]`;
    const whole = banks.every((b) => counts.get(b) === this.#rows.get(b)!.size);
    if (whole) return bankFilter;
    const ids = Array.from(memories, (m) => literal(this.#side.ids[m]!));
    return `${bankFilter} and ${FIELDS.memory} in [${ids.join(', ')}]`;
  }

  /** The bank tokens of a row's hits that belong to the side's candidates at their write. */
  #tokensOf(list: readonly TokenHit[], isCandidate: Uint8Array): Int32Array {
    const side = this.#side;
    const out = new Int32Array(list.length);
    let n = 0;
    for (const h of list) {
      const m = this.#rows.get(h.bankId)?.get(h.memoryId);
      if (m === undefined || isCandidate[m] !== 1) continue;
      if ((side.seqs?.[m] ?? 0) !== h.seq) continue; // another write of the memory
      const t = side.tokenOffsets[m]! + h.position;
      if (t < side.tokenOffsets[m + 1]!) out[n++] = t;
    }
    // A row stored twice (an insert retried after a partial failure) counts once.
    return Int32Array.from(new Set(out.subarray(0, n)));
  }

  /** Hit order: similarity descending, then the memories' tie order, then token index. */
  #order(found: Int32Array, scores: Float64Array): number[] {
    const rank = this.#rank;
    const mem = this.#tokenMemory;
    return Array.from(found.keys()).sort((a, b) => {
      const d = scores[b]! - scores[a]!;
      if (d !== 0) return d;
      const ra = rank[mem[found[a]!]!]!;
      const rb = rank[mem[found[b]!]!]!;
      return ra !== rb ? ra - rb : found[a]! - found[b]!;
    });
  }

  /** Scores every candidate token of row `r` in process (the float64 reference). */
  #exhaustive(
    queries: Float32Array,
    r: number,
    kk: number,
    memories: Int32Array,
    values: Float64Array,
    tokens: Int32Array,
  ): void {
    const offsets = this.#side.tokenOffsets;
    const all: number[] = [];
    for (const m of memories) for (let t = offsets[m]!; t < offsets[m + 1]!; t++) all.push(t);
    const found = Int32Array.from(all);
    const scores = new Float64Array(found.length);
    this.#side.tokens.dots(found, found.length, queries, r * this.dim, scores);
    const order = this.#order(found, scores);
    for (let h = 0; h < kk; h++) {
      values[r * kk + h] = scores[order[h]!]!;
      tokens[r * kk + h] = found[order[h]!]!;
    }
  }

  /** `2·dim·2⁻²⁴·max‖h‖` (times ‖q‖ per row): float32 rounding of one inner product, doubled. */
  #roundingBound(): number {
    if (this.#maxNorm === undefined) {
      const { tokens } = this.#side;
      const dim = this.dim;
      let max = 0;
      for (let start = 0; start < tokens.size; start += 4096) {
        const end = Math.min(tokens.size, start + 4096);
        const block = tokens.read(start, end);
        for (let t = 0; t < end - start; t++) max = Math.max(max, norm(block, t * dim, dim));
      }
      this.#maxNorm = max;
    }
    return 2 * this.dim * 2 ** -24 * this.#maxNorm;
  }
}

function norm(a: Float32Array, at: number, dim: number): number {
  let s = 0;
  for (let j = 0; j < dim; j++) s += a[at + j]! * a[at + j]!;
  return Math.sqrt(s);
}

/** The {@link MemoryRows} of memory rows `rows` of `side`. */
export function memoryRows(side: MilvusSide, rows: readonly number[]): MemoryRows[] {
  const out: MemoryRows[] = [];
  for (const m of rows) {
    const a = side.tokenOffsets[m]!;
    const b = side.tokenOffsets[m + 1]!;
    if (b === a) continue; // no content tokens: no rows
    const vectors = new Float32Array(side.tokens.read(a, b)); // the store may reuse its buffer
    out.push({ id: side.ids[m]!, seq: side.seqs?.[m] ?? 0, vectors });
  }
  return out;
}
