import protobuf from 'protobufjs/light.js';

/**
 * The subset of `onnx.proto` (field numbers as in onnx/onnx.proto, IR 8) that the scorer's
 * graphs need. Serialised with protobufjs in memory and handed to
 * `InferenceSession.create(bytes)`: no graph file on disk, no Python export step.
 */
const ONNX_SUBSET = {
  nested: {
    onnx: {
      nested: {
        ModelProto: {
          fields: {
            irVersion: { type: 'int64', id: 1 },
            opsetImport: { rule: 'repeated', type: 'OperatorSetIdProto', id: 8 },
            producerName: { type: 'string', id: 2 },
            producerVersion: { type: 'string', id: 3 },
            docString: { type: 'string', id: 6 },
            graph: { type: 'GraphProto', id: 7 },
          },
        },
        OperatorSetIdProto: {
          fields: { domain: { type: 'string', id: 1 }, version: { type: 'int64', id: 2 } },
        },
        GraphProto: {
          fields: {
            node: { rule: 'repeated', type: 'NodeProto', id: 1 },
            name: { type: 'string', id: 2 },
            initializer: { rule: 'repeated', type: 'TensorProto', id: 5 },
            input: { rule: 'repeated', type: 'ValueInfoProto', id: 11 },
            output: { rule: 'repeated', type: 'ValueInfoProto', id: 12 },
          },
        },
        NodeProto: {
          fields: {
            input: { rule: 'repeated', type: 'string', id: 1 },
            output: { rule: 'repeated', type: 'string', id: 2 },
            name: { type: 'string', id: 3 },
            opType: { type: 'string', id: 4 },
            attribute: { rule: 'repeated', type: 'AttributeProto', id: 5 },
            domain: { type: 'string', id: 7 },
          },
        },
        AttributeProto: {
          fields: {
            name: { type: 'string', id: 1 },
            type: { type: 'int32', id: 20 },
            f: { type: 'float', id: 2 },
            i: { type: 'int64', id: 3 },
            s: { type: 'bytes', id: 4 },
            ints: { rule: 'repeated', type: 'int64', id: 8 },
          },
        },
        TensorProto: {
          fields: {
            dims: { rule: 'repeated', type: 'int64', id: 1 },
            dataType: { type: 'int32', id: 2 },
            int64Data: { rule: 'repeated', type: 'int64', id: 7 },
            name: { type: 'string', id: 8 },
            rawData: { type: 'bytes', id: 9 },
          },
        },
        ValueInfoProto: {
          fields: { name: { type: 'string', id: 1 }, type: { type: 'TypeProto', id: 2 } },
        },
        TypeProto: { fields: { tensorType: { type: 'TypeProtoTensor', id: 1 } } },
        TypeProtoTensor: {
          fields: {
            elemType: { type: 'int32', id: 1 },
            shape: { type: 'TensorShapeProto', id: 2 },
          },
        },
        TensorShapeProto: { fields: { dim: { rule: 'repeated', type: 'Dimension', id: 1 } } },
        Dimension: {
          fields: { dimValue: { type: 'int64', id: 1 }, dimParam: { type: 'string', id: 2 } },
        },
      },
    },
  },
};

/** `TensorProto.DataType` values used here. */
const FLOAT = 1;
const INT8 = 3;
const INT32 = 6;
const INT64 = 7;
/** `AttributeProto.AttributeType` values used here. */
const ATTR_INT = 2;

let modelType: protobuf.Type | undefined;
/** The protobufjs type of `onnx.ModelProto` (the subset above). */
function modelProto(): protobuf.Type {
  modelType ??= protobuf.Root.fromJSON(ONNX_SUBSET).lookupType('onnx.ModelProto');
  return modelType;
}

/** A graph's `ModelProto` bytes: IR 8, the default domain at `opset`, produced by `@bfe/index`. */
export function encodeModel(
  opset: number,
  docString: string,
  graph: object,
  /** Operator sets beyond the default domain's (e.g. `com.microsoft`'s contrib operators). */
  domains: readonly { domain: string; version: number }[] = [],
): Uint8Array {
  const type = modelProto();
  const model = {
    irVersion: 8,
    opsetImport: [{ domain: '', version: opset }, ...domains],
    producerName: '@bfe/index',
    producerVersion: '0.1.0',
    docString,
    graph,
  };
  return type.encode(type.fromObject(model)).finish();
}

