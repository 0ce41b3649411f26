import { randomUUID } from 'node:crypto';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import {
  SEARCH_SYSTEMS,
  bankNameSchema,
  searchResultJsonSchema,
  searchResultToJson,
  type MemoryInput,
  type MemoryStore,
} from '@bfe/store';
import { grantReaches } from '../access.js';
import { HttpError, toHttp } from '../http-errors.js';
import { canSee, type Grant } from '../keys.js';
import {
  EXPLAIN_DEFAULT_MAX_K,
  MAX_BATCH,
  MAX_EXPLAIN_K,
  MAX_ID_CHARS,
  memoryInputSchema,
  memorySchema,
  searchBodySchema,
} from '../schemas.js';
import type { StoreWrites } from '../writes.js';
import { idList, memories, memoryText, searchText } from './text.js';

/** What the MCP tools act on, and for whom. */
export interface McpContext {
  readonly store: MemoryStore;
  /** The store's writes (over HTTP: the service's, tracked for shutdown and health). */
  readonly writes: Pick<StoreWrites, 'add' | 'delete'>;
  /** The banks the caller sees and whether it may write: its key's, as on the HTTP routes. */
  readonly grant: Grant;
  /** Every call acts on this bank; the tools then take no `bank` argument. */
  readonly bank?: string;
  /**
   * Largest answer in bytes (its text and structured content together; over HTTP the
   * service's response limit): a larger search is a `RESPONSE_TOO_LARGE` tool error.
   */
  readonly maxResponseBytes?: number;
  /** Called with an internal error (a tool answers it as `INTERNAL: internal error`). */
  readonly onInternalError?: (error: unknown) => void;
}

/** The MCP server's name and version, as the client's `initialize` sees them. */
export const MCP_SERVER_INFO = { name: 'bfe-memory', version: '0.1.0' } as const;

/** Most results one `memory_search` returns (each with its token evidence). */
export const MCP_MAX_K = MAX_EXPLAIN_K;

const bankArg = bankNameSchema
  .optional()
  .describe('the bank; may be left out when the caller sees exactly one bank');

const addArgs = z.strictObject({
  bank: bankArg,
  memories: z
    .array(
      z.strictObject({
        id: z
          .string()
          .min(1)
          .max(MAX_ID_CHARS)
          .optional()
          .describe('a new id in the bank (default: a random UUID)'),
        text: memoryInputSchema.shape.text,
        meta: memoryInputSchema.shape.meta,
      }),
    )
    .min(1, 'at least one memory')
    .max(MAX_BATCH, `at most ${MAX_BATCH} memories per call`),
});

const searchArgs = z.strictObject({
  bank: bankArg,
  query: searchBodySchema.shape.query.describe('the question, or the text to find memories about'),
  k: z.number().int().min(1).max(MCP_MAX_K).default(5).describe('how many memories to return'),
  system: z
    .enum(SEARCH_SYSTEMS)
    .default('sparse-fusion')
    .describe(
      'ranking: sparse-fusion (token evidence fused with pooled cosine), hybrid, pooled, …',
    ),
  explain: z
    .boolean()
    .optional()
    .describe(`token evidence per result (default: true for k ≤ ${EXPLAIN_DEFAULT_MAX_K})`),
  alpha: searchBodySchema.shape.alpha,
  tokenK: searchBodySchema.shape.tokenK,
  weights: searchBodySchema.shape.weights,
  minScore: searchBodySchema.shape.minScore,
});

const getArgs = z.strictObject({
  bank: bankArg,
  id: z.string().min(1).max(MAX_ID_CHARS),
});

const deleteArgs = z.strictObject({
  bank: bankArg,
  ids: z.array(z.string().min(1).max(MAX_ID_CHARS)).min(1).max(MAX_BATCH),
});

const searchOutput = z.strictObject({
  bank: z.string(),
  query: z.string(),
  system: z.enum(SEARCH_SYSTEMS),
  results: z.array(searchResultJsonSchema),
});

// The root of an output schema is an object schema itself, not a reference to a named one.
const memoryOutput = z.strictObject(memorySchema.shape);

const addOutput = z.strictObject({ bank: z.string(), ids: z.array(z.string()) });

