import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { decodeTokens, prepareQuery } from './codecs/codec.js';
import { CodecExactTokenIndex, codecTokenStore, type CodecSide } from './codec-index.js';
import { ScorerInputError } from './errors.js';
import { buildHnsw, loadHnsw } from './hnsw/hnsw.js';
import type { HnswIndex, HnswOptions, HnswParams, HnswScalarKind } from './hnsw/hnsw.js';
import type { CodecName } from './codecs/model.js';
import type { SimilarityKernel } from './kernel.js';
import { positionOf, topInto } from './hnsw/top.js';
import { tieOrder } from './ties.js';
import type { TokenHits, TokenIndex, TokenSearchOptions } from './token-index.js';
import type { TokenStore } from './token-store.js';

/** Proposals fetched per query row beyond `k` from the graph, all rescored in float64. */
export const HNSW_MARGIN = 16;

/**
 * The cheapest usearch scalar kind that matches a codec, the kind {@link HnswTokenIndex} stores
 * its graph vectors in: fp32 → f32, fp16 → f16 (the decoded halves, exactly), sq8 / sq4 /
 * rp128+sq4 → i8 (usearch has no 4-bit kind: the graph holds usearch's int8 cast of the decoded
 * codec values, 128-dimensional for rp128+sq4).
 */
export function graphKindOf(codec: CodecName): HnswScalarKind {
  return codec === 'fp32' ? 'f32' : codec === 'fp16' ? 'f16' : 'i8';
}

/** The memory side of an HNSW index: the codec side plus each memory's bank. */
export interface HnswSide extends CodecSide {
  /**
   * `[memories]` the bank (conversation, haystack, user) of each memory row: one graph per
   * bank. Without it, one graph over the whole bank, searched with a filter.
   */
  readonly memoryBank?: Int32Array;
}

/** Options of {@link HnswTokenIndex.build} and {@link HnswTokenIndex.load}. */
export interface HnswTokenIndexOptions extends HnswOptions {
  /** An exact kernel: lets `bestPerMemory` (MaxSim) run exhaustively over the same codes. */
  readonly kernel?: SimilarityKernel;
  /**
   * Over-fetch: each graph proposes `ceil(overFetch · k) + HNSW_MARGIN` tokens per query row
   * (default 1: `k + HNSW_MARGIN`), all rescored exactly; a cheaper graph kind (i8) buys back
   * the proposals its coarser ranking misses. usearch searches with `max(efSearch, proposals)`.
   */
  readonly overFetch?: number;
}

/** Proposals per query row and graph for `k` (see {@link HnswTokenIndexOptions.overFetch}). */
export function proposalsFor(k: number, overFetch = 1): number {
  if (!(overFetch >= 1)) throw new Error(`overFetch must be ≥ 1, got ${overFetch}.`);
  return Math.ceil(overFetch * k) + HNSW_MARGIN;
}

interface Part {
  readonly index: HnswIndex;
  /** Local key → bank token index, ascending. */
  readonly tokens: Int32Array;
}

const GLOBAL = -1;
const fileOf = (bank: number): string => (bank === GLOBAL ? 'all.usearch' : `bank-${bank}.usearch`);

/**
 * The HNSW backend (usearch, inner product) over a codec's decoded vectors, stored in the graph
 * as `options.kind` (f32 / f16 / i8; default {@link graphKindOf} the codec). The graph only
 * proposes: a search takes {@link proposalsFor} `k` (`k + HNSW_MARGIN`, more with `overFetch`)
 * tokens per query row from the graphs — one graph per bank when the
 * candidate memories are whole banks (LoCoMo: a conversation), else one graph over every token
 * searched with the candidates as a filter (built on first need) — and rescores every proposal
 * in float64 from the decoded stored codes ({@link codecTokenStore}), ranked as
 * {@link ExactTokenIndex} ranks: similarity descending, then the memories' tie order, then
 * token position — the float32 query (projected for rp128+sq4) dotted with each proposal's
 * decoded stored code, whatever the graph kind. A row with fewer than `k` proposals (a sparse filter) is searched
 * exhaustively and counted in `widenedRows`. The returned `values` are what the tail floor
 * reads: approximate proposals, exact similarities. `bestPerMemory` (MaxSim) needs `kernel` and
 * is an exhaustive pass over the same codes, never approximate.
 *
 * @example
 * const index = await HnswTokenIndex.build({ model, codes, tokenOffsets, ids, memoryBank },
 *   { M: 16, efConstruction: 128, efSearch: 128 });
 * const hits = await index.search(q, rows, 64, { memories }); // memories ascending
 */
