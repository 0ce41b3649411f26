import { join } from 'node:path';
import { decodeTokens } from '../codecs/codec.js';
import type { CodecSide } from '../codec-index.js';
import { codeSourceOf } from '../code-source.js';
import { buildHnsw, loadHnsw } from './hnsw.js';
import type { HnswIndex, HnswOptions, HnswParams } from './hnsw.js';
import type { GraphGroup } from './layout.js';

/** Memory-mapped graphs kept open by a viewed `HnswTokenIndex` by default. */
export const DEFAULT_OPEN_GRAPHS = 8;

/** One graph of an `HnswTokenIndex`: its usearch index and its keys' bank tokens. */
export interface Part {
  /** Undefined while a viewed graph is not mapped ({@link GraphMaps}). */
  index: HnswIndex | undefined;
  /** Local key → bank token index, ascending. */
  readonly tokens: Int32Array;
  /** Local key → memory row, for a filtered search (made on first need). */
  keyMemory?: Int32Array;
}

/** What opening a graph file reads of the index's options. */
export interface GraphOpenOptions extends HnswOptions {
  /** Viewed graphs mapped at once (default {@link DEFAULT_OPEN_GRAPHS}). */
  readonly openGraphs?: number;
}

/** Loads (or, with `view`, memory-maps) one graph file of the index's kind. */
export function openGraph(
  path: string,
  dim: number,
  params: HnswParams,
  options: GraphOpenOptions,
  kind = options.kind,
): Promise<HnswIndex> {
  return loadHnsw(path, dim, params, {
    ...(kind === undefined ? {} : { kind }),
    ...(options.threads === undefined ? {} : { threads: options.threads }),
    ...(options.view === undefined ? {} : { view: options.view }),
  });
}

/**
 * The graphs of a viewed index: each is memory-mapped (usearch `view`) when a search first
 * needs it, and the least recently used beyond `openGraphs` is unmapped (`dispose`), so the
 * pages a process holds are a few graphs' whatever the index's size.
 */
export class GraphMaps {
  /** Mapped parts, least recently used first. */
  readonly #mapped: number[] = [];
  readonly #keep: number;

  constructor(
    private readonly dir: string,
    private readonly parts: Part[],
    private readonly groups: readonly GraphGroup[],
    private readonly dim: number,
    private readonly params: HnswParams,
    private readonly options: GraphOpenOptions,
  ) {
    const keep = options.openGraphs ?? DEFAULT_OPEN_GRAPHS;
    if (!(Number.isInteger(keep) && keep >= 1)) {
      throw new Error(`openGraphs must be a positive integer, got ${keep}.`);
    }
    this.#keep = keep;
  }

  /** Part `g`, mapped (and checked: its size) if it was not. */
  async part(g: number): Promise<Part> {
    const part = this.parts[g]!;
    const at = this.#mapped.indexOf(g);
    if (at >= 0) this.#mapped.splice(at, 1);
    if (part.index === undefined) {
      const file = join(this.dir, this.groups[g]!.file);
      const index = await openGraph(file, this.dim, this.params, this.options);
      if (index.size !== part.tokens.length) {
        index.dispose();
        throw new Error(`${file} holds ${index.size} tokens, expected ${part.tokens.length}`);
      }
      part.index = index;
    }
    this.#mapped.push(g);
    while (this.#mapped.length > this.#keep) {
      const old = this.parts[this.#mapped.shift()!]!;
      old.index?.dispose();
      old.index = undefined;
    }
    return part;
  }

  /** How many graphs are mapped now. */
  get mapped(): number {
    return this.#mapped.length;
  }

  /** Forgets the mapped list (the owner disposes the parts). */
  forget(): void {
    this.#mapped.length = 0;
  }
}

/** Builds the graph of `tokens` over their decoded codes (read by position when a source). */
export async function buildPart(
  side: CodecSide,
  tokens: Int32Array,
  params: HnswParams,
  options: HnswOptions,
): Promise<Part> {
  const { codeDim } = side.model;
  const source = codeSourceOf(side.codes, side.model.bytesPerToken);
  const vectors = new Float32Array(tokens.length * codeDim);
  for (let j = 0; j < tokens.length; j++) {
    const row = vectors.subarray(j * codeDim, (j + 1) * codeDim);
    decodeTokens(side.model, source.row(tokens[j]!), 0, 1, row);
  }
  return { index: await buildHnsw(vectors, tokens.length, codeDim, params, options), tokens };
}
