import { availableParallelism } from 'node:os';
import type { FastifyInstance, FastifyServerOptions } from 'fastify';
import {
  DEFAULT_MAX_TEXT_BYTES,
  MemoryStore,
  storeIndexFactory,
  residentKernelPool,
  type StoreIndexFactory,
  type ResidentKernelPool,
  type StoreOptions,
} from '@bfe/store';
import { buildServer, type ServerOptions } from './app.js';
import { openServeEmbedder } from './serve-encoders.js';
import { keysPolicy, loadKeysFile, loopbackPolicy } from './keys.js';
import { DEFAULT_LIMITS, type RequestLimits } from './limits.js';

/** Options of {@link serve}. */
export interface ServeOptions {
  /** The store directory (opened, or created, with its writer lock). */
  readonly store: string;
  readonly host: string;
  /** 0: any free port. */
  readonly port: number;
  /** A keys file; without one, loopback requests only. */
  readonly keys?: string;
  /**
   * Without a keys file, `Host` names requests may carry beside the loopback names and `host`
   * itself (see {@link ServerOptions.allowedHosts}).
   */
  readonly allowedHosts?: readonly string[];
  /** The request limits of a key that sets none (and of the loopback user). */
  readonly limits?: Partial<RequestLimits>;
  /** How long `close()` waits for open connections before it cuts them (ms; default 10 s). */
  readonly drainMs?: number;
  /** Body and response size limits. */
  readonly sizes?: ServerOptions['sizes'];
  /** Store options: the model (default `all-minilm-l6-v2`) or an injected embedder, limits. */
  readonly storeOptions?: StoreOptions;
  /**
   * Worker threads that encode (queries and adds) off the event loop, coalescing concurrent
   * queries into one encoder run (`openEmbedderPool`). Default {@link defaultEncodeWorkers}; 0
   * encodes on the event loop's thread (onnxruntime-node runs a session synchronously there).
   * Ignored with an injected `storeOptions.embedder`.
   */
  readonly encodeWorkers?: number;
  /**
   * Most queries one encoder run coalesces (`openEmbedderPool`'s `maxBatch`). Default
   * `DEFAULT_ENCODE_BATCH` (2): queued queries spread over the workers.
   */
  readonly encodeBatch?: number;
  /**
   * Worker threads that encode added memories apart from the query workers (each with its own
   * encoder session), so searches never queue behind a write's encoding. Default 1; 0 encodes
   * adds on the query workers. Used only with `encodeWorkers` > 0.
   */
  readonly passageWorkers?: number;
  /**
   * An installed model that encodes the queries (`--query-model`): another graph of the store's
   * model (its int8 weights, `tools/model/quantize_int8.py`), checked by `assertQueryModel`.
   * Passages are still encoded by the store's model, on passage workers of their own. Needs
   * `encodeWorkers` > 0 and `passageWorkers` > 0. Default: the store's model for both.
   */
  readonly queryModel?: string;
  /**
   * Worker threads that hold each small bank resident on its own onnxruntime kernel and run its
   * token top-k there, off the event loop (`residentKernelPool`). Default 1; 0 keeps resident
   * kernels on the event loop's thread. Ignored with `storeOptions.index` given.
   */
  readonly kernelWorkers?: number;
  /**
   * The resident kernels' product (`--resident-product`, `storeIndexFactory`'s
   * `residentProduct`): `fp32` (default) or `int8` (the bank held as int8, proposals rescored in
   * float64; approximate, measured in BENCHMARKS.md "The service"). Ignored with
   * `storeOptions.index` given.
   */
  readonly residentProduct?: 'fp32' | 'int8';
  /**
   * Bytes of HNSW graphs of large banks held in memory (`storeIndexFactory`'s `maxGraphBytes`,
   * default 1 GiB). Ignored with `storeOptions.index` given.
   */
  readonly maxGraphBytes?: number;
  readonly logger?: FastifyServerOptions['logger'];
}

/** A running service: its URL, and `close()` for a graceful stop. */
export interface RunningServer {
  readonly url: string;
  readonly app: FastifyInstance;
  readonly store: MemoryStore;
  /** The line `bfe serve` prints about access, e.g. that only loopback requests are served. */
  readonly accessNote: string;
  /**
   * Stops accepting connections, lets in-flight requests finish for up to `drainMs` (an add in
   * flight completes and is durable), then cuts the connections still open (a stalled client),
   * waits for writes under way, and closes the store (flush, lock released). Idempotent.
   */
  close(): Promise<void>;
}

