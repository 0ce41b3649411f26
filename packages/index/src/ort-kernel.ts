import * as ort from 'onnxruntime-node';
import { codecSimilarityGraph, CODEC_GRAPH_NAMES, type CodeElement } from './codec-graph.js';
import { graphSessionOptions } from './graph-session.js';
import { int8TopK, int8TopKGraph } from './int8-top-k.js';
import { describeFeeds, tensorData } from './ort-outputs.js';
import {
  GRAPH_NAMES,
  int8ScoresGraph,
  quantizeBank,
  similarityGraph,
  type SimilarityGraphSpec,
} from './onnx-graph.js';
import {
  NonFiniteScoresError,
  checkKernelShapes,
  type ChunkTopK,
  type ConstantScores,
  type ScorePrecision,
  type SimilarityKernel,
} from './kernel.js';

/** Options of the onnxruntime kernel. */
export interface OrtKernelOptions {
  /** Intra-op threads (default: onnxruntime's choice, one per physical core). */
  readonly threads?: number;
  /**
   * Let idle intra-op threads spin between runs (onnxruntime's default, `true`). Spinning
   * threads compete with the JavaScript merge on a machine with few cores.
   */
  readonly spin?: boolean;
  /**
   * `'cpu'` (default) or `'webgpu'`: onnxruntime's WebGPU execution provider, every node of
   * the graph placed on it (Gemm, TopK, ReduceSum; indices stay int64 because the provider has
   * no int64→int32 Cast). On machines without a GPU it runs on Mesa's lavapipe.
   */
  readonly executionProvider?: ExecutionProvider;
}

/** Where the kernel's graphs run. */
export type ExecutionProvider = 'cpu' | 'webgpu';

type Variant = 'topK' | 'scores' | 'both';

/**
 * The onnxruntime-node kernel — the scorer's onnxruntime. Its graphs are built
 * in memory by {@link similarityGraph} (Gemm with `transB`, TopK, Cast, ReduceSum), one session
 * per dimension and output set, created on first use and released by {@link dispose}.
 * onnxruntime's TopK returns equal scores in ascending index order (ONNX TopK-11 semantics;
 * tested), which is the scorer's tie rule.
 *
 * @example
 * const kernel = new OrtSimilarityKernel({ threads: 2 });
 * const top = await kernel.topK(q, 20, x, 65_536, 384, 64); // q [20*384], x [65536*384]
 * top.values;  // Float32Array [20 * 64], rows sorted by score descending
 * top.indices; // Int32Array  [20 * 64], 0..65535
 * await kernel.dispose();
 */
export class OrtSimilarityKernel implements SimilarityKernel {
  /** `'onnxruntime'` on the CPU, `'onnxruntime-webgpu'` on the WebGPU provider. */
  readonly name: string;
  readonly executionProvider: ExecutionProvider;
  readonly #options: OrtKernelOptions;
  readonly #sessions = new Map<string, Promise<ort.InferenceSession>>();
  #resident:
    | {
        bank: Float32Array;
        n: number;
        dim: number;
        session: ort.InferenceSession;
        precision: ScorePrecision;
      }
    | undefined;
  #residentHits = 0;
  #disposed = false;

  /** Calls served by the resident bank so far (see {@link makeResident}). */
  get residentHits(): number {
    return this.#residentHits;
  }

  constructor(options: OrtKernelOptions = {}) {
    const t = options.threads;
    if (t !== undefined && (!Number.isInteger(t) || t < 1)) {
      throw new Error(`OrtSimilarityKernel: threads must be a positive integer, got ${t}`);
    }
    const ep = options.executionProvider ?? 'cpu';
    if (ep !== 'cpu' && ep !== 'webgpu') {
      throw new Error(`OrtSimilarityKernel: unknown execution provider '${String(ep)}'`);
    }
    this.executionProvider = ep;
    this.name = ep === 'cpu' ? 'onnxruntime' : 'onnxruntime-webgpu';
    this.#options = options;
  }

