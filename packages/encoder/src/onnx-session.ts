import * as ort from 'onnxruntime-node';
import { ArtifactCorruptError, ConfigError } from '@bfe/core';

/** Execution providers bfe can ask onnxruntime-node for. */
export type ExecutionProvider = 'cpu' | 'webgpu';

export interface SessionOptions {
  readonly executionProvider?: ExecutionProvider;
  /** Intra-op threads (default: onnxruntime's choice, all cores). */
  readonly threads?: number;
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

  private constructor(session: ort.InferenceSession) {
    this.#session = session;
    this.inputNames = session.inputNames;
    this.#needsTypeIds = session.inputNames.includes('token_type_ids');
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
      session = await ort.InferenceSession.create(path, {
        executionProviders: [provider],
        graphOptimizationLevel: 'all',
        ...(options.threads === undefined ? {} : { intraOpNumThreads: options.threads }),
      });
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
    return new EncoderSession(session);
  }

  /**
   * Runs one padded batch. `ids` and `mask` are row-major `[batch * seq]`; returns the last
   * hidden states `[batch * seq * dim]` and `dim`.
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
    if (this.#needsTypeIds)
      feeds.token_type_ids = new ort.Tensor('int64', new BigInt64Array(batch * seq), dims);
    const out = await this.#session.run(feeds, ['last_hidden_state']);
    const tensor = out.last_hidden_state;
    if (tensor === undefined || tensor.type !== 'float32' || tensor.dims.length !== 3) {
      throw new ArtifactCorruptError(
        `last_hidden_state: expected float32 [batch, seq, dim], got ${tensor?.type ?? 'nothing'} [${tensor?.dims.join(', ') ?? ''}]`,
      );
    }
    const dim = Number(tensor.dims[2]);
    const states = tensor.data as Float32Array;
    return { states, dim };
  }

  async dispose(): Promise<void> {
    await this.#session.release();
  }
}
