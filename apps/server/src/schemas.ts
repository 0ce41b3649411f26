import { z } from 'zod';
import { SEARCH_SYSTEMS, bankNameSchema, searchResponseJsonSchema } from '@bfe/store';

/**
 * The HTTP contract: one zod schema per request and response. Routes declare them (Fastify's
 * `schema` through `fastify-type-provider-zod`), so requests are validated, responses are
 * serialised through them, and `/openapi.json` is generated from them.
 */

/** Most memories one `POST …/memories` may carry (predeclared; larger batches get a 400). */
export const MAX_BATCH = 256;
/** Shortest API key a keys file may hold. */
export const MIN_KEY_LENGTH = 16;
/** Longest query, in UTF-16 code units (the encoder truncates far below it). */
export const MAX_QUERY_CHARS = 16 * 1024;
/** Most bank tokens one query token may propose. */
export const MAX_TOKEN_K = 4096;
/** Most results one search may return. */
export const MAX_K = 1000;
/** Most memories one list page may return. */
export const MAX_PAGE = 1000;
/** `explain` defaults to true up to this `k`, and to false above it. */
export const EXPLAIN_DEFAULT_MAX_K = 20;
/** Most results one search may explain (evidence is per result and query token). */
export const MAX_EXPLAIN_K = 100;
/** Deepest nesting of a memory's metadata (the object itself is depth 1). */
export const MAX_META_DEPTH = 32;
/** Longest memory id over HTTP, as the store allows. */
export const MAX_ID_CHARS = 512;

/** `{ error: { code, message } }`: every 4xx and 5xx body. */
export const errorSchema = z
  .strictObject({
    error: z.strictObject({
      code: z.string().describe('stable machine-readable code, e.g. NOT_FOUND'),
      message: z.string(),
    }),
  })
  .meta({ id: 'Error' });

export const bankParams = z.strictObject({ bank: bankNameSchema });
export const memoryParams = z.strictObject({
  bank: bankNameSchema,
  id: z.string().min(1).max(MAX_ID_CHARS),
});

/** How deep a JSON value nests (a scalar is 0, `{}` is 1), walked without recursion. */
export function jsonDepth(value: unknown): number {
  let deepest = 0;
  const stack: [unknown, number][] = [[value, 0]];
  while (stack.length > 0) {
    const [v, depth] = stack.pop()!;
    if (v === null || typeof v !== 'object') continue;
    deepest = Math.max(deepest, depth + 1);
    for (const child of Object.values(v)) stack.push([child, depth + 1]);
  }
  return deepest;
}

// The store checks metadata is JSON (and its size); HTTP bodies are JSON already. The depth
// is checked here, without recursion, before any recursive pass could overflow the stack.
const metaSchema = z
  .record(z.string(), z.unknown())
  .refine((m) => jsonDepth(m) <= MAX_META_DEPTH, `meta nests deeper than ${MAX_META_DEPTH} levels`)
  .describe(`JSON metadata of the memory, nested at most ${MAX_META_DEPTH} levels`);

export const memoryInputSchema = z.strictObject({
  id: z.string().min(1),
  text: z.string().describe('UTF-8 text, non-blank, at most the store’s maxTextBytes'),
  meta: metaSchema.optional(),
});

export const addBodySchema = z.strictObject({
  memories: z
    .array(memoryInputSchema)
    .min(1, 'at least one memory')
    .max(MAX_BATCH, `at most ${MAX_BATCH} memories per request`),
});

export const addResponseSchema = z.strictObject({
  ids: z.array(z.string()).describe('the ids written, durable (fsync) before this response'),
});

export const memorySchema = z
  .strictObject({
    id: z.string(),
    bank: z.string(),
    text: z.string(),
    meta: metaSchema.optional(),
  })
  .meta({ id: 'Memory' });

export const listQuerySchema = z.strictObject({
  offset: z.coerce.number().int().min(0).default(0),
  limit: z.coerce.number().int().min(0).max(MAX_PAGE).default(100),
});

export const listResponseSchema = z.strictObject({
  items: z.array(memorySchema),
  total: z.number().int(),
  offset: z.number().int(),
  limit: z.number().int(),
});

export const deleteResponseSchema = z.strictObject({ deleted: z.array(z.string()) });

/** A search's token interventions (the paper's Appendix D) on one memory. */
export const interventionsRequestSchema = z
  .strictObject({
    memory: z
      .string()
      .min(1)
      .optional()
      .describe('the memory to analyse (default: the top result)'),
    removeTop: z
      .number()
      .int()
      .min(1)
      .max(6)
      .default(6)
      .describe('report the rank after removing the top 1…n excess contributions'),
    tokens: z
      .array(z.string().min(1).max(100))
      .max(32)
      .default([])
      .describe('also remove each of these query tokens: its text, or #i for the i-th'),
  })
  .meta({ id: 'InterventionsRequest' });

