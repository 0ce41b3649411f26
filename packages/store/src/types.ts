import type { WindowSpec } from '@bfe/encoder';
import type { TokenStore } from '@bfe/index';
import type { Bm25Language } from '@bfe/scorer';
import type { BankLexicon } from './lexical/bank-lexicon.js';

/**
 * The contract between the store's storage (WAL, segments, snapshots) and its search (scorer,
 * index, evidence). Storage produces {@link BankView}s; search reads them and never writes.
 */

/** One encoder pass over texts (memories as passages, or queries), content tokens only. */
export interface EncodedTexts {
  readonly count: number;
  readonly dim: number;
  /** Native pooled vectors `[count × dim]`. */
  readonly pooled: Float32Array;
  /** `[count + 1]`: text `i` owns tokens `tokenOffsets[i]..tokenOffsets[i+1]-1`. */
  readonly tokenOffsets: Int32Array;
  /** L2-normalised content-token states `[tokens × dim]`. */
  readonly tokenVectors: Float32Array;
  /** Vocabulary id of each content token `[tokens]`. */
  readonly tokenIds: Int32Array;
  /** Position of each content token in the model input (0 = first special token) `[tokens]`. */
  readonly tokenPositions: Int32Array;
  /** 1 where truncation dropped tokens `[count]`. */
  readonly truncated: Uint8Array;
}

/** How one {@link Embedder.encode} call encodes. */
export interface EmbedOptions {
  /**
   * Passages only: encode a text longer than `window.size` tokens in overlapping windows
   * (METHOD.md §8, `@bfe/encoder`'s windowed pass) instead of truncating it. A store with a
   * window passes it with every add and update; queries are never windowed.
   */
  readonly window?: WindowSpec;
}

/** Turns texts into {@link EncodedTexts}: the store's only route to the encoder. */
export interface Embedder {
  /** The encoder's identity (its manifest's model hash): a store refuses another model's memories. */
  readonly model: string;
  readonly dim: number;
  encode(
    texts: readonly string[],
    role: 'passage' | 'query',
    options?: EmbedOptions,
  ): Promise<EncodedTexts>;
  /** The vocabulary piece of a token id (for evidence), e.g. `'##ing'`. */
  tokenText(id: number): string;
  dispose(): Promise<void>;
}

/** JSON-safe metadata a caller attaches to a memory. */
export type MemoryMeta = Record<string, unknown>;

/**
 * The live memories of one bank at one snapshot: immutable, consistent (a writer's later adds,
 * deletes and compactions never show through), rows in a stable order (oldest segment first).
 */
export interface BankView {
  readonly bank: string;
  readonly model: string;
  readonly dim: number;
  readonly ids: readonly string[];
  readonly texts: readonly string[];
  readonly metas: readonly (MemoryMeta | undefined)[];
  /** `[memories × dim]`. */
  readonly pooled: Float32Array;
  /** `[memories + 1]`. */
  readonly tokenOffsets: Int32Array;
  /**
   * `[tokens × dim]` as one array. A store's view makes it at first use (searches read
   * {@link tokens} instead): read it only where one contiguous array is needed.
   */
  readonly tokenVectors: Float32Array;
  /**
   * The token states as the store holds them: pieces (runs of a segment's or a memtable
   * batch's states, short runs gathered), never one contiguous copy of a bank spread over
   * several segments. A store's views carry it; a view without it is read from
   * {@link tokenVectors}.
   */
  readonly tokens?: TokenStore;
  readonly tokenIds: Int32Array;
  readonly tokenPositions: Int32Array;
  /**
   * `[memories]` the write sequence of each row's version (its identity in the store): lets a
   * maintained token index tell the versions of a view from later ones. Views a store makes
   * carry it; a view without it is searched without the store's HNSW graphs.
   */
  readonly seqs?: Float64Array;
  /**
   * The last write sequence that changed the bank (an add, update or delete): a later view of
   * the same bank has a larger one. A store's views have it.
   */
  readonly version?: number;
  /**
   * The store's lexical index (BM25 postings per bank), which `hybrid` searches read: a store's
   * views carry it; a view without it is indexed from its texts at search time.
   */
  readonly lexicon?: ViewLexicon;
}

/** Where a view's BM25 postings come from (the store's `StoreLexicon`). */
export interface ViewLexicon {
  /** BM25's language (METHOD.md §8): the store's setting. */
  readonly language: Bm25Language;
  /** Postings that hold exactly the view's memory versions. */
  forView(view: BankView): BankLexicon;
}
