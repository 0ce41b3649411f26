import { readFile } from 'node:fs/promises';
import {
  Field,
  FixedSizeBinary,
  FixedSizeList,
  Float32,
  Float64,
  Int32,
  List,
  RecordBatch,
  Schema,
  Struct,
  Table,
  Uint8,
  Uint16,
  Utf8,
  makeData,
  tableToIPC,
  vectorFromArray,
  type Data,
} from 'apache-arrow';
import {
  ArtifactCorruptError,
  bytesSha256,
  float32ListVector,
  readArrowFile,
  toStorageError,
  writeFileAtomic,
} from '@bfe/core';
import { encodeTokens, trainCodec, type CodecModel } from '@bfe/index';
import { tokenCount } from './encoded.js';
import { decodeSegment, directoryOf, type SegmentDirectory } from './segment-read.js';
import type { StoreCodec } from './settings.js';
import type { EncodedTexts } from '../types.js';
import { MAX_CODEC_BLOCKS, type SegmentCodes, type SegmentRows } from './segment-rows.js';

export { MAX_CODEC_BLOCKS };
export type { SegmentCodes, SegmentRows };

// A segment: the memories of one bank flushed or compacted together, as one Arrow IPC file of
// one record batch, written once (temporary file, fsync, rename) and never edited. Columns:
//   id Utf8 · text Utf8 · meta Utf8 (JSON, nullable) · seq Float64 (write sequence) ·
//   truncated Uint8 · pooled FixedSizeList<Float32, dim> ·
//   token_codes List<FixedSizeBinary<bytes per token>> (format 2; format 1 has
//   token_vectors List<FixedSizeList<Float32, dim>>) · token_ids List<Int32> ·
//   token_positions List<Int32>
// (the list offsets are the rows' token offsets). Schema metadata names the format, the bank,
// the model, the dimension and (format 2) the codec with its fitted parameters (`bfe.codec`, a
// CodecModel as JSON: sq8/sq4 fit their per-dimension range on the segment's own tokens), so
// pyarrow or DuckDB can read a segment without bfe.

/** What the manifest records of a written segment, to recognise it intact and read it by parts. */
export interface SegmentFacts {
  readonly bytes: number;
  readonly sha256: string;
  /** The codec of its token states (absent: format 1, fp32). */
  readonly codec?: StoreCodec | undefined;
  /** Where the columns an open reads lie in the file (absent: format 1, read whole). */
  readonly directory?: SegmentDirectory | undefined;
}

export const FORMAT_1 = 'bfe-store-segment/1';
export const FORMAT_2 = 'bfe-store-segment/2';

/**
 * `x` itself when it is the whole of its buffer, else a copy: apache-arrow's IPC writer wrote
 * the arrays of WAL records read back (views into the record's bytes) from the wrong place in
 * their buffer (`store-codec.test.ts`, rows replayed then flushed); arrays of their own are
 * written right.
 */
function own<T extends Uint8Array | Uint16Array | Int32Array | Float32Array | Float64Array>(
  x: T,
): T {
  return x.byteOffset === 0 && x.byteLength === x.buffer.byteLength ? x : (x.slice() as T);
}

function int32Data(values: Int32Array): Data<Int32> {
  return makeData({ type: new Int32(), length: values.length, nullCount: 0, data: values });
}

function listOf(child: Data, offsets: Int32Array, rows: number): Data {
  const type = new List(new Field('item', child.type, false));
  return makeData({ type, length: rows, nullCount: 0, valueOffsets: offsets, child });
}

/** The codec model of a segment of `codec` holding `e`'s tokens (sq8/sq4: fitted on them). */
export function segmentCodec(codec: StoreCodec, e: EncodedTexts): CodecModel {
  const tokens = tokenCount(e);
  // A segment without tokens still names a valid model: fitted on one zero vector.
  const sample = tokens > 0 ? e.tokenVectors : new Float32Array(e.dim);
  return trainCodec(codec, sample, Math.max(tokens, 1), e.dim);
}

/** `e`'s tokens in `codec`, one model fitted on them all. */
export function encodeSegmentCodes(codec: StoreCodec, e: EncodedTexts): SegmentCodes {
  const model = segmentCodec(codec, e);
  return {
    models: [model],
    blocks: new Uint16Array(e.count),
    codes: encodeTokens(model, e.tokenVectors, tokenCount(e)),
  };
}

