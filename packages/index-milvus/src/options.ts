import { z } from 'zod';
import { ConfigError } from '@bfe/core';

/**
 * The index types bfe builds on the vector field. FLAT is exhaustive (the exact backend's
 * results); the others are approximate, their proposals rescored exactly. DISKANN needs a
 * server built with disk indexes: the PyPI `milvus` 2.3.5 standalone accepts it and then fails
 * to build it (`bad_function_call`, retried forever); Milvus Lite refuses it.
 */
export const MILVUS_INDEX_TYPES = ['FLAT', 'HNSW', 'IVF_FLAT', 'IVF_SQ8', 'DISKANN'] as const;
/** One of {@link MILVUS_INDEX_TYPES}. */
export type MilvusIndexType = (typeof MILVUS_INDEX_TYPES)[number];

/**
 * Where and how the token collection lives. One collection holds every bank (the bank id is the
 * partition key), one row per content token.
 */
export const milvusOptionsSchema = z.strictObject({
  /** `milvus://host:port`, `https://host:port` (TLS) or `host:port`. */
  address: z.string().min(1),
  /** Token auth (`user:password` or an API key), passed through to the server. */
  token: z.string().min(1).optional(),
  /** TLS to the server; implied by an `https://` address. */
  ssl: z.boolean().optional(),
  /** A PEM file of the CA that signed the server's certificate (a private CA); implies TLS. */
  caPem: z.string().min(1).optional(),
  /** The name the server's certificate is checked against (default: the address's host). */
  serverName: z.string().min(1).optional(),
  database: z.string().min(1).optional(),
  collection: z
    .string()
    .regex(/^[A-Za-z_][A-Za-z0-9_]{0,254}$/, 'a Milvus collection name: letters, digits, _')
    .default('bfe_tokens'),
  /** The vector index; FLAT gives the same top-k as the exact backend. */
  indexType: z.enum(MILVUS_INDEX_TYPES).default('FLAT'),
  /** HNSW graph degree and build beam; `ef` the search beam (raised to the fetch size). */
  hnsw: z
    .strictObject({
      M: z.number().int().min(2).max(2048).default(16),
      efConstruction: z.number().int().min(1).default(128),
      ef: z.number().int().min(1).default(128),
    })
    .prefault({}),
  /** IVF_FLAT / IVF_SQ8: lists built, lists probed per query row. */
  ivf: z
    .strictObject({
      nlist: z.number().int().min(1).max(65_536).default(1024),
      nprobe: z.number().int().min(1).max(65_536).default(32),
    })
    .prefault({}),
  /** DISKANN: the search list (raised to the fetch size). */
  diskann: z.strictObject({ searchList: z.number().int().min(1).default(100) }).prefault({}),
  /** Rows per insert request (a memory's tokens never span two requests). */
  insertBatch: z.number().int().min(1).default(8192),
  /** gRPC call timeout in ms. */
  timeoutMs: z.number().int().positive().default(120_000),
});

/** Milvus settings as a caller writes them. */
export type MilvusOptions = z.input<typeof milvusOptionsSchema>;
/** Milvus settings with defaults filled in. */
export type ResolvedMilvusOptions = z.output<typeof milvusOptionsSchema>;

/** URL query keys → where they go in the options (numbers unless noted). */
const QUERY_KEYS: Record<string, readonly [string, string?]> = {
  index: ['indexType'],
  M: ['hnsw', 'M'],
  efConstruction: ['hnsw', 'efConstruction'],
  ef: ['hnsw', 'ef'],
  nlist: ['ivf', 'nlist'],
  nprobe: ['ivf', 'nprobe'],
  searchList: ['diskann', 'searchList'],
  collection: ['collection'],
  database: ['database'],
  ca: ['caPem'],
  serverName: ['serverName'],
  insertBatch: ['insertBatch'],
  timeoutMs: ['timeoutMs'],
};
const STRINGS = new Set(['indexType', 'collection', 'database', 'caPem', 'serverName']);