export class HnswTokenIndex implements TokenIndex {
  readonly backend = 'hnsw';
  readonly codec: string;
  readonly dim: number;
  readonly size: number;
  readonly params: HnswParams;
  /** The scalar kind of the graphs' vectors (`options.kind`, else {@link graphKindOf} the codec). */
  readonly graphKind: HnswScalarKind;
  readonly #side: HnswSide;
  readonly #store: TokenStore;
  readonly #options: HnswTokenIndexOptions;
  readonly #parts: Map<number, Part>;
  readonly #tokenMemory: Int32Array;
  /** Memories per bank, for "are the candidates whole banks". */
  readonly #bankSizes: Map<number, number>;
  readonly #exhaustive: CodecExactTokenIndex | undefined;

  private constructor(
    side: HnswSide,
    params: HnswParams,
    parts: Map<number, Part>,
    options: HnswTokenIndexOptions,
  ) {
    this.#side = side;
    this.params = params;
    this.codec = side.model.name;
    this.dim = side.model.dim;
    this.#store = codecTokenStore(side.model, side.codes);
    this.size = this.#store.size;
    this.#parts = parts;
    this.graphKind = options.kind ?? graphKindOf(side.model.name);
    proposalsFor(1, options.overFetch); // checks it
    this.#options = { ...options, kind: this.graphKind };
    const memories = side.tokenOffsets.length - 1;
    this.#tokenMemory = new Int32Array(this.size);
    for (let m = 0; m < memories; m++) {
      this.#tokenMemory.fill(m, side.tokenOffsets[m]!, side.tokenOffsets[m + 1]!);
    }
    this.#bankSizes = new Map();
    if (side.memoryBank !== undefined) {
      if (side.memoryBank.length !== memories) {
        throw new Error(
          `memoryBank has ${side.memoryBank.length} entries for ${memories} memories`,
        );
      }
      for (const b of side.memoryBank) this.#bankSizes.set(b, (this.#bankSizes.get(b) ?? 0) + 1);
    }
    this.#exhaustive =
      options.kernel === undefined ? undefined : new CodecExactTokenIndex(side, options.kernel);
  }

  /** Builds the graphs over the decoded codes: one per bank with `memoryBank`, else one. */
  static async build(
    side: HnswSide,
    params: HnswParams,
    options: HnswTokenIndexOptions = {},
  ): Promise<HnswTokenIndex> {
    const parts = new Map<number, Part>();
    const kind = options.kind ?? graphKindOf(side.model.name);
    for (const [bank, tokens] of bankTokens(side)) {
      parts.set(bank, await buildPart(side, tokens, params, { ...options, kind }));
    }
    return new HnswTokenIndex(side, params, parts, options);
  }

  /**
   * Loads the graphs {@link save} wrote to `dir` (the same side: codes and layout; the files
   * must store the same graph kind).
   */
  static async load(
    dir: string,
    side: HnswSide,
    params: HnswParams,
    options: HnswTokenIndexOptions = {},
  ): Promise<HnswTokenIndex> {
    const parts = new Map<number, Part>();
    const kind = options.kind ?? graphKindOf(side.model.name);
    for (const [bank, tokens] of bankTokens(side)) {
      const index = await loadHnsw(join(dir, fileOf(bank)), side.model.codeDim, params, {
        ...options,
        kind,
      });
      if (index.size !== tokens.length) {
        throw new Error(`${fileOf(bank)} holds ${index.size} tokens, expected ${tokens.length}`);
      }
      parts.set(bank, { index, tokens });
    }
    return new HnswTokenIndex(side, params, parts, options);
  }