/**
 * Query encoder workers when the options leave it out: one per core, at most 2. With one, a
 * query that arrives while the worker encodes waits for that whole run; with two, one encodes
 * while the other takes the next queries (BENCHMARKS.md "The service": `--encode-workers 2`
 * beside 1 in one run).
 */
export function defaultEncodeWorkers(cores: number = availableParallelism()): number {
  return Math.max(1, Math.min(2, cores));
}

/**
 * Opens the store, builds the service and listens.
 * @example
 * const server = await serve({ store: '/data/memories', host: '127.0.0.1', port: 0 });
 * server.url; // 'http://127.0.0.1:41234'
 * await server.close();
 */
export async function serve(options: ServeOptions): Promise<RunningServer> {
  const keys = options.keys === undefined ? undefined : await loadKeysFile(options.keys);
  const limits = { ...DEFAULT_LIMITS, ...options.limits };
  const access = keys === undefined ? loopbackPolicy(limits) : keysPolicy(keys, limits);
  // The address it listens on is a name requests may carry, unless it is every address.
  const bound = ['0.0.0.0', '::', ''].includes(options.host) ? [] : [options.host];
  let storeOptions = options.storeOptions ?? {};
  const workers = options.encodeWorkers ?? defaultEncodeWorkers();
  const pool = await openServeEmbedder(options, storeOptions, workers);
  if (pool !== undefined) storeOptions = { ...storeOptions, embedder: pool };
  let kernels: ResidentKernelPool | undefined;
  let index: StoreIndexFactory | undefined;
  const release = async (): Promise<void> => {
    await index?.dispose();
    await kernels?.dispose();
    await pool?.dispose();
  };
  let store: MemoryStore;
  try {
    if (storeOptions.index === undefined) {
      const threads = storeOptions.threads === undefined ? {} : { threads: storeOptions.threads };
      const indexOptions = {
        ...(options.maxGraphBytes === undefined ? {} : { maxGraphBytes: options.maxGraphBytes }),
        ...(options.residentProduct === undefined
          ? {}
          : { residentProduct: options.residentProduct }),
      };
      // The store's default index (resident exact for small banks, a maintained HNSW graph for
      // large ones), its resident kernels on the worker pool (or on the event loop's thread).
      if ((options.kernelWorkers ?? 1) > 0) {
        const k = await residentKernelPool({ workers: options.kernelWorkers ?? 1, ...threads });
        kernels = k;
        index = storeIndexFactory({ ...threads, ...indexOptions }, { kernel: (f) => k.kernel(f) });
      } else index = storeIndexFactory({ ...threads, ...indexOptions });
      storeOptions = { ...storeOptions, index };
    }
    store = await MemoryStore.open(options.store, storeOptions);
  } catch (error) {
    await release();
    throw error;
  }
  // The graph-keeping index the store searches with, when this function made it or was given it.
  const given = storeOptions.index;
  const readinessIndex =
    index ??
    (typeof given === 'function' &&
    typeof (given as Partial<StoreIndexFactory>).graphsSettled === 'function'
      ? (given as StoreIndexFactory)
      : undefined);
  let app: FastifyInstance;
  try {
    app = await buildServer({
      store,
      access,
      maxTextBytes: storeOptions.maxTextBytes ?? DEFAULT_MAX_TEXT_BYTES,
      allowedHosts: [...bound, ...(options.allowedHosts ?? [])],
      ...(options.drainMs === undefined ? {} : { drainMs: options.drainMs }),
      ...(options.sizes === undefined ? {} : { sizes: options.sizes }),
      ...(options.logger === undefined ? {} : { logger: options.logger }),
      ...(readinessIndex === undefined ? {} : { index: readinessIndex }),
    });
    await app.listen({ host: options.host, port: options.port });
  } catch (error) {
    await store.close();
    await release();
    throw error;
  }
  const address = app.server.address();
  const port = typeof address === 'object' && address !== null ? address.port : options.port;
  const host = options.host.includes(':') ? `[${options.host}]` : options.host;
  let closing: Promise<void> | undefined;
  return {
    url: `http://${host}:${port}`,
    app,
    store,
    accessNote:
      keys === undefined
        ? 'no --keys file: answering loopback requests only (127.0.0.0/8, ::1) whose Host is ' +
          `localhost, a loopback address${bound.length > 0 ? `, ${bound.join(', ')}` : ''}` +
          `${(options.allowedHosts ?? []).map((h) => `, ${h}`).join('')}`
        : `keys: ${Object.keys(keys).length} API key(s) from ${options.keys}`,
    close() {
      closing ??= app
        .close()
        .finally(() => store.close())
        .finally(release);
      return closing;
    },
  };
}
