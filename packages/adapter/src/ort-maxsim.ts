/**
 * The `onnxruntime` training kernel: the GEMM of MaxSim — every (adapted) query row against
 * every candidate token — runs as one float32 MatMul on onnxruntime's CPU provider (MLAS), and
 * {@link maxSimFromSimilarities} turns its output into the JavaScript kernel's exact MaxSim.
 * One session per training worker, one intra-op thread (the workers are the parallelism).
 *
 * onnxruntime-node refuses typed arrays over a `SharedArrayBuffer`, so each worker keeps
 * private float32 copies of the candidate sets it has used, least recently used first out
 * beyond {@link ORT_SET_CACHE_BYTES}.
 */
import type * as OrtModule from 'onnxruntime-node';
import type { InferenceSession, Tensor } from 'onnxruntime-node';
import {
  lossFromMaxSim,
  type AdapterGradients,
  type LossQuery,
  type MaxSimResult,
  type TokenSegments,
} from './loss.js';
import { maxSimBackwardBlocked, maxSimFromSimilarities, maxTokenNorm } from './maxsim-exact.js';
import { applyAdapterInto, createForwardCache, type AdapterParams } from './model.js';
import { similarityGraph } from './sim-graph.js';

/** Bytes of private candidate-set copies one worker keeps (least recently used evicted). */
export const ORT_SET_CACHE_BYTES = 512 * 1024 * 1024;

interface CachedSet {
  readonly tensor: Tensor;
  readonly tokens: number;
  readonly norm: number;
  readonly bytes: number;
}

type Ort = typeof OrtModule;

/** MaxSim through onnxruntime: one session, a cache of candidate sets. */
export class OrtMaxSim {
  readonly dim: number;
  readonly #ort: Ort;
  readonly #session: InferenceSession;
  readonly #sets = new Map<Float32Array, CachedSet>();
  readonly #budget: number;
  #bytes = 0;

  private constructor(ort: Ort, session: InferenceSession, dim: number, budget: number) {
    this.#ort = ort;
    this.#session = session;
    this.dim = dim;
    this.#budget = budget;
  }

  /** Candidate sets held, and their bytes (the newest one is kept even beyond the budget). */
  get cached(): { readonly sets: number; readonly bytes: number } {
    return { sets: this.#sets.size, bytes: this.#bytes };
  }

  /**
   * Loads onnxruntime-node (only now: the JavaScript kernel never loads it) and the graph;
   * `cacheBytes` bounds the private copies of candidate sets; `threads` is onnxruntime's
   * intra-op thread count (1 in training: the workers are the parallelism; the result does not
   * depend on it).
   */
  static async create(
    dim: number,
    cacheBytes = ORT_SET_CACHE_BYTES,
    threads = 1,
  ): Promise<OrtMaxSim> {
    const ort = await import('onnxruntime-node');
    const session = await ort.InferenceSession.create(similarityGraph(dim), {
      executionProviders: ['cpu'],
      graphOptimizationLevel: 'all',
      intraOpNumThreads: threads,
      interOpNumThreads: 1,
      executionMode: 'sequential',
    });
    return new OrtMaxSim(ort, session, dim, cacheBytes);
  }

  /**
   * MaxSim of `query [rows × dim]` (adapted, float64) against `segments`, equal bit for bit
   * to `maxSim(query, rows, dim, segments)`.
   */
  async maxSim(
    query: Float64Array,
    rows: number,
    segments: TokenSegments & { readonly tokenVectors: Float32Array },
  ): Promise<MaxSimResult> {
    const { dim } = this;
    const memories = segments.memoryOffsets.length - 1;
    const out: MaxSimResult = {
      rows,
      memories,
      scores: new Float64Array(memories),
      best: new Float64Array(rows * memories),
      argmax: new Int32Array(rows * memories),
    };
    const set = this.#set(segments.tokenVectors, segments.memoryOffsets[memories]!);
    let sims: Float32Array = new Float32Array(0);
    if (set.tokens > 0 && rows > 0) {
      const queryT = new Float32Array(dim * rows);
      for (let i = 0; i < rows; i++) {
        for (let k = 0; k < dim; k++) queryT[k * rows + i] = query[i * dim + k]!;
      }
      const feeds = {
        memory: set.tensor,
        queryT: new this.#ort.Tensor('float32', queryT, [dim, rows]),
      };
      const result = await this.#session.run(feeds);
      sims = result.scores!.data as Float32Array<ArrayBuffer>;
    }
    return maxSimFromSimilarities(out, sims, query, dim, segments, set.norm);
  }

  /** Releases the session and the cached copies. */
  async release(): Promise<void> {
    this.#sets.clear();
    this.#bytes = 0;
    await this.#session.release();
  }

  #set(tokenVectors: Float32Array, tokens: number): CachedSet {
    const hit = this.#sets.get(tokenVectors);
    if (hit !== undefined) {
      this.#sets.delete(tokenVectors); // re-insert: most recently used last
      this.#sets.set(tokenVectors, hit);
      return hit;
    }
    const { dim } = this;
    if (tokenVectors.length < tokens * dim) throw new Error('OrtMaxSim: token matrix too small');
    const copy = tokenVectors.slice(0, tokens * dim); // a private (not shared) buffer
    const entry: CachedSet = {
      tensor: new this.#ort.Tensor('float32', copy, [tokens, dim]),
      tokens,
      norm: maxTokenNorm(copy, tokens, dim),
      bytes: copy.byteLength,
    };
    for (const [key, old] of this.#sets) {
      if (this.#bytes + entry.bytes <= this.#budget) break;
      this.#sets.delete(key);
      this.#bytes -= old.bytes;
    }
    this.#sets.set(tokenVectors, entry);
    this.#bytes += entry.bytes;
    return entry;
  }
}

/**
 * {@link queryLoss} with MaxSim on `kernel`: the same adapter forward, cross-entropy and
 * backward, and the same result bit for bit.
 */
export async function queryLossOrt(
  kernel: OrtMaxSim,
  params: AdapterParams,
  query: LossQuery & { readonly candidates: { readonly tokenVectors: Float32Array } },
  temperature: number,
  grads?: AdapterGradients,
): Promise<number> {
  const { dim, rank } = params;
  const { tokens, rows } = query;
  const cache = createForwardCache(rows, dim, rank);
  const adapted = applyAdapterInto(new Float64Array(rows * dim), params, tokens, rows, cache);
  const result = await kernel.maxSim(adapted, rows, query.candidates);
  return lossFromMaxSim(params, query, cache, result, temperature, grads, maxSimBackwardBlocked);
}
