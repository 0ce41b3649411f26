import { z } from 'zod';
import { ConfigError } from '@bfe/core';

/** The index types bfe builds on the vector field (Milvus Lite 3.2.2 accepts both). */
export const MILVUS_INDEX_TYPES = ['FLAT', 'HNSW'] as const;

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
  database: z.string().min(1).optional(),
  collection: z
    .string()
    .regex(/^[A-Za-z_][A-Za-z0-9_]{0,254}$/, 'a Milvus collection name: letters, digits, _')
    .default('bfe_tokens'),
  /** `FLAT` (exhaustive: the same top-k as the exact backend) or `HNSW` (approximate). */
  indexType: z.enum(MILVUS_INDEX_TYPES).default('FLAT'),
  /** HNSW graph degree and build beam; `ef` the search beam (raised to the fetch size). */
  hnsw: z
    .strictObject({
      M: z.number().int().min(2).max(2048).default(16),
      efConstruction: z.number().int().min(1).default(128),
      ef: z.number().int().min(1).default(128),
    })
    .prefault({}),
  /** Rows per insert request (a memory's tokens never span two requests). */
  insertBatch: z.number().int().min(1).default(8192),
  /** gRPC call timeout in ms. */
  timeoutMs: z.number().int().positive().default(120_000),
});

/** Milvus settings as a caller writes them. */
export type MilvusOptions = z.input<typeof milvusOptionsSchema>;
/** Milvus settings with defaults filled in. */
export type ResolvedMilvusOptions = z.output<typeof milvusOptionsSchema>;

/**
 * Parses Milvus settings; a bare `milvus://host:port` string is the address alone.
 * @throws {ConfigError} naming each bad field.
 * @example
 * parseMilvusOptions('milvus://127.0.0.1:19530'); // { address: 'milvus://…', collection: 'bfe_tokens', indexType: 'FLAT', … }
 */
export function parseMilvusOptions(options: unknown): ResolvedMilvusOptions {
  const input = typeof options === 'string' ? { address: options } : options;
  const parsed = milvusOptionsSchema.safeParse(input);
  if (!parsed.success) throw new ConfigError(`milvus options: ${z.prettifyError(parsed.error)}`);
  return parsed.data;
}

/** The SDK's `address` and `ssl` for an address as bfe writes it. */
export function grpcAddress(options: ResolvedMilvusOptions): { address: string; ssl: boolean } {
  const m = /^(milvus|https?|grpcs?):\/\/(.+)$/.exec(options.address);
  const scheme = m?.[1];
  const hostPort = m === null ? options.address : m[2]!;
  const tls = scheme === 'https' || scheme === 'grpcs';
  return { address: hostPort.replace(/\/+$/, ''), ssl: options.ssl ?? tls };
}
