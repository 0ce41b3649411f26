import { readFile } from 'node:fs/promises';
import {
  Field,
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
import { tokenCount } from './encoded.js';
import type { EncodedTexts, MemoryMeta } from '../types.js';

// A segment: the memories of one bank flushed or compacted together, as one Arrow IPC file of
// one record batch, written once (temporary file, fsync, rename) and never edited. Columns:
//   id Utf8 · text Utf8 · meta Utf8 (JSON, nullable) · seq Float64 (write sequence) ·
//   truncated Uint8 · pooled FixedSizeList<Float32, dim> ·
//   token_vectors List<FixedSizeList<Float32, dim>> · token_ids List<Int32> ·
//   token_positions List<Int32>
// (the list offsets are the rows' token offsets). Schema metadata names the format, the bank,
// the model and the dimension, so pyarrow or DuckDB can read a segment without bfe.

/** Rows of one bank in write order, with their encoded vectors. */
export interface SegmentRows {
  readonly bank: string;
  readonly ids: readonly string[];
  readonly texts: readonly string[];
  readonly metas: readonly (MemoryMeta | undefined)[];
  /** Write sequence of each row: the later of two rows with one id is the live one. */
  readonly seqs: Float64Array;
  readonly encoded: EncodedTexts;
}

/** What the manifest records of a written segment, to recognise it intact. */
export interface SegmentFacts {
  readonly bytes: number;
  readonly sha256: string;
}

const FORMAT = 'bfe-store-segment/1';

function int32Data(values: Int32Array): Data<Int32> {
  return makeData({ type: new Int32(), length: values.length, nullCount: 0, data: values });
}

function listOf(child: Data, offsets: Int32Array, rows: number): Data {
  const type = new List(new Field('item', child.type, false));
  return makeData({ type, length: rows, nullCount: 0, valueOffsets: offsets, child });
}

/** The Arrow IPC file bytes of `rows` (see the column list above). */
export function segmentBytes(rows: SegmentRows, model: string): Uint8Array {
  const e = rows.encoded;
  const n = e.count;
  const dim = e.dim;
  const tokens = tokenCount(e);
  const offsets = e.tokenOffsets.subarray(0, n + 1);
  const vectorType = new FixedSizeList(dim, new Field('item', new Float32(), false));
  const fields = [
    new Field('id', new Utf8(), false),
    new Field('text', new Utf8(), false),
    new Field('meta', new Utf8(), true),
    new Field('seq', new Float64(), false),
    new Field('truncated', new Uint8(), false),
    new Field('pooled', vectorType, false),
    new Field('token_vectors', new List(new Field('item', vectorType, false)), false),
    new Field('token_ids', new List(new Field('item', new Int32(), false)), false),
    new Field('token_positions', new List(new Field('item', new Int32(), false)), false),
  ];
  const metadata = new Map([
    ['bfe.format', FORMAT],
    ['bfe.bank', rows.bank],
    ['bfe.model', model],
    ['bfe.dim', String(dim)],
  ]);
  const schema = new Schema(fields, metadata);
  const children = [
    vectorFromArray(rows.ids as string[], new Utf8()).data[0]!,
    vectorFromArray(rows.texts as string[], new Utf8()).data[0]!,
    vectorFromArray(
      rows.metas.map((m) => (m === undefined ? null : JSON.stringify(m))),
      new Utf8(),
    ).data[0]!,
    makeData({ type: new Float64(), length: n, nullCount: 0, data: rows.seqs.subarray(0, n) }),
    makeData({ type: new Uint8(), length: n, nullCount: 0, data: e.truncated.subarray(0, n) }),
    float32ListVector(e.pooled.subarray(0, n * dim), dim).data[0]!,
    listOf(float32ListVector(e.tokenVectors.subarray(0, tokens * dim), dim).data[0]!, offsets, n),
    listOf(int32Data(e.tokenIds.subarray(0, tokens)), offsets, n),
    listOf(int32Data(e.tokenPositions.subarray(0, tokens)), offsets, n),
  ];
  const batch = new RecordBatch(
    schema,
    makeData({ type: new Struct(fields), length: n, nullCount: 0, children }),
  );
  return tableToIPC(new Table(schema, [batch]), 'file');
}

/** Writes a segment atomically (temporary file, fsync, rename) and returns its size and hash. */
export async function writeSegment(
  path: string,
  rows: SegmentRows,
  model: string,
): Promise<SegmentFacts> {
  const bytes = segmentBytes(rows, model);
  await writeFileAtomic(path, bytes);
  return { bytes: bytes.byteLength, sha256: bytesSha256(bytes) };
}

/**
 * Reads a segment back and checks it against the manifest's record (size, SHA-256) and the
 * store (bank, model, dimension).
 * @throws ArtifactCorruptError naming the file when it is truncated, altered or not a segment
 */
export async function readSegment(
  path: string,
  expected: SegmentFacts & { bank: string; model: string; dim: number; rows: number },
): Promise<SegmentRows> {
  let bytes: Buffer;
  try {
    bytes = await readFile(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT')
      throw corrupt(path, 'the file is missing');
    throw await toStorageError(error, path);
  }
  if (bytes.byteLength !== expected.bytes)
    throw corrupt(path, `${bytes.byteLength} bytes, the manifest says ${expected.bytes}`);
  if (bytesSha256(bytes) !== expected.sha256)
    throw corrupt(path, 'its SHA-256 differs from the manifest');
  const table = readArrowFile(bytes, path);
  const meta = table.schema.metadata;
  const want: [string, string][] = [
    ['bfe.format', FORMAT],
    ['bfe.bank', expected.bank],
    ['bfe.model', expected.model],
    ['bfe.dim', String(expected.dim)],
  ];
  for (const [k, v] of want)
    if (meta.get(k) !== v) throw corrupt(path, `schema metadata ${k} is not '${v}'`);
  if (table.numRows !== expected.rows || table.batches.length !== 1)
    throw corrupt(path, `${table.numRows} rows, the manifest says ${expected.rows}`);
  return decodeSegment(table, expected.bank, expected.dim);
}

function corrupt(path: string, why: string): ArtifactCorruptError {
  return new ArtifactCorruptError(`store segment ${path} is corrupt: ${why}`, {
    suggestion:
      'Restore the store directory from a backup; the segment cannot be rebuilt from the WAL once flushed.',
  });
}

function decodeSegment(table: Table, bank: string, dim: number): SegmentRows {
  const batch = table.batches[0]!;
  const col = (name: string): Data => {
    const child = batch.getChild(name);
    if (child === null) throw new Error(`segment has no column ${name}`);
    return child.data[0]!;
  };
  const n = table.numRows;
  const strings = (name: string): string[] => batch.getChild(name)!.toArray() as string[];
  const metaColumn = batch.getChild('meta')!;
  const metas: (MemoryMeta | undefined)[] = new Array<MemoryMeta | undefined>(n);
  for (let i = 0; i < n; i++) {
    const m = metaColumn.get(i) as string | null;
    metas[i] = m === null ? undefined : (JSON.parse(m) as MemoryMeta);
  }
  const vectors = col('token_vectors');
  const offsets = vectors.valueOffsets.subarray(vectors.offset, vectors.offset + n + 1);
  const base = offsets[0]!;
  const tokens = offsets[n]! - base;
  const pooledData = col('pooled');
  const pooled = (pooledData.children[0]!.values as Float32Array).subarray(
    pooledData.offset * dim,
    (pooledData.offset + n) * dim,
  );
  const vectorChild = vectors.children[0]!;
  const tokenVectors = (vectorChild.children[0]!.values as Float32Array).subarray(
    (vectorChild.offset + base) * dim,
    (vectorChild.offset + base + tokens) * dim,
  );
  const listValues = (name: string): Int32Array => {
    const d = col(name);
    const child = d.children[0]!;
    return (child.values as Int32Array).subarray(child.offset + base, child.offset + base + tokens);
  };
  const tokenOffsets = new Int32Array(n + 1);
  for (let i = 0; i <= n; i++) tokenOffsets[i] = offsets[i]! - base;
  const seqData = col('seq');
  const truncData = col('truncated');
  return {
    bank,
    ids: strings('id'),
    texts: strings('text'),
    metas,
    seqs: (seqData.values as Float64Array).subarray(seqData.offset, seqData.offset + n),
    encoded: {
      count: n,
      dim,
      pooled,
      tokenOffsets,
      tokenVectors,
      tokenIds: listValues('token_ids'),
      tokenPositions: listValues('token_positions'),
      truncated: (truncData.values as Uint8Array).subarray(truncData.offset, truncData.offset + n),
    },
  };
}
