// The worker side of `openEmbedderPool` (embedder-pool.ts): one encoder (its own onnxruntime
// session) per worker thread. It answers `{ id, texts, role, window? }` with `{ id, encoded }` (the
// buffers transferred, not copied), or `{ id, error }`.
import { parentPort, workerData } from 'node:worker_threads';
import { ConfigError } from '@bfe/core';
import { openModelEncoder, type EmbedderOptions } from './embedder.js';
import { encodedTexts } from './encode.js';
import type { EmbedOptions, EncodedTexts } from '../types.js';

/** A request from the pool. */
export interface WorkerRequest {
  readonly id: number;
  readonly texts: readonly string[];
  readonly role: 'passage' | 'query';
  /** A passage run's window (`Embedder.encode`'s `options.window`). */
  readonly window?: EmbedOptions['window'];
}

/** What a worker posts: once `ready` (or `failed`), then one answer per request. */
export type WorkerMessage =
  | {
      readonly type: 'ready';
      readonly model: string;
      readonly dim: number;
      /** `vocab[id]`: the vocabulary piece of each token id (`Embedder.tokenText`). */
      readonly vocab: readonly string[];
    }
  | { readonly type: 'failed'; readonly message: string }
  | { readonly type: 'encoded'; readonly id: number; readonly encoded: EncodedTexts }
  | {
      readonly type: 'error';
      readonly id: number;
      readonly message: string;
      /** Set when the call was refused as a bad configuration (`ConfigError`). */
      readonly config?: { readonly suggestion?: string };
    };

const port = parentPort;
if (port === null) throw new Error('embedder-worker: not started as a worker thread');
const say = (m: WorkerMessage, transfer: ArrayBuffer[] = []): void => port.postMessage(m, transfer);

try {
  const { encoder, manifest } = await openModelEncoder(workerData as EmbedderOptions);
  const vocab = Array.from(
    { length: manifest.vocabSize },
    (_, id) => encoder.tokenText(id) ?? `[${id}]`,
  );
  // One request at a time: the pool sends the next only after this one's answer.
  port.on('message', (request: WorkerRequest) => {
    const embed = request.window === undefined ? {} : { window: request.window };
    encodedTexts(encoder, request.texts, request.role, embed).then(
      (encoded) => {
        const buffers = [
          encoded.pooled,
          encoded.tokenOffsets,
          encoded.tokenVectors,
          encoded.tokenIds,
          encoded.tokenPositions,
          encoded.truncated,
        ].map((a) => a.buffer as ArrayBuffer);
        say({ type: 'encoded', id: request.id, encoded }, buffers);
      },
      (error: unknown) =>
        say({
          type: 'error',
          id: request.id,
          message: (error as Error).message ?? String(error),
          ...(error instanceof ConfigError
            ? {
                config: error.suggestion === undefined ? {} : { suggestion: error.suggestion },
              }
            : {}),
        }),
    );
  });
  say({ type: 'ready', model: manifest.modelSha256, dim: manifest.dimension, vocab });
} catch (error) {
  say({ type: 'failed', message: (error as Error).message ?? String(error) });
}