export const searchBodySchema = z.strictObject({
  query: z
    .string()
    .min(1, 'empty query')
    .max(MAX_QUERY_CHARS, `query over ${MAX_QUERY_CHARS} characters`),
  k: z.number().int().min(1).max(MAX_K).default(10),
  system: z.enum(SEARCH_SYSTEMS).default('sparse-fusion'),
  alpha: z.number().min(0).max(1).optional().describe('weight of the pooled branch (default 0.5)'),
  weights: z
    .strictObject({
      pooled: z.number().min(0).max(1e6),
      sparse: z.number().min(0).max(1e6),
      bm25: z.number().min(0).max(1e6),
    })
    .optional()
    .describe(
      'hybrid: weights of the pooled, sparse and BM25 branches, scaled to sum 1 (default thirds)',
    ),
  explain: z
    .boolean()
    .optional()
    .describe(
      `attach token evidence to each result (default: true for k ≤ ${EXPLAIN_DEFAULT_MAX_K}, ` +
        `false above; true is refused above k ${MAX_EXPLAIN_K})`,
    ),
  tokenK: z
    .number()
    .int()
    .min(1)
    .max(MAX_TOKEN_K)
    .optional()
    .describe('bank tokens proposed per query token (default 64, clamped to the bank)'),
  interventions: interventionsRequestSchema
    .optional()
    .describe('token interventions on one memory (sparse-fusion, no-fusion, zero-floor)'),
  minScore: z
    .number()
    .min(0)
    .max(1)
    .optional()
    .describe(
      'return only results whose calibrated relevance is at least this (up to k, in rank ' +
        'order): none when nothing in the bank looks relevant; 400 when no calibration fits ' +
        "the server's encoder",
    ),
});

// The search result's JSON (results, evidence, interventions) has one home, @bfe/store's wire
// format, shared with the HTTP client.
export const searchResponseSchema = searchResponseJsonSchema;

export const healthSchema = z
  .strictObject({
    status: z.enum(['ok', 'unavailable']),
    checks: z
      .strictObject({
        store: z.string().describe('"ok", or why the store cannot serve (closed)'),
        wal: z.string().describe('"ok", or why the write-ahead log cannot be written'),
        writes: z.string().describe('"ok", or the code of the last write that failed on disk'),
      })
      .optional()
      .describe('with "unavailable": each check, "ok" or what is wrong'),
  })
  .meta({ id: 'Health' });

export const readySchema = z
  .strictObject({
    status: z.enum(['ready', 'not-ready']),
    checks: z
      .strictObject({
        store: z.string().describe('"ok", or why the store cannot serve (closed)'),
        wal: z.string().describe('"ok", or why the write-ahead log cannot be written'),
        writes: z.string().describe('"ok", or the code of the last write that failed on disk'),
        index: z
          .string()
          .describe('"ok", or "building: …" while the token index builds or loads its graphs'),
      })
      .describe('each check, "ok" or what is wrong'),
    index: z
      .strictObject({
        graphs: z.number().int().describe('banks searched through an HNSW graph'),
        failures: z
          .array(z.string())
          .describe('graphs dropped after a failure: those banks are searched exactly'),
      })
      .optional()
      .describe("the token index's graphs, when the service keeps the store's index"),
  })
  .meta({ id: 'Readiness' });

export const banksResponseSchema = z.strictObject({
  banks: z.array(z.string()).describe('the banks this key sees that hold memories'),
});

/**
 * Request limits of one API key: a token bucket (`rate` requests per second, up to `burst` at
 * once) and at most `concurrency` requests in flight. Unset fields take the server's defaults.
 */
export const keyLimitsSchema = z.strictObject({
  rate: z.number().positive().optional(),
  burst: z.number().int().min(1).optional(),
  concurrency: z.number().int().min(1).optional(),
});

/**
 * The `--keys FILE` document: API key → the banks it may see, whether it may write them,
 * whether it reads the store-wide metrics (`admin`), and its request limits.
 */
export const keysFileSchema = z
  .record(
    z.string(),
    z.strictObject({
      banks: z.array(bankNameSchema),
      write: z.boolean().default(false),
      admin: z.boolean().default(false),
      ...keyLimitsSchema.shape,
    }),
  )
  .refine((keys) => Object.keys(keys).length > 0, 'at least one key')
  .refine(
    (keys) => Object.keys(keys).every((k) => k.length >= MIN_KEY_LENGTH && !/\s/.test(k)),
    `every API key is at least ${MIN_KEY_LENGTH} characters without whitespace`,
  );

/** A parsed keys file. */
export type KeysFile = z.output<typeof keysFileSchema>;
