import { z } from 'zod';
import type { MilvusOptions } from '@bfe/index-milvus';
import type { Bm25Language, SparseScorer } from '@bfe/scorer';
import type { ModelChoice } from './encode/embedder.js';
import {
  storeCodecSchema,
  storeWindowSchema,
  type StoreCodec,
  type StoreWindow,
} from './log/settings.js';
import type { TokenIndexFactory } from './search/search.js';
import type { Embedder } from './types.js';

/** Options of {@link MemoryStore.open}. */
export interface StoreOptions {
  /** The model, by registry name (model cache) or directory; ignored when `embedder` is given. */
  readonly model?: ModelChoice;
  /** An embedder to use instead (the caller keeps ownership: the store never disposes it). */
  readonly embedder?: Embedder;
  readonly maxLength?: number;
  /**
   * onnxruntime intra-op threads of the embedder the store opens, the scorer it opens and its
   * default index's resident kernels (default: onnxruntime's choice). On a busy machine `1`
   * keeps one query's latency low (`pnpm bench:store --parts search --threads 1`).
   */
  readonly threads?: number;
  /** Memtable bytes (vectors) past which an add also flushes. Default 32 MiB. */
  readonly flushBytes?: number;
  /** A bank with this many segments is compacted in the background. Default 8; 0 disables. */
  readonly compactSegments?: number;
  /** Largest memory text in UTF-8 bytes. Default 64 KiB. */
  readonly maxTextBytes?: number;
  /**
   * The sparse scorer `search` ranks with (the caller keeps ownership). Default: the store opens
   * the onnxruntime CPU scorer at its first search and disposes it at `close`.
   */
  readonly scorer?: SparseScorer;
  /**
   * The token index searches use unless a request names its own ({@link chooseIndex}). Default:
   * `storeIndexFactory({ threads })`: exact and resident up to 65,536 content tokens, a maintained
   * HNSW graph above (`graphs/`); a `StoreIndexFactory` passed here is attached to this store. A
   * Milvus address (`'milvus://host:port'`) or options: `milvusIndexFactory`, closed at `close`.
   */
  readonly index?: TokenIndexFactory | MilvusOptions | string;
  /** BM25's language of `hybrid` searches (METHOD.md §8, "BM25"); default `none`. */
  readonly bm25Language?: Bm25Language;
  /**
   * Group commit (default true): write calls that arrive while a WAL fsync is under way share
   * the next one; each is still its own record, acknowledged only once durable. `false`: one
   * fsync per call.
   */
  readonly groupCommit?: boolean;
  /**
   * The codec the store keeps token states in, chosen when the store is created (default
   * `sq8`: ranks as fp32 within the paired intervals on LoCoMo and LongMemEval-S); a store
   * opened with another codec refuses (`bfe store compact --codec` migrates). Pooled vectors
   * stay fp32. A store made before codecs existed is fp32.
   */
  readonly codec?: StoreCodec;
  /**
   * Windowed encoding of long memories (METHOD.md §8), chosen when the store is created: a
   * memory longer than one model input is encoded in windows of `size` tokens every `stride`,
   * not cut. `null` or absent on a new store: truncated at `maxLength`. A store opened with
   * another window refuses.
   */
  readonly window?: StoreWindow | null;
  /**
   * Bytes of decoded segment rows and bank views kept in memory (least recently used first
   * out). Default 1 GiB. Memory grows with what is searched, up to this, not with what is stored.
   */
  readonly cacheBytes?: number;
}

/** Default of {@link StoreOptions.cacheBytes}: 1 GiB. */
export const DEFAULT_CACHE_BYTES = 1024 * 1024 * 1024;

export const limitsSchema = z.object({
  maxLength: z.number().int().min(2).optional(),
  threads: z.number().int().positive().optional(),
  flushBytes: z.number().int().positive().optional(),
  compactSegments: z.number().int().nonnegative().optional(),
  maxTextBytes: z.number().int().positive().optional(),
  bm25Language: z.enum(['english', 'none']).optional(),
  groupCommit: z.boolean().optional(),
  codec: storeCodecSchema.optional(),
  window: storeWindowSchema.nullable().optional(),
  cacheBytes: z.number().int().nonnegative().optional(),
});