export type Dim = number | string;

/** A `ValueInfoProto`: a named tensor of `elemType` and `dims` (numbers or symbolic names). */
export function valueInfo(name: string, elemType: number, dims: readonly Dim[]): object {
  return {
    name,
    type: {
      tensorType: {
        elemType,
        shape: {
          dim: dims.map((d) => (typeof d === 'number' ? { dimValue: d } : { dimParam: d })),
        },
      },
    },
  };
}

/** An int attribute. */
export function intAttr(name: string, value: number): object {
  return { name, type: ATTR_INT, i: value };
}

/** Which outputs a similarity graph computes. */
export interface SimilarityGraphSpec {
  /** Vector dimension `d` (fixed in the graph, so a mismatched feed fails in onnxruntime too). */
  readonly dim: number;
  /** Emit `values [rows, k]` and `indices [rows, k]` (int32) of the per-row top-k. */
  readonly topK: boolean;
  /** Emit the full `scores [rows, n]`. */
  readonly scores: boolean;
  /**
   * Element type of `indices`: `'int32'` (default; a Cast after TopK) or `'int64'` (TopK's own
   * output, no Cast — onnxruntime's WebGPU provider has no int64→int32 Cast kernel, and a Cast
   * left on the CPU would split the graph across providers).
   */
  readonly indices?: 'int32' | 'int64';
  /**
   * A resident bank: `[n × dim]` floats stored in the graph as a constant (an initializer)
   * instead of a `bank` input, so onnxruntime pre-packs it for its GEMM once, at session
   * creation, rather than on every call. For a fixed bank searched many times.
   */
  readonly residentBank?: { readonly data: Float32Array; readonly n: number };
}

/** Largest resident bank, in bytes: a serialised ONNX model must stay under 2 GiB. */
export const MAX_RESIDENT_BANK_BYTES = 1.5 * 2 ** 30;

/** Input and output names of every similarity graph. */
export const GRAPH_NAMES = {
  queries: 'queries',
  bank: 'bank',
  k: 'k',
  scores: 'scores',
  values: 'values',
  indices: 'indices',
  checksum: 'checksum',
} as const;

/**
 * Serialises the similarity graph of METHOD.md §2 as an ONNX `ModelProto` (IR 8, opset 17):
 *
 * ```
 * queries [rows, d], bank [n, d]
 *   scores   = Gemm(queries, bank, transB=1)        [rows, n]   (inner products)
 *   values, i64 = TopK(scores, k, axis=1, largest=1, sorted=1)   [rows, k]
 *   indices  = Cast(i64, to=int32)                   [rows, k]   (or i64 itself: `indices`)
 *   checksum = ReduceSum(scores, keepdims=0)         []          (non-finite iff some score is)
 * ```
 *
 * `k` is an int64 `[1]` input, so one session serves the short last chunk of a bank too.
 * The checksum costs one pass over `scores` (d times cheaper than the product) and lets the
 * caller refuse NaN/Inf vectors without scanning the bank in JavaScript.
 *
 * @example
 * const bytes = similarityGraph({ dim: 384, topK: true, scores: false }); // Uint8Array
 * // await ort.InferenceSession.create(bytes)
 */
