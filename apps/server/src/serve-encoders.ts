// The encoders `serve` opens for its store: query workers and passage workers, each an
// onnxruntime session per worker thread, the query side optionally another graph of the model.
import { ConfigError } from '@bfe/core';
import {
  checkQueryModel,
  openEmbedder,
  openEmbedderPool,
  type Embedder,
  type StoreOptions,
} from '@bfe/store';
import { byRole } from './embedder-roles.js';

type Encoders = Embedder & { dispose(): Promise<void> };

/** The encoder options of `serve` (`ServeOptions`' fields of the same names). */
export interface ServeEncoderOptions {
  readonly encodeBatch?: number;
  readonly passageWorkers?: number;
  readonly queryModel?: string;
}

/**
 * The store's embedder: `workers` query encoder threads and `passageWorkers` (default 1) of
 * their own for adds (0: adds on the query workers), the queries in `queryModel`'s graph when
 * given (checked against the store's model first). Undefined when the store opens its own
 * encoder (an injected embedder, or `workers` 0).
 * @throws ConfigError for a query model that cannot encode the store model's queries, or one
 * asked for without encoder and passage workers
 */
export async function openServeEmbedder(
  options: ServeEncoderOptions,
  storeOptions: StoreOptions,
  workers: number,
): Promise<Encoders | undefined> {
  const model = storeOptions.model ?? 'all-minilm-l6-v2';
  const passageWorkers = options.passageWorkers ?? 1;
  const { queryModel } = options;
  if (queryModel !== undefined) {
    if (storeOptions.embedder !== undefined || workers === 0 || passageWorkers === 0)
      throw new ConfigError(
        'a query model needs encoder workers and passage workers of their own (--encode-workers ≥ 1, --passage-workers ≥ 1)',
      );
    await checkQueryModel(model, queryModel);
  }
  if (storeOptions.embedder !== undefined || workers === 0) return undefined;
  const open = (n: number, of: typeof model) =>
    openEmbedderPool({
      ...sessionOptions(of, storeOptions),
      workers: n,
      ...(options.encodeBatch === undefined ? {} : { maxBatch: options.encodeBatch }),
    });
  const queries = await open(workers, queryModel ?? model);
  if (passageWorkers === 0) return queries;
  const passages = await open(passageWorkers, model).catch(async (error: unknown) => {
    await queries.dispose();
    throw error;
  });
  return byRole(queries, passages, { queryModel: queryModel !== undefined });
}

/**
 * The store's embedder on the caller's thread (`bfe mcp`): queries in `queryModel`'s graph,
 * passages in the store's model (checked compatible first), each one onnxruntime session.
 * @throws ConfigError for a query model that cannot encode the store model's queries
 */
export async function openQueryModelEmbedder(
  storeOptions: StoreOptions,
  queryModel: string,
): Promise<Encoders> {
  const model = storeOptions.model ?? 'all-minilm-l6-v2';
  await checkQueryModel(model, queryModel);
  const open = (of: typeof model) => openEmbedder(sessionOptions(of, storeOptions));
  const queries = await open(queryModel);
  const passages = await open(model).catch(async (error: unknown) => {
    await queries.dispose();
    throw error;
  });
  return byRole(queries, passages, { queryModel: true });
}

/** An encoder session of `model` with the store's truncation and thread count. */
function sessionOptions(model: NonNullable<StoreOptions['model']>, storeOptions: StoreOptions) {
  return {
    model,
    ...(storeOptions.maxLength === undefined ? {} : { maxLength: storeOptions.maxLength }),
    ...(storeOptions.threads === undefined ? {} : { threads: storeOptions.threads }),
  };
}
