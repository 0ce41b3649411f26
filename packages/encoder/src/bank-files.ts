import { createWriteStream } from 'node:fs';
import { finished } from 'node:stream/promises';
import { toStorageError } from '@bfe/core';
import {
  Bool,
  Field,
  FixedSizeList,
  Float16,
  Float32,
  Int32,
  RecordBatch,
  RecordBatchFileWriter,
  Schema,
  Struct,
  Utf8,
  makeData,
  vectorFromArray,
  type Vector,
} from 'apache-arrow';
import type { EncodedChunk } from './pass.js';
import { WINDOW_POOLING, type WindowSpec } from './window.js';

/** Element type of stored vectors. Float16 halves the files; vectors are still unit-norm to ~1e-3. */
export type VectorDtype = 'float32' | 'float16';

/** Which side a pair of files describes. */
export type BankRole = 'memories' | 'queries';

/** File names of a role's two tables. */
export function bankFileNames(role: BankRole): { rows: string; tokens: string } {
  return role === 'memories'
    ? { rows: 'memories.arrow', tokens: 'memory-tokens.arrow' }
    : { rows: 'queries.arrow', tokens: 'query-tokens.arrow' };
}

/** Schema metadata every bank file carries, so it explains itself to pyarrow, polars or DuckDB. */
export interface BankMetadata {
  readonly modelId: string;
  readonly modelSha256: string;
  readonly pooling: string;
  readonly dim: number;
  readonly dtype: VectorDtype;
  readonly maxLength: number;
  /** Hash of the inputs (benchmark hash, role, prefix) the file was computed from. */
  readonly inputHash: string;
  /** Memories encoded in windows (METHOD.md §8); absent: truncated at `maxLength`. */
  readonly window?: WindowSpec;
}

function metadataMap(
  role: BankRole,
  table: 'rows' | 'tokens',
  m: BankMetadata,
): Map<string, string> {
  return new Map([
    ['bfe.format', 'bfe-bank/1'],
    ['bfe.role', role],
    ['bfe.table', table],
    ['bfe.model_id', m.modelId],
    ['bfe.model_sha256', m.modelSha256],
    ['bfe.pooling', m.pooling],
    ['bfe.dim', String(m.dim)],
    ['bfe.dtype', m.dtype],
    ['bfe.max_length', String(m.maxLength)],
    ['bfe.input_hash', m.inputHash],
    // Only on windowed files, so a bank without windows keeps its bytes.
    ...(m.window === undefined
      ? []
      : ([
          ['bfe.window_size', String(m.window.size)],
          ['bfe.window_stride', String(m.window.stride)],
          ['bfe.window_pooling', WINDOW_POOLING],
        ] as const)),
  ]);
}

function vectorType(dtype: VectorDtype, dim: number): FixedSizeList {
  const item = dtype === 'float32' ? new Float32() : new Float16();
  return new FixedSizeList(dim, new Field('item', item, false));
}

/** Zero-copy FixedSizeList data over `[n * dim]` values, converting to half floats if asked. */
function vectorData(values: Float32Array, dim: number, dtype: VectorDtype) {
  const type = vectorType(dtype, dim);
  const child =
    dtype === 'float32'
      ? makeData({ type: new Float32(), length: values.length, nullCount: 0, data: values })
      : makeData({
          type: new Float16(),
          length: values.length,
          nullCount: 0,
          data: toHalf(values),
        });
  return makeData({ type, length: values.length / dim, nullCount: 0, child });
}

const F32 = new Float32Array(1);
const U32 = new Uint32Array(F32.buffer);

/**
 * IEEE binary16 bits of one float32, rounded to nearest even, subnormals included. (arrow-js's
 * `util.float64ToUint16` turns values just below 2^-14 into infinities, so it is not used.)
 */
export function floatToHalf(value: number): number {
  F32[0] = value;
  const x = U32[0]!;
  const sign = (x >>> 16) & 0x8000;
  const exp = (x >>> 23) & 0xff;
  let mant = x & 0x7fffff;
  if (exp === 0xff) return sign | 0x7c00 | (mant !== 0 ? 0x200 : 0); // Inf, NaN
  const e = exp - 127 + 15;
  if (e >= 0x1f) return sign | 0x7c00; // overflow → Inf
  if (e <= 0) {
    if (e < -10) return sign; // underflow → ±0
    // Subnormal half: shift the mantissa (with its implicit bit) right, round to nearest even.
    mant |= 0x800000;
    const shift = 14 - e;
    const half = mant >>> shift;
    const rest = mant & ((1 << shift) - 1);
    const mid = 1 << (shift - 1);
    return sign | (half + (rest > mid || (rest === mid && (half & 1) === 1) ? 1 : 0));
  }
  const half = (e << 10) | (mant >>> 13);
  const rest = mant & 0x1fff;
  // A carry out of the mantissa correctly bumps the exponent (and can reach Inf).
  return sign | (half + (rest > 0x1000 || (rest === 0x1000 && (half & 1) === 1) ? 1 : 0));
}

/** IEEE binary16 bits of each value (see {@link floatToHalf}). */
export function toHalf(values: Float32Array): Uint16Array {
  const out = new Uint16Array(values.length);
  for (let i = 0; i < values.length; i++) out[i] = floatToHalf(values[i]!);
  return out;
}

function int32Data(values: Int32Array) {
  return makeData({ type: new Int32(), length: values.length, nullCount: 0, data: values });
}

/** A streamed Arrow IPC file writer: batches go to disk as they are written. */
class StreamedFile {
  readonly #writer = new RecordBatchFileWriter();
  readonly #done: Promise<void>;
  readonly #path: string;

