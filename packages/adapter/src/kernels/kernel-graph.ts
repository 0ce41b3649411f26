import { graphSessionOptions, tokenSimilarityGraph } from '@bfe/index';
import type { InferenceSession } from 'onnxruntime-node';

/**
 * The onnxruntime training kernel's graph and session options, from `@bfe/index` — the one
 * writer of bfe's in-memory ONNX graphs and the one owner of their session options. Built on
 * the thread that starts training and handed to each worker in its `workerData` (plain bytes
 * and a plain object), so the worker's modules import nothing from other workspace packages.
 */
export interface KernelGraph {
  /** `scores [tokens, rows] = MatMul(memory [tokens, dim], queryT [dim, rows])`. */
  readonly bytes: Uint8Array;
  readonly options: InferenceSession.SessionOptions;
}

/**
 * {@link KernelGraph} for vectors of `dim` on the CPU provider with `threads` intra-op
 * threads (1 in training: the workers are the parallelism; the result does not depend on it).
 * @example
 * const kernel = await OrtMaxSim.create(kernelGraph(384), 384);
 */
export function kernelGraph(dim: number, threads = 1): KernelGraph {
  return { bytes: tokenSimilarityGraph(dim), options: graphSessionOptions({ threads }) };
}