  /** Writes one usearch file per graph into `dir`; returns the file names. */
  async save(dir: string): Promise<string[]> {
    await mkdir(dir, { recursive: true });
    const names: string[] = [];
    for (const [bank, part] of this.#parts) {
      if (bank === GLOBAL && this.#side.memoryBank !== undefined) continue; // built on demand
      await part.index.save(join(dir, fileOf(bank)));
      names.push(fileOf(bank));
    }
    return names;
  }

  dispose(): void {
    for (const p of this.#parts.values()) p.index.dispose();
    this.#parts.clear();
  }

  async search(
    queries: Float32Array,
    rows: number,
    k: number,
    options: TokenSearchOptions,
  ): Promise<TokenHits> {
    const { memories } = options;
    const offsets = this.#side.tokenOffsets;
    let candidateTokens = 0;
    for (const m of memories) candidateTokens += offsets[m + 1]! - offsets[m]!;
    if (candidateTokens === 0) {
      throw new ScorerInputError('empty-bank', 'the bank to search holds no tokens');
    }
    if (k > candidateTokens && options.clampK !== true) {
      throw new ScorerInputError(
        'k-exceeds-bank',
        `k = ${k} is larger than the bank of ${candidateTokens} tokens`,
        { suggestion: `Use k ≤ ${candidateTokens}, or clampK to search the whole bank.` },
      );
    }
    const kk = Math.min(k, candidateTokens);
    const codeDim = this.#side.model.codeDim;
    const q = prepareQuery(this.#side.model, queries, rows);
    const fetch = Math.min(proposalsFor(kk, this.#options.overFetch), candidateTokens);
    const proposals = await this.#propose(q, rows, fetch, memories);

    const rank = this.#side.ids === undefined ? undefined : tieOrder(this.#side.ids).rank;
    const tokenMemory = this.#tokenMemory;
    const values = new Float64Array(rows * kk);
    const tokens = new Int32Array(rows * kk);
    let widened = 0;
    let all: Int32Array | undefined;
    let scores = new Float64Array(fetch);
    for (let r = 0; r < rows; r++) {
      let found = proposals[r]!;
      if (found.length < kk) {
        all ??= candidateTokenList(offsets, memories, candidateTokens);
        found = all;
        widened++;
      }
      if (scores.length < found.length) scores = new Float64Array(found.length);
      this.#store.dots(found, found.length, q, r * codeDim, scores);
      topInto(values, tokens, r * kk, kk, found, scores, tokenMemory, rank);
    }
    const memOf = new Int32Array(rows * kk);
    const slots = new Int32Array(rows * kk);
    for (let i = 0; i < rows * kk; i++) {
      const m = tokenMemory[tokens[i]!]!;
      memOf[i] = m;
      slots[i] = positionOf(memories, m);
    }
    let best: Float32Array | undefined;
    if (options.bestPerMemory === true && this.#exhaustive !== undefined) {
      best = (await this.#exhaustive.search(queries, rows, kk, { ...options, clampK: true })).best;
    }
    return {
      rows,
      k: kk,
      values,
      tokens,
      memories: memOf,
      slots,
      ...(best === undefined ? {} : { best }),
      passes: 1,
      widenedRows: widened,
    };
  }

  /** Per query row, the distinct proposed bank tokens (at most `fetch` per graph searched). */
  async #propose(
    q: Float32Array,
    rows: number,
    fetch: number,
    memories: Int32Array,
  ): Promise<Int32Array[]> {
    const out: number[][] = Array.from({ length: rows }, () => []);
    const everything = isEveryMemory(memories, this.#side.tokenOffsets.length - 1);
    // Every memory: each graph whole, no filter (the global graph when there is no memoryBank).
    const banks = everything
      ? [...this.#parts.keys()].filter((b) => b !== GLOBAL || this.#side.memoryBank === undefined)
      : this.#wholeBanks(memories);
    const collect = (part: Part, res: { indices: Int32Array; k: number }, local: boolean): void => {
      for (let r = 0; r < rows; r++) {
        for (let j = 0; j < res.k; j++) {
          const key = res.indices[r * res.k + j]!;
          if (key >= 0) out[r]!.push(local ? part.tokens[key]! : key);
        }
      }
    };
    if (banks !== undefined) {
      for (const b of banks) {
        const part = this.#parts.get(b)!;
        collect(part, part.index.search(q, rows, Math.min(fetch, part.tokens.length)), true);
      }
    } else {
      const part = await this.#global();
      const res = part.index.search(q, rows, fetch, {
        tokenMemory: this.#tokenMemory,
        allowedMemories: memories,
      });
      collect(part, res, false);
    }
    return out.map((list) => Int32Array.from(list));
  }

  /** The banks of `memories` when they are whole banks (every memory of each), else undefined. */
  #wholeBanks(memories: Int32Array): number[] | undefined {
    const bankOf = this.#side.memoryBank;
    if (bankOf === undefined) return undefined;
    const counts = new Map<number, number>();
    for (const m of memories) counts.set(bankOf[m]!, (counts.get(bankOf[m]!) ?? 0) + 1);
    for (const [b, c] of counts) if (c !== this.#bankSizes.get(b)) return undefined;
    return [...counts.keys()].filter((b) => this.#parts.has(b));
  }

  /** The one graph over every token (the filtered search), built on first need. */
  async #global(): Promise<Part> {
    let part = this.#parts.get(GLOBAL);
    if (part === undefined) {
      const tokens = Int32Array.from({ length: this.size }, (_, i) => i);
      part = await buildPart(this.#side, tokens, this.params, this.#options);
      this.#parts.set(GLOBAL, part);
    }
    return part;
  }
}

/** Bank → its tokens (ascending); one `GLOBAL` group without `memoryBank`. Empty banks left out. */
function bankTokens(side: HnswSide): Map<number, Int32Array> {
  const offsets = side.tokenOffsets;
  const memories = offsets.length - 1;
  const lists = new Map<number, number[]>();
  for (let m = 0; m < memories; m++) {
    const b = side.memoryBank === undefined ? GLOBAL : side.memoryBank[m]!;
    let list = lists.get(b);
    if (list === undefined) lists.set(b, (list = []));
    for (let t = offsets[m]!; t < offsets[m + 1]!; t++) list.push(t);
  }
  const out = new Map<number, Int32Array>();
  for (const b of [...lists.keys()].sort((x, y) => x - y)) {
    const list = lists.get(b)!;
    if (list.length > 0) out.set(b, Int32Array.from(list).sort());
  }
  return out;
}

async function buildPart(
  side: HnswSide,
  tokens: Int32Array,
  params: HnswParams,
  options: HnswOptions,
): Promise<Part> {
  const { codeDim } = side.model;
  const vectors = new Float32Array(tokens.length * codeDim);
  for (let j = 0; j < tokens.length; j++) {
    const t = tokens[j]!;
    decodeTokens(
      side.model,
      side.codes,
      t,
      t + 1,
      vectors.subarray(j * codeDim, (j + 1) * codeDim),
    );
  }
  return { index: await buildHnsw(vectors, tokens.length, codeDim, params, options), tokens };
}

/** Whether `memories` (ascending, distinct) is every memory row `0..count-1`: no filter needed. */
function isEveryMemory(memories: Int32Array, count: number): boolean {
  if (memories.length !== count) return false;
  for (let i = 0; i < count; i++) if (memories[i] !== i) return false;
  return true;
}

function candidateTokenList(
  offsets: ArrayLike<number>,
  memories: Int32Array,
  count: number,
): Int32Array {
  const out = new Int32Array(count);
  let w = 0;
  for (const m of memories) for (let t = offsets[m]!; t < offsets[m + 1]!; t++) out[w++] = t;
  return out;
}