/**
 * The options a `milvus://host:port?index=HNSW&M=16&ef=128` URL names: the address without the
 * query, and each query key in its place (`index`, `M`, `efConstruction`, `ef`, `nlist`,
 * `nprobe`, `searchList`, `collection`, `database`, `ca`, `serverName`, `insertBatch`,
 * `timeoutMs`). An unknown key is a {@link ConfigError}.
 * @example
 * milvusUrlOptions('milvus://h:19530?index=IVF_SQ8&nprobe=64');
 * // { address: 'milvus://h:19530', indexType: 'IVF_SQ8', ivf: { nprobe: 64 } }
 */
export function milvusUrlOptions(url: string): Record<string, unknown> {
  const at = url.indexOf('?');
  if (at === -1) return { address: url };
  const out: Record<string, unknown> = { address: url.slice(0, at) };
  for (const [key, value] of new URLSearchParams(url.slice(at + 1))) {
    const place = QUERY_KEYS[key];
    if (place === undefined) {
      throw new ConfigError(
        `milvus URL: unknown query key '${key}' (known: ${Object.keys(QUERY_KEYS).join(', ')})`,
      );
    }
    const [field, sub] = place;
    const parsed = STRINGS.has(field) ? value : Number(value);
    if (sub === undefined) out[field] = parsed;
    else out[field] = { ...(out[field] as Record<string, unknown> | undefined), [sub]: parsed };
  }
  return out;
}

/**
 * Parses Milvus settings; a string is a URL ({@link milvusUrlOptions}). The token comes from
 * the options, else from `$BFE_MILVUS_TOKEN`.
 * @throws {ConfigError} naming each bad field.
 * @example
 * parseMilvusOptions('milvus://127.0.0.1:19530'); // { address: 'milvus://…', collection: 'bfe_tokens', indexType: 'FLAT', … }
 */
export function parseMilvusOptions(
  options: unknown,
  env: NodeJS.ProcessEnv = process.env,
): ResolvedMilvusOptions {
  const input = typeof options === 'string' ? milvusUrlOptions(options) : options;
  const parsed = milvusOptionsSchema.safeParse(input);
  if (!parsed.success) throw new ConfigError(`milvus options: ${z.prettifyError(parsed.error)}`);
  const token = env.BFE_MILVUS_TOKEN;
  if (parsed.data.token === undefined && token !== undefined && token !== '')
    return { ...parsed.data, token };
  return parsed.data;
}

/** The SDK's `address` and `ssl` for an address as bfe writes it. */
export function grpcAddress(options: ResolvedMilvusOptions): { address: string; ssl: boolean } {
  const m = /^(milvus|https?|grpcs?):\/\/(.+)$/.exec(options.address);
  const scheme = m?.[1];
  const hostPort = m === null ? options.address : m[2]!;
  const tls = scheme === 'https' || scheme === 'grpcs' || options.caPem !== undefined;
  return { address: hostPort.replace(/\/+$/, ''), ssl: options.ssl ?? tls };
}

/** The index's build parameters, as `createIndex` takes them. */
export function buildParams(o: ResolvedMilvusOptions): Record<string, number> {
  switch (o.indexType) {
    case 'HNSW':
      return { M: o.hnsw.M, efConstruction: o.hnsw.efConstruction };
    case 'IVF_FLAT':
    case 'IVF_SQ8':
      return { nlist: o.ivf.nlist };
    default:
      return {};
  }
}

/** A search's parameters for `limit` proposals per row (beams raised to the limit). */
export function searchParams(o: ResolvedMilvusOptions, limit: number): Record<string, number> {
  switch (o.indexType) {
    case 'HNSW':
      return { ef: Math.max(o.hnsw.ef, limit) };
    case 'IVF_FLAT':
    case 'IVF_SQ8':
      return { nprobe: Math.min(o.ivf.nprobe, o.ivf.nlist) };
    case 'DISKANN':
      return { search_list: Math.max(o.diskann.searchList, limit) };
    default:
      return {};
  }
}