/** The Arrow IPC file bytes of `rows` (see the column list above), its token states as `coded`. */
export function segmentBytes(rows: SegmentRows, model: string, coded: SegmentCodes): Uint8Array {
  const e = rows.encoded;
  const n = e.count;
  const dim = e.dim;
  const tokens = tokenCount(e);
  const offsets = own(e.tokenOffsets.subarray(0, n + 1));
  const vectorType = new FixedSizeList(dim, new Field('item', new Float32(), false));
  const width = coded.models[0]!.bytesPerToken;
  if (coded.models.some((m) => m.bytesPerToken !== width || m.name !== coded.models[0]!.name))
    throw new Error('a segment holds the codes of one codec');
  const codeType = new FixedSizeBinary(width);
  const fields = [
    new Field('id', new Utf8(), false),
    new Field('text', new Utf8(), false),
    new Field('meta', new Utf8(), true),
    new Field('seq', new Float64(), false),
    new Field('truncated', new Uint8(), false),
    new Field('pooled', vectorType, false),
    new Field('codec_block', new Uint16(), false),
    new Field('token_codes', new List(new Field('item', codeType, false)), false),
    new Field('token_ids', new List(new Field('item', new Int32(), false)), false),
    new Field('token_positions', new List(new Field('item', new Int32(), false)), false),
  ];
  const metadata = new Map([
    ['bfe.format', FORMAT_2],
    ['bfe.bank', rows.bank],
    ['bfe.model', model],
    ['bfe.dim', String(dim)],
    ['bfe.codec', JSON.stringify(coded.models)],
  ]);
  const schema = new Schema(fields, metadata);
  const codes = own(coded.codes.subarray(0, tokens * width));
  const children = [
    vectorFromArray(rows.ids as string[], new Utf8()).data[0]!,
    vectorFromArray(rows.texts as string[], new Utf8()).data[0]!,
    vectorFromArray(
      rows.metas.map((m) => (m === undefined ? null : JSON.stringify(m))),
      new Utf8(),
    ).data[0]!,
    makeData({ type: new Float64(), length: n, nullCount: 0, data: own(rows.seqs.subarray(0, n)) }),
    makeData({ type: new Uint8(), length: n, nullCount: 0, data: own(e.truncated.subarray(0, n)) }),
    float32ListVector(own(e.pooled.subarray(0, n * dim)), dim).data[0]!,
    makeData({
      type: new Uint16(),
      length: n,
      nullCount: 0,
      data: own(coded.blocks.subarray(0, n)),
    }),
    listOf(makeData({ type: codeType, length: tokens, nullCount: 0, data: codes }), offsets, n),
    listOf(int32Data(own(e.tokenIds.subarray(0, tokens))), offsets, n),
    listOf(int32Data(own(e.tokenPositions.subarray(0, tokens))), offsets, n),
  ];
  const batch = new RecordBatch(
    schema,
    makeData({ type: new Struct(fields), length: n, nullCount: 0, children }),
  );
  return tableToIPC(new Table(schema, [batch]), 'file');
}

/**
 * Writes a segment atomically (temporary file, fsync, rename) with its token states in `codec`
 * (encoded now, one model fitted on them) or as the `coded` codes given (a compaction's copy),
 * and returns its size, hash, codec and directory.
 */
export async function writeSegment(
  path: string,
  rows: SegmentRows,
  model: string,
  codec: StoreCodec = 'fp32',
  coded: SegmentCodes = encodeSegmentCodes(codec, rows.encoded),
): Promise<SegmentFacts & { readonly directory: SegmentDirectory }> {
  if (coded.models[0]!.name !== codec)
    throw new Error(`codes of ${coded.models[0]!.name}, not ${codec}`);
  const bytes = segmentBytes(rows, model, coded);
  const directory = directoryOf(bytes, path);
  await writeFileAtomic(path, bytes);
  return { bytes: bytes.byteLength, sha256: bytesSha256(bytes), codec, directory };
}

/** What a segment must be to be accepted: the manifest's record and the store's identity. */
export type ExpectedSegment = SegmentFacts & {
  readonly bank: string;
  readonly model: string;
  readonly dim: number;
  readonly rows: number;
};

/**
 * Reads a whole segment back (token states decoded to float32) and checks it against the
 * manifest's record (size, SHA-256) and the store (bank, model, dimension).
 * @throws ArtifactCorruptError naming the file when it is truncated, altered or not a segment
 */
export async function readSegment(path: string, expected: ExpectedSegment): Promise<SegmentRows> {
  let bytes: Buffer;
  try {
    bytes = await readFile(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT')
      throw segmentCorrupt(path, 'the file is missing');
    throw await toStorageError(error, path);
  }
  return decodeSegmentBytes(bytes, path, expected);
}

/** {@link readSegment} on bytes already read. */
export function decodeSegmentBytes(
  bytes: Uint8Array,
  path: string,
  expected: ExpectedSegment,
): SegmentRows {
  if (bytes.byteLength !== expected.bytes)
    throw segmentCorrupt(path, `${bytes.byteLength} bytes, the manifest says ${expected.bytes}`);
  if (bytesSha256(bytes) !== expected.sha256)
    throw segmentCorrupt(path, 'its SHA-256 differs from the manifest');
  const table = readArrowFile(bytes, path);
  const meta = table.schema.metadata;
  const format = meta.get('bfe.format');
  if (format !== FORMAT_1 && format !== FORMAT_2)
    throw segmentCorrupt(path, `schema metadata bfe.format is not '${FORMAT_2}'`);
  const want: [string, string][] = [
    ['bfe.bank', expected.bank],
    ['bfe.model', expected.model],
    ['bfe.dim', String(expected.dim)],
  ];
  for (const [k, v] of want)
    if (meta.get(k) !== v) throw segmentCorrupt(path, `schema metadata ${k} is not '${v}'`);
  if (table.numRows !== expected.rows || table.batches.length !== 1)
    throw segmentCorrupt(path, `${table.numRows} rows, the manifest says ${expected.rows}`);
  return decodeSegment(table, expected.bank, expected.dim, path);
}

/** The error of a segment that is not what the manifest says. */
export function segmentCorrupt(path: string, why: string): ArtifactCorruptError {
  return new ArtifactCorruptError(`store segment ${path} is corrupt: ${why}`, {
    suggestion:
      'Restore the store directory from a backup; the segment cannot be rebuilt from the WAL once flushed.',
  });
}
