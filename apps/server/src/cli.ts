import { Command } from 'commander';
import { z } from 'zod';
import { BfeError } from '@bfe/core';
import { DEFAULT_ENCODE_BATCH } from '@bfe/store';
import { DEFAULT_DRAIN_MS } from './app.js';
import { parseCliArgs } from './cli-args.js';
import { DEFAULT_LIMITS } from './limits.js';
import { defaultEncodeWorkers, serve } from './serve.js';
import {
  STORE_FLAGS_USAGE,
  storeFlagOptions,
  storeFlags,
  storeFlagsSchema,
} from './store-flags.js';

const USAGE =
  'usage: bfe serve --store DIR [--host 127.0.0.1] [--port 8080] [--keys FILE] [--model NAME]\n' +
  '                 [--index milvus://HOST:PORT] [--threads 1] [--encode-workers N] [--encode-batch 2]\n' +
  '                 [--passage-workers 1] [--kernel-workers 1] [--allowed-hosts NAME,…] [--rate 100]\n' +
  '                 [--burst 200] [--concurrency 16] [--drain-ms 10000] [--bm25-language none|english]\n' +
  '                 [--query-model NAME] [--resident-product fp32|int8]\n' +
  `                 ${STORE_FLAGS_USAGE}\n` +
  '                 [--graph-mb 1024]';

/** After the drain, how long closing the store may take before the process exits anyway. */
const CLOSE_GRACE_MS = 20_000;

const argsSchema = z.strictObject({
  store: z.string({ error: '--store DIR is required' }).min(1, '--store DIR is required'),
  host: z.string().min(1).default('127.0.0.1'),
  port: z.coerce.number().int().min(0).max(65535).default(8080),
  keys: z.string().min(1).optional(),
  model: z.string().min(1).optional(),
  /** Another graph of the store's model that encodes the queries (its int8 weights). */
  queryModel: z.string().min(1).optional(),
  /** The store's token index in Milvus (`milvus://host:port`, `https://…` for TLS). */
  index: z
    .string()
    .regex(/^(milvus|https?):\/\/./, '--index takes milvus://HOST:PORT or https://HOST:PORT')
    .optional(),
  /** onnxruntime intra-op threads per session; 0: onnxruntime's choice (every core). */
  threads: z.coerce.number().int().min(0).max(256).default(1),
  /** Encoder worker threads (default one per core, at most 2); 0: encode on the event loop's thread. */
  encodeWorkers: z.coerce.number().int().min(0).max(64).default(defaultEncodeWorkers()),
  /** Most queries one encoder run coalesces. */
  encodeBatch: z.coerce.number().int().min(1).max(256).default(DEFAULT_ENCODE_BATCH),
  /** Encoder worker threads for added memories; 0: on the query encoder workers. */
  passageWorkers: z.coerce.number().int().min(0).max(64).default(1),
  /** Resident-kernel worker threads; 0: resident kernels on the event loop's thread. */
  kernelWorkers: z.coerce.number().int().min(0).max(64).default(1),
  /** The resident kernels' product: fp32, or int8 (approximate proposals rescored). */
  residentProduct: z.enum(['fp32', 'int8']).default('fp32'),
  /** Without --keys, further `Host` names requests may carry (comma-separated). */
  allowedHosts: z
    .string()
    .transform((list) =>
      list
        .split(',')
        .map((h) => h.trim())
        .filter((h) => h !== ''),
    )
    .optional(),
  /** Requests per second per key (a key's own `rate` wins); 0: no rate limit. */
  rate: z.coerce.number().min(0).default(DEFAULT_LIMITS.rate),
  burst: z.coerce.number().int().min(1).default(DEFAULT_LIMITS.burst),
  concurrency: z.coerce.number().int().min(1).default(DEFAULT_LIMITS.concurrency),
  /** How long a shutdown waits for open connections before it cuts them. */
  drainMs: z.coerce.number().int().min(0).default(DEFAULT_DRAIN_MS),
  /** BM25's language of hybrid searches (the store's lexical index). */
  bm25Language: z.enum(['english', 'none']).optional(),
  ...storeFlagsSchema,
  /** MiB of large banks' HNSW graphs held in memory (`maxGraphBytes`). */
  graphMb: z.coerce.number().int().min(0).optional(),
});

/**
 * The `bfe serve` command line, parsed by commander as every other `bfe` subcommand is:
 * `--help` prints the options and exits 0; an unknown option or a stray argument is an error.
 */