  constructor(path: string) {
    this.#path = path;
    const sink = createWriteStream(path);
    this.#done = finished(this.#writer.toNodeStream().pipe(sink));
  }

  write(batch: RecordBatch): void {
    this.#writer.write(batch);
  }

  async close(): Promise<void> {
    this.#writer.finish();
    this.#writer.close();
    try {
      await this.#done;
    } catch (error) {
      // A stream's write error carries no path: name the file (a full disk, a denied write).
      throw await toStorageError(error, this.#path);
    }
  }
}

/** Row counts written by {@link writeBankTables}. */
export interface WrittenCounts {
  readonly rows: number;
  readonly tokens: number;
  readonly truncated: number;
  /** Rows that kept no content token (they are still ranked by their pooled vector). */
  readonly withoutTokens: number;
  /** Windowed files only: rows encoded in more than one window, and the windows run. */
  readonly windowed?: { readonly rows: number; readonly windows: number };
}

/**
 * Streams one role's two tables to `rowsPath` and `tokensPath`:
 * - rows: `<id column>` Utf8, (`bank_id` Utf8 for memories), `n_tokens` Int32, `truncated`
 *   Bool, `pooled` FixedSizeList<Float32|Float16, dim>;
 * - tokens: `memory_index`|`query_index` Int32 (row number in the rows table), `position`
 *   Int32, `token_id` Int32, `vector` FixedSizeList<Float32|Float16, dim>, grouped by row in
 *   row order.
 * Each encoded chunk becomes one record batch in each file.
 */
export async function writeBankTables(
  role: BankRole,
  paths: { rows: string; tokens: string },
  ids: readonly string[],
  bankIds: readonly string[] | undefined,
  chunks: AsyncIterable<EncodedChunk>,
  meta: BankMetadata,
): Promise<WrittenCounts> {
  const idName = role === 'memories' ? 'memory_id' : 'query_id';
  const indexName = role === 'memories' ? 'memory_index' : 'query_index';
  const rowFields = [
    new Field(idName, new Utf8(), false),
    ...(bankIds === undefined ? [] : [new Field('bank_id', new Utf8(), false)]),
    new Field('n_tokens', new Int32(), false),
    new Field('truncated', new Bool(), false),
    new Field('pooled', vectorType(meta.dtype, meta.dim), false),
  ];
  const tokenFields = [
    new Field(indexName, new Int32(), false),
    new Field('position', new Int32(), false),
    new Field('token_id', new Int32(), false),
    new Field('vector', vectorType(meta.dtype, meta.dim), false),
  ];
  const rowSchema = new Schema(rowFields, metadataMap(role, 'rows', meta));
  const tokenSchema = new Schema(tokenFields, metadataMap(role, 'tokens', meta));
  const rowsFile = new StreamedFile(paths.rows);
  const tokensFile = new StreamedFile(paths.tokens);
  let rows = 0;
  let tokens = 0;
  let truncated = 0;
  let withoutTokens = 0;
  let windowedRows = 0;
  let windows = 0;
  try {
    for await (const c of chunks) {
      if (c.dim !== meta.dim)
        throw new Error(`encoder returned dim ${c.dim}, manifest says ${meta.dim}`);
      if ((meta.window !== undefined) !== (c.windows !== undefined))
        throw new Error(
          `the metadata says ${meta.window === undefined ? 'no window' : 'windowed'}, the encoded chunk ${c.windows === undefined ? 'has no windows' : 'is windowed'}`,
        );
      if (c.windows !== undefined) {
        for (let i = 0; i < c.count; i++) {
          windows += c.windows[i]!;
          if (c.windows[i]! > 1) windowedRows++;
        }
      }
      const idVector = vectorFromArray(ids.slice(c.start, c.start + c.count), new Utf8());
      const children = [
        idVector.data[0]!,
        ...(bankIds === undefined
          ? []
          : [vectorFromArray(bankIds.slice(c.start, c.start + c.count), new Utf8()).data[0]!]),
        int32Data(c.nTokens),
        (
          vectorFromArray(
            Array.from(c.truncated, (t) => t === 1),
            new Bool(),
          ) as Vector<Bool>
        ).data[0]!,
        vectorData(c.pooled, c.dim, meta.dtype),
      ];
      rowsFile.write(
        new RecordBatch(
          rowSchema,
          makeData({ type: new Struct(rowFields), length: c.count, nullCount: 0, children }),
        ),
      );
      const n = c.tokenOwner.length;
      tokensFile.write(
        new RecordBatch(
          tokenSchema,
          makeData({
            type: new Struct(tokenFields),
            length: n,
            nullCount: 0,
            children: [
              int32Data(c.tokenOwner),
              int32Data(c.tokenPosition),
              int32Data(c.tokenId),
              vectorData(c.tokenVectors, c.dim, meta.dtype),
            ],
          }),
        ),
      );
      rows += c.count;
      tokens += n;
      for (let i = 0; i < c.count; i++) {
        truncated += c.truncated[i]!;
        if (c.nTokens[i] === 0) withoutTokens++;
      }
    }
  } finally {
    await Promise.all([rowsFile.close(), tokensFile.close()]);
  }
  if (rows !== ids.length) throw new Error(`wrote ${rows} rows for ${ids.length} ids`);
  return {
    rows,
    tokens,
    truncated,
    withoutTokens,
    ...(meta.window === undefined ? {} : { windowed: { rows: windowedRows, windows } }),
  };
}