export function similarityGraph(spec: SimilarityGraphSpec): Uint8Array {
  const { dim } = spec;
  if (!Number.isInteger(dim) || dim <= 0) throw new Error(`similarityGraph: bad dim ${dim}`);
  if (!spec.topK && !spec.scores) throw new Error('similarityGraph: asks for no output');
  const n = GRAPH_NAMES;
  const node: object[] = [
    {
      name: 'similarity',
      opType: 'Gemm',
      input: [n.queries, n.bank],
      output: [n.scores],
      attribute: [intAttr('transB', 1)],
    },
    {
      name: 'finite_check',
      opType: 'ReduceSum',
      input: [n.scores],
      output: [n.checksum],
      attribute: [intAttr('keepdims', 0)],
    },
  ];
  const resident = spec.residentBank;
  const initializer: object[] = [];
  const input = [valueInfo(n.queries, FLOAT, ['rows', dim])];
  if (resident === undefined) {
    input.push(valueInfo(n.bank, FLOAT, ['n', dim]));
  } else {
    const { data, n: rows } = resident;
    if (!Number.isInteger(rows) || rows <= 0 || data.length !== rows * dim) {
      throw new Error(
        `similarityGraph: resident bank holds ${data.length} floats, not ${rows} × ${dim}`,
      );
    }
    if (data.byteLength > MAX_RESIDENT_BANK_BYTES) {
      throw new Error(
        `similarityGraph: a resident bank of ${data.byteLength} bytes exceeds ${MAX_RESIDENT_BANK_BYTES} (ONNX's 2 GiB model limit); stream it instead`,
      );
    }
    initializer.push({
      name: n.bank,
      dims: [rows, dim],
      dataType: FLOAT,
      // Little-endian float32, as ONNX's raw_data requires (every platform Node runs on here).
      rawData: new Uint8Array(data.buffer, data.byteOffset, data.byteLength),
    });
  }
  const output = [valueInfo(n.checksum, FLOAT, [])];
  if (spec.scores) output.push(valueInfo(n.scores, FLOAT, ['rows', 'n']));
  if (spec.topK) {
    const int64 = spec.indices === 'int64';
    input.push(valueInfo(n.k, INT64, [1]));
    node.push(...topKNodes(spec.indices));
    output.push(valueInfo(n.values, FLOAT, ['rows', 'k_out']));
    output.push(valueInfo(n.indices, int64 ? INT64 : INT32, ['rows', 'k_out']));
  }
  return encodeModel(
    17,
    'bfe exact sparse scorer: inner products and per-row top-k (METHOD.md §2)',
    { name: 'bfe_similarity', node, initializer, input, output },
  );
}

/**
 * The nodes of `values, indices = TopK(scores, k)` per row (largest first, sorted; equal scores
 * in ascending index order), `indices` Cast to int32 unless `'int64'` is asked for.
 */
export function topKNodes(indices: 'int32' | 'int64' = 'int32'): object[] {
  const n = GRAPH_NAMES;
  const int64 = indices === 'int64';
  const topK = {
    name: 'top_k',
    opType: 'TopK',
    input: [n.scores, n.k],
    output: [n.values, int64 ? n.indices : 'indices_i64'],
    attribute: [intAttr('axis', 1), intAttr('largest', 1), intAttr('sorted', 1)],
  };
  const attribute = [intAttr('to', INT32)];
  const cast = { name: 'indices_to_int32', opType: 'Cast', input: ['indices_i64'], attribute };
  return int64 ? [topK] : [topK, { ...cast, output: [n.indices] }];
}

/** Input and output names of {@link tokenSimilarityGraph}. */
export const TOKEN_GRAPH_NAMES = { memory: 'memory', queryT: 'queryT', scores: 'scores' } as const;

/**
 * `ModelProto` bytes of `scores [tokens, rows] = MatMul(memory [tokens, dim], queryT [dim,
 * rows])`: every candidate token's similarity with every query row, token-major — the query
 * adapter's training kernel (`@bfe/adapter`'s `OrtMaxSim`), whose exact float64 maxima read
 * the scores column by column.
 * @example
 * const bytes = tokenSimilarityGraph(384); // await ort.InferenceSession.create(bytes)
 */
export function tokenSimilarityGraph(dim: number): Uint8Array {
  if (!Number.isInteger(dim) || dim <= 0) throw new Error(`tokenSimilarityGraph: bad dim ${dim}`);
  const n = TOKEN_GRAPH_NAMES;
  return encodeModel(17, `adapter MaxSim similarities, float32, dim ${dim}`, {
    name: 'adapter_similarity',
    node: [{ input: [n.memory, n.queryT], output: [n.scores], name: 'sim', opType: 'MatMul' }],
    input: [valueInfo(n.memory, FLOAT, ['tokens', dim]), valueInfo(n.queryT, FLOAT, [dim, 'rows'])],
    output: [valueInfo(n.scores, FLOAT, ['tokens', 'rows'])],
  });
}