  /**
   * Makes `bank [n × dim]` resident: a session holding it as a constant, which onnxruntime
   * pre-packs for its GEMM once, here, instead of on every call. Later {@link topK} calls on
   * exactly this memory (same buffer, offset and length — e.g. `exactTopK` over a bank that
   * fits one chunk) skip the `bank` feed and the packing; other banks take the ordinary path.
   * The bank must not change while resident. Replaces any previous resident bank. For a fixed
   * memory store searched by one query at a time (METHOD.md §2's exact search, unchanged).
   * `'int8'` (CPU only): the bank held as int8 and each query row quantised on its own
   * (int8-top-k.ts); the top-k is then the integer product's, marked `approximate`, for the
   * caller to rescore with a margin.
   *
   * @example
   * await kernel.makeResident(x, 50_000, 384);
   * await exactTopK(kernel, q, 20, flatBankSource(x, 384), { k: 64 }); // bank packed once
   */
  async makeResident(
    bank: Float32Array,
    n: number,
    dim: number,
    precision: ScorePrecision = 'fp32',
  ): Promise<void> {
    if (this.#disposed) throw new Error('OrtSimilarityKernel: used after dispose()');
    checkKernelShapes(new Float32Array(dim), 1, bank, n, dim);
    if (precision === 'int8' && this.executionProvider !== 'cpu') {
      throw new Error('OrtSimilarityKernel: an int8 resident bank runs on the CPU provider only');
    }
    await this.releaseResident();
    const session = await this.#bankSession(bank, n, dim, precision, 'topK');
    this.#resident = { bank, n, dim, session, precision };
  }

  /** Releases the resident bank's session, if any. */
  async releaseResident(): Promise<void> {
    const resident = this.#resident;
    this.#resident = undefined;
    if (resident !== undefined) await resident.session.release();
  }

  async topK(
    queries: Float32Array,
    rows: number,
    bank: Float32Array,
    n: number,
    dim: number,
    k: number,
    withScores = false,
  ): Promise<ChunkTopK> {
    checkKernelShapes(queries, rows, bank, n, dim);
    if (!Number.isInteger(k) || k <= 0) throw new Error(`kernel: k must be > 0, got ${k}`);
    const kOut = Math.min(k, n);
    const resident = this.#resident;
    const isResident =
      !withScores &&
      resident !== undefined &&
      resident.n === n &&
      resident.dim === dim &&
      resident.bank.buffer === bank.buffer &&
      resident.bank.byteOffset === bank.byteOffset &&
      resident.bank.length === bank.length;
    if (isResident && resident.precision === 'int8') {
      this.#residentHits += 1;
      return int8TopK(
        (feeds) => this.#runSession(resident.session, feeds),
        queries,
        rows,
        dim,
        kOut,
      );
    }
    const feeds: Record<string, ort.Tensor> = {
      [GRAPH_NAMES.queries]: new ort.Tensor('float32', queries, [rows, dim]),
      // A fresh buffer per call: onnxruntime reads feeds when the run starts, on its own thread.
      [GRAPH_NAMES.k]: new ort.Tensor('int64', BigInt64Array.of(BigInt(kOut)), [1]),
    };
    if (isResident) this.#residentHits += 1;
    else feeds[GRAPH_NAMES.bank] = new ort.Tensor('float32', bank, [n, dim]);
    const out = isResident
      ? await this.#runSession(resident.session, feeds)
      : await this.#run(withScores ? 'both' : 'topK', dim, feeds);
    const values = tensorData(out, GRAPH_NAMES.values, 'float32', rows * kOut) as Float32Array;
    const indices =
      this.executionProvider === 'webgpu'
        ? Int32Array.from(
            tensorData(out, GRAPH_NAMES.indices, 'int64', rows * kOut) as BigInt64Array,
            Number,
          )
        : (tensorData(out, GRAPH_NAMES.indices, 'int32', rows * kOut) as Int32Array);
    const scores = withScores
      ? (tensorData(out, GRAPH_NAMES.scores, 'float32', rows * n) as Float32Array)
      : undefined;
    return { kOut, values, indices, scores };
  }

  /**
   * Top-k over one chunk of stored codes `[n × width]` ({@link codecSimilarityGraph}): the
   * codes are cast to float in the graph and multiplied by `queries [rows × d]` (already
   * transformed by the caller: `q ⊙ step` in the graph's column order), plus `bias [rows]`.
   * CPU provider only.
   * @throws {NonFiniteScoresError} when any score is NaN or ±Inf.
   */
  async codecTopK(
    element: CodeElement,
    width: number,
    queries: Float32Array,
    bias: Float32Array,
    rows: number,
    codes: Float32Array | Uint16Array | Uint8Array,
    n: number,
    k: number,
    withScores = false,
  ): Promise<ChunkTopK> {
    if (this.executionProvider !== 'cpu') {
      throw new Error('OrtSimilarityKernel: codec graphs run on the CPU provider only');
    }
    const d = element === 'nibbles' ? 2 * width : width;
    if (queries.length !== rows * d || bias.length !== rows || codes.length !== n * width) {
      throw new Error(
        `OrtSimilarityKernel: codec feeds of ${queries.length}/${bias.length}/${codes.length} values do not fit ${rows} rows × ${d}, ${n} tokens × ${width}`,
      );
    }
    if (!Number.isInteger(k) || k <= 0) throw new Error(`kernel: k must be > 0, got ${k}`);
    const kOut = Math.min(k, n);
    const type = element === 'float' ? 'float32' : element === 'float16' ? 'float16' : 'uint8';
    const key = `codec:${element}:${width}:${withScores}`;
    let session = this.#sessions.get(key);
    if (session === undefined) {
      if (this.#disposed) throw new Error('OrtSimilarityKernel: used after dispose()');
      session = this.#createFromBytes(codecSimilarityGraph({ element, width, scores: withScores }));
      this.#sessions.set(key, session);
    }
    const out = await this.#runSession(await session, {
      [GRAPH_NAMES.queries]: new ort.Tensor('float32', queries, [rows, d]),
      [CODEC_GRAPH_NAMES.bias]: new ort.Tensor('float32', bias, [rows, 1]),
      [CODEC_GRAPH_NAMES.codes]: new ort.Tensor(type, codes, [n, width]),
      [GRAPH_NAMES.k]: new ort.Tensor('int64', BigInt64Array.of(BigInt(kOut)), [1]),
    });
    const values = tensorData(out, GRAPH_NAMES.values, 'float32', rows * kOut) as Float32Array;
    const indices = tensorData(out, GRAPH_NAMES.indices, 'int32', rows * kOut) as Int32Array;
    const scores = withScores
      ? (tensorData(out, GRAPH_NAMES.scores, 'float32', rows * n) as Float32Array)
      : undefined;
    return { kOut, values, indices, scores };
  }

