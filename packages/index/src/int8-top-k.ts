/**
 * The int8 resident product (`OrtSimilarityKernel.makeResident(…, 'int8')`): a bank held as
 * int8 (each token scaled to 7 bits, {@link quantizeBank}) and each query row quantised on its
 * own to uint8 around 128, so that onnxruntime's integer GEMM (`MatMulInteger`) proposes each
 * row's top-k from exact integer sums. A row's proposals depend on that row alone (not on the
 * rows stacked with it) and are the same on every x86 CPU (no 16-bit saturation at 7 bits).
 */
import * as ort from 'onnxruntime-node';
import { NonFiniteScoresError, type ChunkTopK } from './kernel.js';
import {
  GRAPH_NAMES,
  encodeModel,
  int8BankInitializers,
  intAttr,
  topKNodes,
  valueInfo,
  type Int8Bank,
} from './onnx-graph.js';
import { tensorData } from './ort-outputs.js';

/** `TensorProto.DataType` values used here. */
const FLOAT = 1;
const UINT8 = 2;
const INT32 = 6;
const INT64 = 7;

/** The largest magnitude a query value is quantised to (around the zero point 128). */
export const INT8_QUERY_LEVELS = 127;

/** Input names of {@link int8TopKGraph} beyond `k` (outputs as {@link GRAPH_NAMES}). */
export const INT8_GRAPH_NAMES = { codes: 'query_codes' } as const;

/**
 * The proposals' margin (`exactTopK`'s `margin`) the store gives an int8 resident bank: k + 32
 * entries a row, every one rescored in float64 (on LoCoMo, k = 64: every row's top-64 as the
 * float32 product's; `pnpm bench:search-floor --resident-product int8`).
 */
export const INT8_RESIDENT_MARGIN = 32;

/** Query rows as uint8 codes around 128, each row with its own dequantising scale. */
export interface QuantizedRows {
  readonly codes: Uint8Array;
  readonly scales: Float32Array;
}

/**
 * Each row of `queries [rows × dim]` scaled by `127 / max|row|`, rounded to the nearest
 * integer and offset by 128 (`codes` 1..255), with `scales[r] = max|row| / 127` (1 for a zero
 * row).
 * @throws {NonFiniteScoresError} when a value is NaN or ±Inf (its scores would be).
 */
export function quantizeRows(queries: Float32Array, rows: number, dim: number): QuantizedRows {
  const codes = new Uint8Array(rows * dim);
  const scales = new Float32Array(rows);
  for (let r = 0; r < rows; r++) {
    const at = r * dim;
    let max = 0;
    for (let d = 0; d < dim; d++) max = Math.max(max, Math.abs(queries[at + d]!));
    if (!Number.isFinite(max)) throw new NonFiniteScoresError();
    const up = max === 0 ? 0 : INT8_QUERY_LEVELS / max;
    scales[r] = max === 0 ? 1 : max / INT8_QUERY_LEVELS;
    for (let d = 0; d < dim; d++) codes[at + d] = 128 + Math.round(queries[at + d]! * up);
  }
  return { codes, scales };
}

/**
 * `ModelProto` bytes of the int8 resident top-k:
 *
 * ```
 * query_codes [rows, d] uint8, bank [d, n] int8 (constant), scales [n] (constant)
 *   products = MatMulInteger(query_codes, bank, 128)     [rows, n] int32 (exact)
 *   scores   = Cast(products, float) · scales             [rows, n]
 *   values, i64 = TopK(scores, k, axis=1, largest=1, sorted=1)
 *   indices  = Cast(i64, int32);  checksum = ReduceSum(values)
 * ```
 *
 * `values` are still to be multiplied by each row's scale (a positive factor: the order is
 * the row's own).
 */
export function int8TopKGraph(bank: Int8Bank): Uint8Array {
  const { n, dim } = bank;
  const g = GRAPH_NAMES;
  const codes = INT8_GRAPH_NAMES.codes;
  return encodeModel(17, `bfe int8 resident top-k: ${n} tokens × ${dim}`, {
    name: 'bfe_int8_top_k',
    node: [
      {
        name: 'products',
        opType: 'MatMulInteger',
        input: [codes, g.bank, 'zero_point'],
        output: ['products'],
      },
      {
        name: 'to_float',
        opType: 'Cast',
        input: ['products'],
        output: ['products_f'],
        attribute: [intAttr('to', FLOAT)],
      },
      { name: 'scaled', opType: 'Mul', input: ['products_f', 'scales'], output: [g.scores] },
      ...topKNodes(),
      {
        name: 'finite_check',
        opType: 'ReduceSum',
        input: [g.values],
        output: [g.checksum],
        attribute: [intAttr('keepdims', 0)],
      },
    ],
    initializer: [
      ...int8BankInitializers(bank),
      { name: 'zero_point', dims: [], dataType: UINT8, rawData: Uint8Array.of(128) },
    ],
    input: [valueInfo(codes, UINT8, ['rows', dim]), valueInfo(g.k, INT64, [1])],
    output: [
      valueInfo(g.checksum, FLOAT, []),
      valueInfo(g.values, FLOAT, ['rows', 'k_out']),
      valueInfo(g.indices, INT32, ['rows', 'k_out']),
    ],
  });
}

/**
 * One call of an {@link int8TopKGraph} session (`run`): `queries [rows × dim]` quantised
 * ({@link quantizeRows}), each row's top-`kOut` estimates scaled back, marked `approximate`.
 */
export async function int8TopK(
  run: (feeds: Record<string, ort.Tensor>) => Promise<ort.InferenceSession.ReturnType>,
  queries: Float32Array,
  rows: number,
  dim: number,
  kOut: number,
): Promise<ChunkTopK> {
  const { codes, scales } = quantizeRows(queries, rows, dim);
  const out = await run({
    [INT8_GRAPH_NAMES.codes]: new ort.Tensor('uint8', codes, [rows, dim]),
    [GRAPH_NAMES.k]: new ort.Tensor('int64', BigInt64Array.of(BigInt(kOut)), [1]),
  });
  const values = tensorData(out, GRAPH_NAMES.values, 'float32', rows * kOut) as Float32Array;
  const indices = tensorData(out, GRAPH_NAMES.indices, 'int32', rows * kOut) as Int32Array;
  for (let r = 0; r < rows; r++) {
    const scale = scales[r]!;
    for (let h = r * kOut; h < (r + 1) * kOut; h++) values[h] = values[h]! * scale;
  }
  return { kOut, values, indices, scores: undefined, approximate: true };
}