/** A bank quantised for {@link int8ScoresGraph}: `[dim × n]` int8 (transposed), one scale a row. */
export interface Int8Bank {
  readonly weights: Int8Array;
  readonly scales: Float32Array;
  readonly n: number;
  readonly dim: number;
}

/**
 * The largest int8 magnitude {@link quantizeBank} writes: 63 (7 bits), so that a uint8 × int8
 * pair summed in 16 bits (`vpmaddubsw`, the product of onnxruntime's AVX2 kernels without VNNI)
 * never saturates (255 · 63 · 2 < 32,767): every CPU gets the same integer sums.
 */
export const INT8_BANK_LEVELS = 63;

/**
 * `bank [n × dim]` row by row to int8: row `i` scaled by `levels / max|row i|` and rounded (half
 * away from zero), stored transposed (`[dim × n]`, a GEMM's B) with its dequantising scale.
 */
export function quantizeBank(
  bank: Float32Array,
  n: number,
  dim: number,
  levels = INT8_BANK_LEVELS,
): Int8Bank {
  const weights = new Int8Array(dim * n);
  const scales = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    let max = 0;
    for (let j = 0; j < dim; j++) max = Math.max(max, Math.abs(bank[i * dim + j]!));
    if (!Number.isFinite(max)) throw new RangeError(`quantizeBank: row ${i} is not finite`);
    const up = max === 0 ? 0 : levels / max;
    scales[i] = max === 0 ? 1 : max / levels;
    for (let j = 0; j < dim; j++) {
      const v = bank[i * dim + j]! * up;
      weights[j * n + i] = Math.sign(v) * Math.round(Math.abs(v));
    }
  }
  return { weights, scales, n, dim };
}

/**
 * `ModelProto` bytes of `scores [rows, n] = DynamicQuantizeMatMul(queries, bank)`
 * (onnxruntime's `com.microsoft` contrib operator): the query rows quantised to uint8 at each
 * call (one scale and zero point for the batch), the constant int8 bank's integer products summed
 * in int32 and scaled back to float32: faster than the float32 product (BENCHMARKS.md, "Clustered
 * residual codes"); its scores are approximate (the clustered index's probe order).
 */
export function int8ScoresGraph(bank: Int8Bank): Uint8Array {
  const { n, dim } = bank;
  const g = GRAPH_NAMES;
  return encodeModel(
    17,
    `bfe int8 constant scores: ${n} rows × ${dim}`,
    {
      name: 'bfe_int8_scores',
      node: [
        {
          name: 'scores',
          opType: 'DynamicQuantizeMatMul',
          domain: 'com.microsoft',
          input: [g.queries, g.bank, 'scales'],
          output: [g.scores],
        },
        {
          // Non-finite iff a query value is (the int8 product of a NaN would not show it).
          name: 'finite_check',
          opType: 'ReduceSum',
          input: [g.queries],
          output: [g.checksum],
          attribute: [intAttr('keepdims', 0)],
        },
      ],
      initializer: int8BankInitializers(bank),
      input: [valueInfo(g.queries, FLOAT, ['rows', dim])],
      output: [valueInfo(g.checksum, FLOAT, []), valueInfo(g.scores, FLOAT, ['rows', n])],
    },
    [{ domain: 'com.microsoft', version: 1 }],
  );
}

/** An int8 bank's constants: `bank [dim, n]` (int8, a GEMM's B) and its `scales [n]`. */
export function int8BankInitializers(bank: Int8Bank): object[] {
  const { weights, scales, n, dim } = bank;
  return [
    {
      name: GRAPH_NAMES.bank,
      dims: [dim, n],
      dataType: INT8,
      rawData: new Uint8Array(weights.buffer, weights.byteOffset, weights.byteLength),
    },
    {
      name: 'scales',
      dims: [n],
      dataType: FLOAT,
      rawData: new Uint8Array(scales.buffer, scales.byteOffset, scales.byteLength),
    },
  ];
}