  async scores(
    queries: Float32Array,
    rows: number,
    bank: Float32Array,
    n: number,
    dim: number,
  ): Promise<Float32Array> {
    checkKernelShapes(queries, rows, bank, n, dim);
    const out = await this.#run('scores', dim, {
      [GRAPH_NAMES.queries]: new ort.Tensor('float32', queries, [rows, dim]),
      [GRAPH_NAMES.bank]: new ort.Tensor('float32', bank, [n, dim]),
    });
    return tensorData(out, GRAPH_NAMES.scores, 'float32', rows * n) as Float32Array;
  }

  /**
   * A scorer of `bank` as a constant of its own session (pre-packed once, as {@link
   * makeResident} does for top-k; independent of the resident bank): e.g. the clustered
   * index's centroids, scored by every search.
   */
  async constantScores(
    bank: Float32Array,
    n: number,
    dim: number,
    precision: ScorePrecision = 'fp32',
  ): Promise<ConstantScores> {
    if (this.#disposed) throw new Error('OrtSimilarityKernel: used after dispose()');
    checkKernelShapes(new Float32Array(dim), 1, bank, n, dim);
    const session = await this.#bankSession(bank, n, dim, precision, 'scores');
    let live = true;
    return {
      scores: async (queries, rows) => {
        if (!live) throw new Error('OrtSimilarityKernel: constant scores used after release()');
        checkKernelShapes(queries, rows, bank, n, dim);
        const out = await this.#runSession(session, {
          [GRAPH_NAMES.queries]: new ort.Tensor('float32', queries, [rows, dim]),
        });
        return tensorData(out, GRAPH_NAMES.scores, 'float32', rows * n) as Float32Array;
      },
      release: async () => {
        if (!live) return;
        live = false;
        await session.release();
      },
    };
  }

  async dispose(): Promise<void> {
    this.#disposed = true;
    await this.releaseResident();
    const sessions = [...this.#sessions.values()];
    this.#sessions.clear();
    for (const s of sessions) await (await s).release();
  }

  async #run(
    variant: Variant,
    dim: number,
    feeds: Record<string, ort.Tensor>,
  ): Promise<ort.InferenceSession.ReturnType> {
    return this.#runSession(await this.#session(variant, dim), feeds);
  }

  async #runSession(
    session: ort.InferenceSession,
    feeds: Record<string, ort.Tensor>,
  ): Promise<ort.InferenceSession.ReturnType> {
    const names = Object.keys(feeds);
    if (
      names.length !== session.inputNames.length ||
      !session.inputNames.every((n) => names.includes(n))
    ) {
      throw new Error(
        `OrtSimilarityKernel: feeds [${describeFeeds(feeds)}] do not match the graph's inputs [${session.inputNames.join(', ')}]`,
      );
    }
    let out: ort.InferenceSession.ReturnType;
    try {
      out = await session.run(feeds);
    } catch (cause) {
      throw new Error(
        `OrtSimilarityKernel: onnxruntime failed on feeds [${describeFeeds(feeds)}]: ${(cause as Error).message}`,
        { cause },
      );
    }
    const checksum = out[GRAPH_NAMES.checksum]?.data as Float32Array | undefined;
    if (checksum === undefined || !Number.isFinite(checksum[0]!)) throw new NonFiniteScoresError();
    return out;
  }

  #session(variant: Variant, dim: number): Promise<ort.InferenceSession> {
    if (this.#disposed) throw new Error('OrtSimilarityKernel: used after dispose()');
    const key = `${variant}:${dim}`;
    let session = this.#sessions.get(key);
    if (session === undefined) {
      session = this.#createSession({
        dim,
        topK: variant !== 'scores',
        scores: variant !== 'topK',
      });
      this.#sessions.set(key, session);
    }
    return session;
  }

  /** A session holding `bank` as a constant: its top-k or its scores, float32 or int8. */
  #bankSession(
    bank: Float32Array,
    n: number,
    dim: number,
    precision: ScorePrecision,
    output: 'topK' | 'scores',
  ): Promise<ort.InferenceSession> {
    if (precision === 'int8') {
      const int8 = quantizeBank(bank, n, dim);
      return this.#createFromBytes(output === 'topK' ? int8TopKGraph(int8) : int8ScoresGraph(int8));
    }
    const topK = output === 'topK';
    return this.#createSession({ dim, topK, scores: !topK, residentBank: { data: bank, n } });
  }

  /**
   * A session of {@link similarityGraph} on this kernel's provider and threads; on WebGPU the
   * indices stay int64 (the provider has no int64→int32 Cast).
   */
  #createSession(spec: Omit<SimilarityGraphSpec, 'indices'>): Promise<ort.InferenceSession> {
    const indices = this.executionProvider === 'webgpu' ? 'int64' : 'int32';
    return this.#createFromBytes(similarityGraph({ ...spec, indices }));
  }

  #createFromBytes(graph: Uint8Array): Promise<ort.InferenceSession> {
    const { threads, spin } = this.#options;
    return ort.InferenceSession.create(
      graph,
      graphSessionOptions({
        executionProvider: this.executionProvider,
        ...(threads === undefined ? {} : { threads }),
        ...(spin === undefined ? {} : { spin }),
      }),
    );
  }
}