const deleteOutput = z.strictObject({
  bank: z.string(),
  deleted: z.array(z.string()),
  unknown: z.array(z.string()).describe('ids the bank does not hold'),
});

const banksOutput = z.strictObject({
  banks: z.array(z.strictObject({ bank: z.string(), memories: z.number().int() })),
});

/** A tool's answer: text for the assistant, the same as structured content. */
const answer = (text: string, structured: Record<string, unknown>): CallToolResult => ({
  content: [{ type: 'text', text }],
  structuredContent: structured,
});

/**
 * The MCP server over a store: one tool per action (`memory_add`, `memory_search`,
 * `memory_get`, `memory_delete`, `memory_list_banks`), each calling the store as the HTTP
 * routes do, under the caller's grant (a bank its key does not list is answered like a bank
 * that does not exist). A bad argument or a refused action is a tool result with `isError`
 * and `CODE: message` (the HTTP error codes), never a protocol error. Without write access
 * the write tools are not offered.
 * @example
 * const server = mcpServer({ store, writes, grant: { banks: 'all', write: true, admin: false, limits } });
 * await server.connect(new StdioServerTransport());
 */
export function mcpServer(ctx: McpContext): McpServer {
  const server = new McpServer(MCP_SERVER_INFO, {
    instructions:
      'Long-term memory: memory_add stores texts in a bank, memory_search finds the memories ' +
      'relevant to a question (with the query tokens each one matched), memory_get reads one ' +
      'by id, memory_delete deletes by id, memory_list_banks lists the banks.' +
      (ctx.bank === undefined ? '' : ` Every call acts on the bank '${ctx.bank}'.`),
  });
  const { store, grant } = ctx;
  // With a fixed bank the tools take no `bank` argument (an assistant cannot pick another).
  const shape = <S extends z.ZodObject>(schema: S): S =>
    (ctx.bank === undefined ? schema : schema.omit({ bank: true })) as S;

  /** The bank of a call: the fixed one, the one named, or the key's only bank. */
  const bankOf = (named: string | undefined): string => {
    if (ctx.bank !== undefined) return ctx.bank;
    if (named !== undefined) return named;
    if (grant.banks !== 'all' && grant.banks.size === 1) return [...grant.banks][0]!;
    throw new HttpError(
      400,
      'BAD_REQUEST',
      grant.banks === 'all'
        ? 'name the bank (memory_list_banks lists those that hold memories)'
        : `name the bank: this key sees ${[...grant.banks].join(', ')}`,
    );
  };

  /** Runs a tool's body; every error becomes a tool error result in the HTTP codes. */
  const run =
    <A>(body: (args: A) => Promise<CallToolResult> | CallToolResult) =>
    async (args: A): Promise<CallToolResult> => {
      try {
        return await body(args);
      } catch (error) {
        const { status, code, message } = toHttp(error);
        if (status >= 500 && code === 'INTERNAL') ctx.onInternalError?.(error);
        return { content: [{ type: 'text', text: `${code}: ${message}` }], isError: true };
      }
    };

  if (grant.write)
    server.registerTool(
      'memory_add',
      {
        title: 'Add memories',
        description:
          'Store new memories (texts, optional ids and JSON metadata) in a bank; atomic, ' +
          'durable once answered. An id that already exists is refused.',
        inputSchema: shape(addArgs),
        outputSchema: addOutput,
        annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false },
      },
      run(async (args: z.output<typeof addArgs>) => {
        const bank = bankOf(args.bank);
        grantReaches(grant, store, bank, { write: true });
        const items = args.memories.map(({ id, text, meta }): MemoryInput => ({
          id: id ?? randomUUID(),
          bank,
          text,
          ...(meta === undefined ? {} : { meta }),
        }));
        const { ids } = await ctx.writes.add(items);
        return answer(`added ${memories(ids.length)} to bank '${bank}': ${idList(ids)}`, {
          bank,
          ids,
        });
      }),
    );

  server.registerTool(
    'memory_search',
    {
      title: 'Search memories',
      description:
        'The memories of a bank most relevant to a query, best first, with scores and the ' +
        'token evidence: which memory token each query token matched, how similar, and its ' +
        'share of the score (a floored token matched nothing close). Each result has a ' +
        'calibrated relevance (0–1, comparable across searches); minScore returns only results ' +
        'at or above it, so an empty answer means nothing relevant was found.',
      inputSchema: shape(searchArgs),
      outputSchema: searchOutput,
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    run(async (args: z.output<typeof searchArgs>) => {
      const bank = bankOf(args.bank);
      grantReaches(grant, store, bank, { exists: true });
      const { query, k, system, alpha, tokenK, weights, minScore } = args;
      const results = await store.search({
        bank,
        query,
        k,
        system,
        explain: args.explain ?? k <= EXPLAIN_DEFAULT_MAX_K,
        ...(alpha === undefined ? {} : { alpha }),
        ...(tokenK === undefined ? {} : { tokenK }),
        ...(weights === undefined ? {} : { weights }),
        ...(minScore === undefined ? {} : { minScore }),
      });
      const json = results.map(searchResultToJson);
      const structured = { bank, query, system, results: json };
      const text = searchText(bank, query, system, json);
      const limit = ctx.maxResponseBytes ?? Infinity;
      const bytes = Buffer.byteLength(text) + Buffer.byteLength(JSON.stringify(structured));
      if (bytes > limit)
        throw new HttpError(
          400,
          'RESPONSE_TOO_LARGE',
          `the answer would be ${bytes} bytes, over the limit of ${limit}: ask for fewer ` +
            'results (k) or set explain false',
        );
      return answer(text, structured);
    }),
  );

  server.registerTool(
    'memory_get',
    {
      title: 'Get a memory',
      description: 'One memory of a bank by id: its text and metadata.',
      inputSchema: shape(getArgs),
      outputSchema: memoryOutput,
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    run((args: z.output<typeof getArgs>) => {
      const bank = bankOf(args.bank);
      grantReaches(grant, store, bank, { exists: true });
      const m = store.get(bank, args.id);
      if (m === undefined)
        throw new HttpError(404, 'NOT_FOUND', `no memory '${args.id}' in bank '${bank}'`);
      const memory = {
        id: m.id,
        bank: m.bank,
        text: m.text,
        ...(m.meta === undefined ? {} : { meta: m.meta as Record<string, unknown> }),
      };
      return answer(memoryText(memory), memory);
    }),
  );

  if (grant.write)
    server.registerTool(
      'memory_delete',
      {
        title: 'Delete memories',
        description:
          'Delete memories of a bank by id; durable once answered. Ids the bank does not hold ' +
          'are reported; when it holds none of them, the call fails.',
        inputSchema: shape(deleteArgs),
        outputSchema: deleteOutput,
        annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true },
      },
      run(async (args: z.output<typeof deleteArgs>) => {
        const bank = bankOf(args.bank);
        grantReaches(grant, store, bank, { write: true, exists: true });
        const { deleted } = await ctx.writes.delete(args.ids, bank);
        const gone = new Set(deleted);
        const unknown = [...new Set(args.ids)].filter((id) => !gone.has(id));
        if (deleted.length === 0)
          throw new HttpError(404, 'NOT_FOUND', `no memory ${idList(unknown)} in bank '${bank}'`);
        const missing = unknown.length === 0 ? '' : `; not in the bank: ${idList(unknown)}`;
        return answer(`deleted from bank '${bank}': ${idList(deleted)}${missing}`, {
          bank,
          deleted,
          unknown,
        });
      }),
    );

  server.registerTool(
    'memory_list_banks',
    {
      title: 'List banks',
      description: 'The banks this caller may use that hold memories, with their sizes.',
      inputSchema: z.strictObject({}),
      outputSchema: banksOutput,
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    run(() => {
      const banks = store
        .banks()
        .filter((b) => canSee(grant, b) && (ctx.bank === undefined || b === ctx.bank))
        .map((bank) => ({ bank, memories: store.list(bank, { limit: 0 }).total }));
      const text =
        banks.length === 0
          ? 'no bank holds memories yet' +
            (ctx.bank === undefined ? '' : ` (this server uses bank '${ctx.bank}')`)
          : banks.map((b) => `${b.bank}: ${memories(b.memories)}`).join('\n');
      return answer(text, { banks });
    }),
  );
  return server;
}
