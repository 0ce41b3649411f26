import * as ort from 'onnxruntime-node';
import { ArtifactCorruptError, ConfigError } from '@bfe/core';

/** Execution providers bfe can ask onnxruntime-node for. */
export type ExecutionProvider = 'cpu' | 'webgpu';

/** onnxruntime's graph optimisation levels. */
export type GraphOptimizationLevel = 'disabled' | 'basic' | 'extended' | 'all';

export interface SessionOptions {
  readonly executionProvider?: ExecutionProvider;
  /** Intra-op threads (default: onnxruntime's choice, all cores). */
  readonly threads?: number;
  /**
   * Inter-op threads; above 1 the session runs independent graph nodes in parallel
   * (onnxruntime's `executionMode: 'parallel'`). Default: sequential execution.
   */
  readonly interOpThreads?: number;
  /** Graph optimisation level (default `'all'`). */
  readonly graphOptimizationLevel?: GraphOptimizationLevel;
  /** Where onnxruntime writes the graph as optimised at open (for reuse; default none). */
  readonly optimizedModelPath?: string;
  /**
   * Whether idle intra-op threads spin-wait for work (onnxruntime's
   * `session.intra_op.allow_spinning`). Default false: on this 2-core machine, shared, spinning
   * cost 1.4× the wall time and CPU of the pass (BENCHMARKS.md); outputs are the same bits.
   */
  readonly spinning?: boolean;
  /**
   * Reuse one output buffer across batches, handed to onnxruntime as a preallocated
   * `last_hidden_state` (and one zero `token_type_ids` buffer): {@link EncoderSession.run} then
   * returns a view that the next run overwrites. Default false.
   */
  readonly preallocate?: boolean;
}

/**
 * A token encoder session: the one place that imports onnxruntime-node. It checks the graph
 * once (inputs it can feed, a `last_hidden_state` output) and runs batches in eval mode — an
 * ONNX inference session computes no gradients.
 */
export class EncoderSession {
  readonly inputNames: readonly string[];
  readonly #session: ort.InferenceSession;
  readonly #needsTypeIds: boolean;
  readonly #preallocate: boolean;
  /** Hidden size, known after the first run (a preallocated output needs it). */
  #dim = 0;
  #out = new Float32Array(0);
  #typeIds = new BigInt64Array(0);

  private constructor(session: ort.InferenceSession, preallocate: boolean) {
    this.#session = session;
    this.inputNames = session.inputNames;
    this.#needsTypeIds = session.inputNames.includes('token_type_ids');
    this.#preallocate = preallocate;
  }

  /**
   * Opens an ONNX encoder graph.
   * @throws {ArtifactCorruptError} when the file is not a loadable graph or lacks the inputs
   *   `input_ids`/`attention_mask` or the output `last_hidden_state`.
   */
  static async open(path: string, options: SessionOptions = {}): Promise<EncoderSession> {
    const provider = options.executionProvider ?? 'cpu';
    if (provider !== 'cpu' && provider !== 'webgpu') {
      throw new ConfigError(`unknown execution provider '${String(provider)}' (cpu or webgpu)`);
    }
    let session: ort.InferenceSession;
    try {
      session = await ort.InferenceSession.create(path, sessionOptions(provider, options));
    } catch (cause) {
      throw new ArtifactCorruptError(
        `${path}: onnxruntime could not load the graph (${(cause as Error).message})`,
        {
          cause,
        },
      );
    }
    const missing = ['input_ids', 'attention_mask'].filter((n) => !session.inputNames.includes(n));
    const extra = session.inputNames.filter(
      (n) => !['input_ids', 'attention_mask', 'token_type_ids'].includes(n),
    );
    if (
      missing.length > 0 ||
      extra.length > 0 ||
      !session.outputNames.includes('last_hidden_state')
    ) {
      const found = `inputs [${session.inputNames.join(', ')}], outputs [${session.outputNames.join(', ')}]`;
      await session.release();
      throw new ArtifactCorruptError(
        `${path}: not a token encoder graph: needs inputs input_ids, attention_mask (token_type_ids optional) and output last_hidden_state; found ${found}`,
        {
          suggestion:
            'Export the model with its last_hidden_state output (tools/model/export_onnx.py).',
        },
      );
    }
    return new EncoderSession(session, options.preallocate ?? false);
  }

  /**
   * Runs one padded batch. `ids` and `mask` are row-major `[batch * seq]`; returns the last
   * hidden states `[batch * seq * dim]` and `dim`. With `preallocate` the states
   * are a view of a buffer the next run overwrites: read them before running again.
   */
  async run(
    ids: BigInt64Array,
    mask: BigInt64Array,
    batch: number,
    seq: number,
  ): Promise<{ states: Float32Array; dim: number }> {
    if (ids.length !== batch * seq || mask.length !== batch * seq) {
      throw new Error(
        `EncoderSession.run: ids ${ids.length} / mask ${mask.length} do not match batch ${batch} × seq ${seq}`,
      );
    }
    const dims = [batch, seq];
    const feeds: Record<string, ort.Tensor> = {
      input_ids: new ort.Tensor('int64', ids, dims),
      attention_mask: new ort.Tensor('int64', mask, dims),
    };
    const n = batch * seq;
    if (this.#needsTypeIds) {
      if (this.#preallocate && this.#typeIds.length < n) this.#typeIds = new BigInt64Array(n);
      const zeros = this.#preallocate ? this.#typeIds.subarray(0, n) : new BigInt64Array(n);
      feeds.token_type_ids = new ort.Tensor('int64', zeros, dims);
    }
    if (this.#preallocate && this.#dim > 0) {
      const size = n * this.#dim;
      if (this.#out.length < size) this.#out = new Float32Array(size);
      const states = this.#out.subarray(0, size);
      await this.#session.run(feeds, {
        last_hidden_state: new ort.Tensor('float32', states, [batch, seq, this.#dim]),
      });
      return { states, dim: this.#dim };
    }
    const out = await this.#session.run(feeds, ['last_hidden_state']);
    const tensor = out.last_hidden_state;
    if (tensor === undefined || tensor.type !== 'float32' || tensor.dims.length !== 3) {
      throw new ArtifactCorruptError(
        `last_hidden_state: expected float32 [batch, seq, dim], got ${tensor?.type ?? 'nothing'} [${tensor?.dims.join(', ') ?? ''}]`,
      );
    }
    const dim = Number(tensor.dims[2]);
    const states = tensor.data as Float32Array;
    this.#dim = dim;
    return { states, dim };
  }

  async dispose(): Promise<void> {
    await this.#session.release();
  }
}

/** onnxruntime's session options for {@link SessionOptions}. (Package-internal; tested.) */
export function sessionOptions(
  provider: ExecutionProvider,
  options: SessionOptions,
): ort.InferenceSession.SessionOptions {
  const inter = options.interOpThreads;
  return {
    executionProviders: [provider],
    graphOptimizationLevel: options.graphOptimizationLevel ?? 'all',
    ...(options.threads === undefined ? {} : { intraOpNumThreads: options.threads }),
    ...(inter === undefined ? {} : { interOpNumThreads: inter }),
    ...(inter !== undefined && inter > 1 ? { executionMode: 'parallel' as const } : {}),
    ...(options.optimizedModelPath === undefined
      ? {}
      : { optimizedModelFilePath: options.optimizedModelPath }),
    extra: { session: { intra_op: { allow_spinning: (options.spinning ?? false) ? '1' : '0' } } },
  };
}
