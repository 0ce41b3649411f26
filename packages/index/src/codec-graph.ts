import { GRAPH_NAMES, encodeModel, intAttr, topKNodes, valueInfo } from './onnx-graph.js';

/** `TensorProto.DataType` values used here. */
const FLOAT = 1;
const UINT8 = 2;
const INT32 = 6;
const INT64 = 7;
const FLOAT16 = 10;
/** `AttributeProto.AttributeType.STRING`. */
const ATTR_STRING = 3;

/**
 * How a codec's stored codes enter the graph: `float` (fp32 codes as they are), `float16`
 * (fp16 bits, Cast to float), `uint8` (one SQ8 level per dim, Cast to float), `nibbles` (two
 * SQ4 levels per byte, even dim in the low nibble: unpacked in the graph into all low nibbles
 * then all high nibbles, so the query's columns come in that order).
 */
export type CodeElement = 'float' | 'float16' | 'uint8' | 'nibbles';

/** Which codec graph to build. */
export interface CodecGraphSpec {
  readonly element: CodeElement;
  /** Code bytes/elements per token as stored (`nibbles`: dims / 2). */
  readonly width: number;
  /** Also emit the full `scores [rows, n]`. */
  readonly scores: boolean;
}

/** Input names of a codec graph (outputs as {@link GRAPH_NAMES}). */
export const CODEC_GRAPH_NAMES = { codes: 'codes', bias: 'bias' } as const;

/**
 * The exact search over stored codes without decoding them in JavaScript. For per-dimension
 * scalar codes `x_d = lo_d + c_d · step_d`, `q · x = q · lo + (q ⊙ step) · c`, so the caller
 * feeds the transformed queries (`q ⊙ step`, in the graph's column order) and the per-row
 * constant `bias = q · lo`; for fp32 / fp16 the queries as they are and a zero bias:
 *
 * ```
 * queries [rows, d], bias [rows, 1], codes [n, width], k int64 [1]
 *   x        = Cast(codes → float)  (nibbles: Concat(codes & 15, codes >> 4) first)   [n, d]
 *   scores   = Gemm(queries, x, bias, transB=1)                                    [rows, n]
 *   values, indices = TopK(scores, k) (indices Cast to int32); checksum = ReduceSum(scores)
 * ```
 *
 * @example
 * const bytes = codecSimilarityGraph({ element: 'nibbles', width: 192, scores: false });
 */
export function codecSimilarityGraph(spec: CodecGraphSpec): Uint8Array {
  const { element, width } = spec;
  if (!Number.isInteger(width) || width <= 0) throw new Error(`codecGraph: bad width ${width}`);
  const g = GRAPH_NAMES;
  const c = CODEC_GRAPH_NAMES;
  const d = element === 'nibbles' ? 2 * width : width;
  const codeType = element === 'float' ? FLOAT : element === 'float16' ? FLOAT16 : UINT8;
  const node: object[] = [];
  const initializer: object[] = [];
  let x: string = c.codes;
  if (element === 'nibbles') {
    initializer.push(
      { name: 'mask', dims: [], dataType: UINT8, rawData: Uint8Array.of(15) },
      { name: 'four', dims: [], dataType: UINT8, rawData: Uint8Array.of(4) },
    );
    node.push(
      { name: 'low', opType: 'BitwiseAnd', input: [c.codes, 'mask'], output: ['low'] },
      {
        name: 'high',
        opType: 'BitShift',
        input: [c.codes, 'four'],
        output: ['high'],
        attribute: [{ name: 'direction', type: ATTR_STRING, s: new TextEncoder().encode('RIGHT') }],
      },
      {
        name: 'unpack',
        opType: 'Concat',
        input: ['low', 'high'],
        output: ['levels'],
        attribute: [intAttr('axis', 1)],
      },
    );
    x = 'levels';
  }
  if (element !== 'float') {
    node.push({
      name: 'to_float',
      opType: 'Cast',
      input: [x],
      output: ['x'],
      attribute: [intAttr('to', FLOAT)],
    });
    x = 'x';
  }
  node.push(
    {
      name: 'similarity',
      opType: 'Gemm',
      input: [g.queries, x, c.bias],
      output: [g.scores],
      attribute: [intAttr('transB', 1)],
    },
    {
      name: 'finite_check',
      opType: 'ReduceSum',
      input: [g.scores],
      output: [g.checksum],
      attribute: [intAttr('keepdims', 0)],
    },
    ...topKNodes(),
  );
  const input = [
    valueInfo(g.queries, FLOAT, ['rows', d]),
    valueInfo(c.bias, FLOAT, ['rows', 1]),
    valueInfo(c.codes, codeType, ['n', width]),
    valueInfo(g.k, INT64, [1]),
  ];
  const output = [
    valueInfo(g.checksum, FLOAT, []),
    valueInfo(g.values, FLOAT, ['rows', 'k_out']),
    valueInfo(g.indices, INT32, ['rows', 'k_out']),
  ];
  if (spec.scores) output.push(valueInfo(g.scores, FLOAT, ['rows', 'n']));
  return encodeModel(
    18,
    'bfe exact search over codec codes: Cast, Gemm with the transformed queries, TopK',
    { name: 'bfe_codec_similarity', node, initializer, input, output },
  );
}
