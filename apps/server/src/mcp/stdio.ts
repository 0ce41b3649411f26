import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { Command } from 'commander';
import { z } from 'zod';
import { BfeError } from '@bfe/core';
import {
  MemoryStore,
  bankNameSchema,
  storeIndexFactory,
  type Embedder,
  type StoreOptions,
} from '@bfe/store';
import { parseCliArgs } from '../cli-args.js';
import {
  STORE_FLAGS_USAGE,
  storeFlagOptions,
  storeFlags,
  storeFlagsSchema,
} from '../store-flags.js';
import type { Grant } from '../keys.js';
import { DEFAULT_LIMITS } from '../limits.js';
import { openQueryModelEmbedder } from '../serve-encoders.js';
import { mcpServer } from './tools.js';

const USAGE =
  'usage: bfe mcp --store DIR [--bank NAME] [--read-only] [--model NAME] [--threads 1]\n' +
  '               [--query-model NAME] [--resident-product fp32|int8]\n' +
  `               [--bm25-language none|english] ${STORE_FLAGS_USAGE}`;

const argsSchema = z.strictObject({
  store: z.string({ error: '--store DIR is required' }).min(1, '--store DIR is required'),
  bank: bankNameSchema.optional(),
  readOnly: z.boolean().default(false),
  model: z.string().min(1).optional(),
  /** Another graph of the store's model that encodes the queries (its int8 weights). */
  queryModel: z.string().min(1).optional(),
  threads: z.coerce.number().int().min(0).max(256).default(1),
  bm25Language: z.enum(['english', 'none']).optional(),
  residentProduct: z.enum(['fp32', 'int8']).default('fp32'),
  ...storeFlagsSchema,
});

/** The `bfe mcp` command line (commander, as every `bfe` subcommand). */
export function mcpProgram(): Command {
  return storeFlags(new Command('bfe mcp'))
    .description('serve a memory store to an assistant over MCP (stdio)')
    .option('--store <dir>', 'the store directory (created when missing)')
    .option('--bank <name>', 'act on this bank only (the tools then take no bank argument)')
    .option('--read-only', 'offer the search and read tools only')
    .option('--model <name>', 'the encoder of a new store (default all-minilm-l6-v2)')
    .option('--query-model <name>', "another graph of the store's model for the queries (int8)")
    .option('--threads <n>', 'onnxruntime intra-op threads per session; 0: every core', '1')
    .option('--bm25-language <lang>', 'BM25 of hybrid searches: english or none (default none)')
    .option(
      '--resident-product <p>',
      'resident banks: fp32, or int8 (int8 proposals rescored in float64)',
      'fp32',
    )
    .allowExcessArguments(false)
    .exitOverride();
}

/** Waits for the first of: stdin closed (the client went away), SIGTERM, SIGINT. */
function stopped(): Promise<string> {
  return new Promise((resolve) => {
    process.stdin.once('end', () => resolve('stdin closed'));
    process.stdin.once('close', () => resolve('stdin closed'));
    process.once('SIGTERM', () => resolve('SIGTERM'));
    process.once('SIGINT', () => resolve('SIGINT'));
  });
}

/**
 * `bfe mcp`: opens the store (with its writer lock) and serves the MCP tools on stdin/stdout
 * (nothing else is written to stdout; notes and errors go to stderr). Ends when stdin closes
 * or on SIGTERM/SIGINT, closing the store (flush, lock released). Returns the exit code: 0,
 * 1 (internal error) or 2 (bad arguments, a store locked by another process).
 */
export async function runMcpCli(argv: readonly string[]): Promise<number> {
  const parsed = parseCliArgs(
    mcpProgram(),
    argsSchema,
    argv,
    { name: 'bfe mcp', text: USAGE },
    // --help goes to stderr: stdout is the protocol's.
    (text) => process.stderr.write(text),
  );
  if ('code' in parsed) return parsed.code;
  const { args } = parsed;
  let storeOptions: StoreOptions = {
    ...(args.model === undefined ? {} : { model: args.model }),
    ...(args.threads === 0 ? {} : { threads: args.threads }),
    ...(args.bm25Language === undefined ? {} : { bm25Language: args.bm25Language }),
    ...storeFlagOptions(args),
    // int8 resident banks (as `bfe serve --resident-product`); fp32 is the store's own default.
    ...(args.residentProduct === 'int8'
      ? {
          index: storeIndexFactory({
            residentProduct: 'int8',
            ...(args.threads === 0 ? {} : { threads: args.threads }),
          }),
        }
      : {}),
  };
  let store: MemoryStore;
  let embedder: Embedder | undefined;
  try {
    if (args.queryModel !== undefined) {
      embedder = await openQueryModelEmbedder(storeOptions, args.queryModel);
      storeOptions = { ...storeOptions, embedder };
    }
    store = await MemoryStore.open(args.store, storeOptions);
  } catch (error) {
    await embedder?.dispose();
    const user = error instanceof BfeError;
    process.stderr.write(`bfe mcp: ${(error as Error).message}\n`);
    if (user && error.suggestion !== undefined) process.stderr.write(`  ${error.suggestion}\n`);
    return user ? 2 : 1;
  }
  // The local user owns the store: every bank (or the one of --bank), write unless --read-only.
  const grant: Grant = {
    banks: args.bank === undefined ? 'all' : new Set([args.bank]),
    write: !args.readOnly,
    admin: false,
    limits: DEFAULT_LIMITS,
  };
  const server = mcpServer({
    store,
    grant,
    ...(args.bank === undefined ? {} : { bank: args.bank }),
    writes: {
      add: (items) => store.add(items),
      delete: (ids, bank) => store.delete(ids, { bank }),
    },
    onInternalError: (error) =>
      process.stderr.write(`bfe mcp: internal error: ${(error as Error).stack ?? error}\n`),
  });
  const stop = stopped();
  await server.connect(new StdioServerTransport());
  process.stderr.write(
    `bfe mcp: serving ${args.store} over stdio` +
      `${args.bank === undefined ? '' : `, bank ${args.bank}`}${args.readOnly ? ', read-only' : ''}\n`,
  );
  const why = await stop;
  process.stderr.write(`bfe mcp: ${why}: closing the store\n`);
  try {
    await server.close();
    await store.close();
    await embedder?.dispose();
    return 0;
  } catch (error) {
    process.stderr.write(`bfe mcp: closing failed: ${(error as Error).message}\n`);
    return 1;
  }
}
