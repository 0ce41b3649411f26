import { z } from 'zod';
import type { MemoryStore, SearchResult, SearchSystem } from '@bfe/store';
import { HttpBackend, httpOptionsSchema, type HttpOptions } from './http.js';
import type { HybridWeights, SearchBackend, SearchQuery } from './types.js';

/** What the in-process backend needs of a store: its `search` (a `MemoryStore` has it). */
export type StoreLike = Pick<MemoryStore, 'search'>;

/**
 * A backend over a store in this process. The store stays the caller's (never closed here);
 * its errors pass through unchanged (an unknown bank is the store's `DataError`, a bad `k` or
 * `system` its `ConfigError`).
 * @example
 * const backend = storeBackend(store);
 * const [top] = await backend.search({ bank: 'alice', query: 'what pet?', k: 3 }); // top.rank === 1
 */
export function storeBackend(store: StoreLike): SearchBackend {
  return {
    search: ({ bank, query, k, system, weights, minScore }) =>
      store.search({
        bank,
        query,
        ...(k === undefined ? {} : { k }),
        ...(system === undefined ? {} : { system }),
        ...(weights === undefined ? {} : { weights }),
        ...(minScore === undefined ? {} : { minScore }),
      }),
  };
}

/** Either an open store (in process) or the service's address (HTTP). */
export type BackendOptions = { readonly store: StoreLike } | HttpOptions;

const isStore = (v: unknown): boolean =>
  typeof v === 'object' && v !== null && typeof (v as { search?: unknown }).search === 'function';

const storeOptionsSchema = z.object({
  store: z.custom<StoreLike>(isStore, 'a MemoryStore (an object with search)'),
});

/** The settings a retriever shares between frameworks, validated at construction. */
export const retrieverOptionsSchema = z.object({
  bank: z.string().min(1),
  k: z.number().int().min(1).optional(),
  /** Checked by the store (or the service): one list of systems, in `@bfe/store`. */
  system: z.string().min(1).optional(),
  /** `hybrid`'s weights; checked by the store (or the service) too. */
  weights: z.strictObject({ pooled: z.number(), sparse: z.number(), bm25: z.number() }).optional(),
});

/** A retriever's settings: the bank, `k`, `system`, and a store or the service's address. */
export type RetrieverOptions = {
  readonly bank: string;
  readonly k?: number | undefined;
  readonly system?: SearchSystem | undefined;
  /** `hybrid`'s branch weights (≥ 0, scaled to sum 1); the store's thirds when absent. */
  readonly weights?: HybridWeights | undefined;
} & BackendOptions;

/**
 * Validates a retriever's settings and opens its backend: a store when `store` is given, the
 * HTTP client when `url` is.
 * @throws {Error} naming each bad field (a programmer error: settings are code, not input).
 * @example
 * const { backend, query } = openBackend({ bank: 'alice', k: 5, url: 'http://127.0.0.1:8080' });
 * await backend.search({ ...query, query: 'what pet?' });
 */
export function openBackend(options: RetrieverOptions): {
  backend: SearchBackend;
  query: Omit<SearchQuery, 'query'>;
} {
  const hasStore = 'store' in options;
  if (hasStore === 'url' in options) {
    throw new Error('retriever options: give either store (a MemoryStore) or url (bfe serve)');
  }
  const base = retrieverOptionsSchema.safeParse(options);
  const where = (hasStore ? storeOptionsSchema : httpOptionsSchema).safeParse(options);
  if (!base.success || !where.success) {
    const errors = [base.error, where.error].filter((e) => e !== undefined);
    throw new Error(`retriever options: ${errors.map((e) => z.prettifyError(e)).join('\n')}`);
  }
  const backend = hasStore ? storeBackend(options.store) : new HttpBackend(options as HttpOptions);
  const { bank, k, system, weights } = options;
  return {
    backend,
    query: {
      bank,
      ...(k === undefined ? {} : { k }),
      ...(system === undefined ? {} : { system }),
      ...(weights === undefined ? {} : { weights }),
    },
  };
}

/** A retrieved memory's metadata as both retrievers attach it. */
export type HitMetadata = Record<string, unknown> & {
  readonly id: string;
  readonly rank: number;
  readonly score: number;
  readonly pooled: number;
  readonly sparse: number;
  readonly bank: string;
  readonly evidence: SearchResult['evidence'];
};

/**
 * A hit's metadata: the memory's own metadata, then the search's fields — `id`, `rank`,
 * `score`, `pooled`, `sparse`, `bank`, `evidence` — which win over memory metadata keys of the
 * same name (a memory cannot spoof its score).
 * @example
 * hitMetadata(hit, 'alice'); // { who: 'bob', id: 'm3', rank: 1, score: 1.2, pooled: 0.6, sparse: 0.5, bank: 'alice', evidence: {...} }
 */
export function hitMetadata(hit: SearchResult, bank: string): HitMetadata {
  return {
    ...hit.meta,
    id: hit.id,
    rank: hit.rank,
    score: hit.score,
    pooled: hit.pooled,
    sparse: hit.sparse,
    bank,
    evidence: hit.evidence,
  };
}
