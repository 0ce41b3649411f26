import type { InferenceSession } from 'onnxruntime-node';

/** How a session of one of bfe's in-memory graphs runs. */
export interface GraphSessionSettings {
  /** onnxruntime's execution provider (default `'cpu'`). */
  readonly executionProvider?: 'cpu' | 'webgpu';
  /** Intra-op threads; undefined: onnxruntime's default (one per physical core). */
  readonly threads?: number;
  /** false: intra-op threads sleep instead of spinning between runs (default: they spin). */
  readonly spin?: boolean;
}

/**
 * The one set of onnxruntime session options for bfe's in-memory graphs (the scorer's and the
 * store's similarity and codec kernels, the adapter's training kernel): all graph
 * optimisations, sequential execution (one inter-op thread: each graph is a short chain),
 * the given provider and intra-op threads. A plain object, so a worker thread can receive it.
 * The encoder's model graph has its own owner (`@bfe/encoder`'s `EncoderSession`).
 * @example
 * await ort.InferenceSession.create(bytes, graphSessionOptions({ threads: 1 }));
 */
export function graphSessionOptions(
  settings: GraphSessionSettings = {},
): InferenceSession.SessionOptions {
  const { executionProvider = 'cpu', threads, spin } = settings;
  return {
    executionProviders: [executionProvider],
    graphOptimizationLevel: 'all',
    executionMode: 'sequential',
    interOpNumThreads: 1,
    ...(threads === undefined ? {} : { intraOpNumThreads: threads }),
    ...(spin === false ? { extra: { session: { intra_op: { allow_spinning: '0' } } } } : {}),
  };
}
