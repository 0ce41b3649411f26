import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { prepareQuery } from './codecs/codec.js';
import { CodecExactTokenIndex, codecTokenStore } from './codec-index.js';
import { searchK } from './errors.js';
import { hnswFileKind } from './hnsw/hnsw.js';
import type { HnswOptions, HnswParams, HnswScalarKind } from './hnsw/hnsw.js';
import { GraphMaps, buildPart, openGraph, type Part } from './hnsw/parts.js';
import {
  GraphChooser,
  graphGroups,
  readLayout,
  writeLayout,
  type GraphGroup,
} from './hnsw/layout.js';
import { rescoreProposals } from './rescore-proposals.js';
import { tieOrder } from './ties.js';
import type { TokenHits, TokenIndex, TokenSearchOptions } from './token-index.js';
import type { TokenStore } from './token-store.js';
import { graphKindOf, proposalsFor } from './hnsw-options.js';
import type { HnswSide, HnswTokenIndexOptions } from './hnsw-options.js';

export { graphKindOf, HNSW_MARGIN, proposalsFor } from './hnsw-options.js';
export type { HnswSide, HnswTokenIndexOptions } from './hnsw-options.js';

/**
 * The HNSW backend (usearch, inner product) over a codec's decoded vectors, stored in the graph
 * as `options.kind` (f32 / f16 / i8; default {@link graphKindOf} the codec). The graph only
 * proposes: a search takes {@link proposalsFor} `k` (`k + HNSW_MARGIN`, more with `overFetch`,
 * `k + margin` with `margin`)
 * tokens per query row from the graphs {@link GraphChooser} picks — the graph
 * of exactly the candidate memories (a candidate set: a haystack, a conversation), else whole
 * non-overlapping graphs that make up the candidates (per-bank layout), else the smallest graph
 * holding every candidate searched with a filter, else one graph over every token searched with
 * the candidates as a filter (built on first need) — and rescores every proposal
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
  /** One part per {@link graphGroups} entry, then the global filtered graph (when built). */
  readonly #parts: Part[];
  readonly #groups: GraphGroup[];
  readonly #chooser: GraphChooser;
  #global: Part | undefined;
  readonly #tokenMemory: Int32Array;
  readonly #exhaustive: CodecExactTokenIndex | undefined;
  /** Maps viewed graphs on first use (`load` with `view`), else undefined. */
  readonly #maps: GraphMaps | undefined;

  private constructor(
    side: HnswSide,
    params: HnswParams,
    parts: Part[],
    options: HnswTokenIndexOptions,
    viewDir?: string,
  ) {
    this.#maps =
      viewDir === undefined
        ? undefined
        : new GraphMaps(viewDir, parts, graphGroups(side), side.model.codeDim, params, {
            ...options,
            kind: options.kind ?? graphKindOf(side.model.name),
          });
    this.#side = side;
    this.params = params;
    this.codec = side.model.name;
    this.dim = side.model.dim;
    this.#store = codecTokenStore(side.model, side.codes);
    this.size = this.#store.size;
    this.#parts = parts;
    this.graphKind = options.kind ?? graphKindOf(side.model.name);
    proposalsFor(1, options.overFetch, options.margin); // checks them
    this.#options = { ...options, kind: this.graphKind };
    const memories = side.tokenOffsets.length - 1;
    this.#tokenMemory = new Int32Array(this.size);
    for (let m = 0; m < memories; m++) {
      this.#tokenMemory.fill(m, side.tokenOffsets[m]!, side.tokenOffsets[m + 1]!);
    }
    if (side.memoryBank !== undefined && side.memoryBank.length !== memories) {
      throw new Error(`memoryBank has ${side.memoryBank.length} entries for ${memories} memories`);
    }
    this.#groups = graphGroups(side);
    this.#chooser = new GraphChooser(this.#groups, side.tokenOffsets);
    this.#exhaustive =
      options.kernel === undefined ? undefined : new CodecExactTokenIndex(side, options.kernel);
  }

  /**
   * Builds the graphs over the decoded codes ({@link graphGroups}: one per candidate set, else
   * per bank, else one).
   */
  static async build(
    side: HnswSide,
    params: HnswParams,
    options: HnswTokenIndexOptions = {},
  ): Promise<HnswTokenIndex> {
    const parts: Part[] = [];
    const kind = options.kind ?? graphKindOf(side.model.name);
    for (const g of graphGroups(side)) {
      parts.push(await buildPart(side, g.tokens, params, { ...options, kind }));
    }
    return new HnswTokenIndex(side, params, parts, options);
  }

  /**
   * Builds the graphs as {@link build} does and writes each into `dir` as soon as it is built,
   * and disposes it, which frees its native memory at once (`releaseIndex`): peak memory is one
   * graph, not all of them. Returns the file names ({@link load} reads them).
   */
  static async buildFiles(
    dir: string,
    side: HnswSide,
    params: HnswParams,
    options: HnswOptions = {},
  ): Promise<string[]> {
    await mkdir(dir, { recursive: true });
    const kind = options.kind ?? graphKindOf(side.model.name);
    const names: string[] = [];
    for (const g of graphGroups(side)) {
      const part = await buildPart(side, g.tokens, params, { ...options, kind });
      await part.index!.save(join(dir, g.file));
      part.index!.dispose();
      names.push(g.file);
    }
    if (side.candidateSets !== undefined) await writeLayout(dir, side.candidateSets);
    return names;
  }

  /**
   * Loads the graphs {@link save} wrote to `dir` (the same side: codes and layout; the files
   * must store the same graph kind). When `dir` records candidate sets (`layout.json`), the
   * graphs are those sets' (`side.candidateSets`, if given, must equal them).
   */
  static async load(
    dir: string,
    side: HnswSide,
    params: HnswParams,
    options: HnswTokenIndexOptions = {},
  ): Promise<HnswTokenIndex> {
    const parts: Part[] = [];
    const kind = options.kind ?? graphKindOf(side.model.name);
    const recorded = await readLayout(dir);
    if (recorded !== undefined) {
      const given = side.candidateSets;
      if (given !== undefined && JSON.stringify(given) !== JSON.stringify(recorded)) {
        throw new Error(`${dir} holds graphs for other candidate sets`);
      }
      side = { ...side, candidateSets: recorded };
    }
    for (const { file, tokens } of graphGroups(side)) {
      // Viewed graphs are mapped on first use (#part), and checked then.
      if (options.view === true) {
        if ((await hnswFileKind(join(dir, file))) !== kind) {
          throw new Error(`${join(dir, file)} does not store ${kind} vectors.`);
        }
        parts.push({ index: undefined, tokens });
        continue;
      }
      const index = await openGraph(join(dir, file), side.model.codeDim, params, options, kind);
      if (index.size !== tokens.length) {
        throw new Error(`${file} holds ${index.size} tokens, expected ${tokens.length}`);
      }
      parts.push({ index, tokens });
    }
    return new HnswTokenIndex(
      side,
      params,
      parts,
      options,
      options.view === true ? dir : undefined,
    );
  }

  /** Writes one usearch file per graph into `dir`; returns the file names. */
  async save(dir: string): Promise<string[]> {
    await mkdir(dir, { recursive: true });
    for (let i = 0; i < this.#groups.length; i++) {
      await (await this.#part(i)).index!.save(join(dir, this.#groups[i]!.file));
    }
    const sets = this.#side.candidateSets;
    if (sets !== undefined) await writeLayout(dir, sets);
    return this.#groups.map((g) => g.file);
  }

  /** Graphs memory-mapped now (`load` with `view`; at most `openGraphs`), else 0. */
  get mappedGraphs(): number {
    return this.#maps?.mapped ?? 0;
  }

  /** The graphs' files and sizes (graph keys), in {@link graphGroups} order. */
  get graphs(): readonly { readonly file: string; readonly tokens: number }[] {
    return this.#groups.map((g) => ({ file: g.file, tokens: g.tokens.length }));
  }

  dispose(): void {
    for (const p of this.#parts) p.index?.dispose();
    this.#parts.length = 0;
    this.#maps?.forget();
    this.#global?.index?.dispose();
    this.#global = undefined;
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
    const kk = searchK(k, candidateTokens, options.clampK);
    const codeDim = this.#side.model.codeDim;
    const q = prepareQuery(this.#side.model, queries, rows);
    const { overFetch, margin } = this.#options;
    const fetch = Math.min(proposalsFor(kk, overFetch, margin), candidateTokens);
    const proposed = await this.#propose(q, rows, fetch, memories);

    const hits = rescoreProposals({
      store: this.#store,
      q,
      codeDim,
      rows,
      k: kk,
      proposals: (r) =>
        proposed.tokens.subarray(r * proposed.stride, r * proposed.stride + proposed.counts[r]!),
      tokenOffsets: offsets,
      memories,
      candidateTokens,
      tokenMemory: this.#tokenMemory,
      rank: this.#side.ids === undefined ? undefined : tieOrder(this.#side.ids).rank,
    });
    let best: Float32Array | undefined;
    if (options.bestPerMemory === true && this.#exhaustive !== undefined) {
      best = (await this.#exhaustive.search(queries, rows, kk, { ...options, clampK: true })).best;
    }
    return best === undefined ? hits : { ...hits, best };
  }

  /** Per query row r: its distinct proposed bank tokens (≤ `fetch` per graph) at `r · stride`. */
  async #propose(
    q: Float32Array,
    rows: number,
    fetch: number,
    memories: Int32Array,
  ): Promise<{ tokens: Int32Array; counts: Int32Array; stride: number }> {
    const choice = this.#chooser.choose(memories);
    const groups = choice === undefined ? [-1] : choice.groups;
    const filtered = choice === undefined || choice.filtered;
    let stride = 0;
    for (const g of groups) {
      stride += filtered ? fetch : Math.min(fetch, this.#groups[g]!.tokens.length);
    }
    const tokens = new Int32Array(rows * stride);
    const counts = new Int32Array(rows);
    // One graph at a time: a viewed graph may be unmapped when the next one is mapped.
    for (const g of groups) {
      const part = g < 0 ? await this.#globalPart() : await this.#part(g);
      const index = part.index!;
      const res = filtered
        ? index.search(q, rows, fetch, {
            tokenMemory: (part.keyMemory ??= part.tokens.map((t) => this.#tokenMemory[t]!)),
            allowedMemories: memories,
          })
        : index.search(q, rows, Math.min(fetch, part.tokens.length));
      const keyToken = part.tokens;
      const found = res.indices;
      for (let r = 0; r < rows; r++) {
        let w = r * stride + counts[r]!;
        for (let j = r * res.k, end = j + res.k; j < end; j++) {
          const key = found[j]!;
          if (key >= 0) tokens[w++] = keyToken[key]!;
        }
        counts[r] = w - r * stride;
      }
    }
    return { tokens, counts, stride };
  }

  /** Graph `g`, mapped now when it is a viewed graph ({@link GraphMaps.part}). */
  #part(g: number): Promise<Part> {
    return this.#maps === undefined ? Promise.resolve(this.#parts[g]!) : this.#maps.part(g);
  }

  /** The one graph over every token (the filtered search's fallback), built on first need. */
  async #globalPart(): Promise<Part> {
    if (this.#global === undefined) {
      const tokens = Int32Array.from({ length: this.size }, (_, i) => i);
      this.#global = await buildPart(this.#side, tokens, this.params, this.#options);
    }
    return this.#global;
  }
}