export function serveProgram(): Command {
  return storeFlags(new Command('bfe serve'))
    .description('serve a memory store over HTTP')
    .option('--store <dir>', 'the store directory (created when missing)')
    .option('--host <host>', 'address to listen on', '127.0.0.1')
    .option('--port <n>', 'port to listen on; 0: a free port', '8080')
    .option('--keys <file>', 'API keys and their banks (without it: loopback requests only)')
    .option('--model <name>', 'the encoder of a new store (default all-minilm-l6-v2)')
    .option(
      '--query-model <name>',
      "an installed graph of the store's model that encodes the queries (e.g. its int8 weights)",
    )
    .option(
      '--index <url>',
      'token index in Milvus: milvus://HOST:PORT or https://HOST:PORT, ?index=HNSW&M=16&ef=128, ?ca=FILE',
    )
    .option('--threads <n>', 'onnxruntime intra-op threads per session; 0: every core', '1')
    .option(
      '--encode-workers <n>',
      'encoder worker threads (default one per core, at most 2); 0: on the event loop',
    )
    .option(
      '--encode-batch <n>',
      'most queries one encoder run coalesces',
      String(DEFAULT_ENCODE_BATCH),
    )
    .option('--passage-workers <n>', 'encoder threads for adds; 0: on the query workers', '1')
    .option('--kernel-workers <n>', 'resident-kernel worker threads; 0: on the event loop', '1')
    .option(
      '--resident-product <p>',
      'resident banks: fp32, or int8 (int8 proposals rescored in float64)',
      'fp32',
    )
    .option(
      '--allowed-hosts <names>',
      'without --keys: more Host names to answer (comma-separated)',
    )
    .option('--rate <n>', 'requests/s per key (a key may set its own); 0: no limit', '100')
    .option('--burst <n>', 'requests a key may send at once above its rate', '200')
    .option('--concurrency <n>', 'requests in flight per key', '16')
    .option(
      '--drain-ms <n>',
      'on SIGTERM, wait this long for open connections, then cut them',
      '10000',
    )
    .option('--bm25-language <lang>', 'BM25 of hybrid searches: english or none (default none)')
    .option('--graph-mb <n>', "MiB of large banks' HNSW graphs held in memory (default 1024)")
    .allowExcessArguments(false)
    .exitOverride();
}

/**
 * `bfe serve`: opens the store, listens, prints exactly one line `listening on http://HOST:PORT`
 * on stdout once ready (the access note and errors go to stderr), and on SIGTERM or SIGINT
 * stops gracefully (in-flight requests finish, the store is flushed and its lock released)
 * and exits 0. Returns the exit code: 0 (also after `--help`), 1 (internal error) or 2 (bad
 * arguments or config).
 */
export async function runServeCli(argv: readonly string[]): Promise<number> {
  const parsed = parseCliArgs(
    serveProgram(),
    argsSchema,
    argv,
    { name: 'bfe serve', text: USAGE },
    (text) => process.stdout.write(text),
  );
  if ('code' in parsed) return parsed.code;
  const { args } = parsed;
  let server;
  try {
    server = await serve({
      store: args.store,
      host: args.host,
      port: args.port,
      ...(args.keys === undefined ? {} : { keys: args.keys }),
      ...(args.allowedHosts === undefined ? {} : { allowedHosts: args.allowedHosts }),
      limits: {
        rate: args.rate === 0 ? Infinity : args.rate,
        burst: args.burst,
        concurrency: args.concurrency,
      },
      drainMs: args.drainMs,
      storeOptions: {
        ...(args.model === undefined ? {} : { model: args.model }),
        ...(args.bm25Language === undefined ? {} : { bm25Language: args.bm25Language }),
        ...storeFlagOptions(args),
        // The URL as given (its query names the index type and its parameters); the token for
        // a Milvus cluster comes from the environment (BFE_MILVUS_TOKEN), never the command line.
        ...(args.index === undefined ? {} : { index: args.index }),
        ...(args.threads === 0 ? {} : { threads: args.threads }),
      },
      encodeWorkers: args.encodeWorkers,
      encodeBatch: args.encodeBatch,
      passageWorkers: args.passageWorkers,
      ...(args.queryModel === undefined ? {} : { queryModel: args.queryModel }),
      kernelWorkers: args.kernelWorkers,
      residentProduct: args.residentProduct,
      ...(args.graphMb === undefined ? {} : { maxGraphBytes: args.graphMb * 1024 * 1024 }),
      logger: { level: 'warn', stream: process.stderr },
    });
  } catch (error) {
    const user = error instanceof BfeError;
    process.stderr.write(`bfe serve: ${(error as Error).message}\n`);
    if (user && error.suggestion !== undefined) process.stderr.write(`  ${error.suggestion}\n`);
    return user ? 2 : 1;
  }
  // Handlers stay installed: a second signal (a terminal's Ctrl-C reaches `bfe serve` and this
  // child both) must not kill the process mid-close. Installed before the listening line, so a
  // signal sent as soon as it is read still closes gracefully.
  const stopped = new Promise<NodeJS.Signals>((resolve) => {
    process.on('SIGTERM', resolve);
    process.on('SIGINT', resolve);
  });
  process.stderr.write(`bfe serve: ${server.accessNote}\n`);
  process.stdout.write(`listening on ${server.url}\n`);
  const signal = await stopped;
  process.stderr.write(`bfe serve: ${signal}: finishing in-flight requests, closing the store\n`);
  // The drain cuts stalled connections; should closing the store itself hang (a disk that
  // stopped answering), the process still exits, with 1. Unref'd: a clean close exits at once.
  const deadline = setTimeout(() => {
    process.stderr.write('bfe serve: closing did not finish in time: exiting\n');
    process.exit(1);
  }, args.drainMs + CLOSE_GRACE_MS);
  deadline.unref();
  try {
    await server.close();
    return 0;
  } catch (error) {
    process.stderr.write(`bfe serve: closing failed: ${(error as Error).message}\n`);
    return 1;
  } finally {
    clearTimeout(deadline);
  }
}
