import { createHash } from 'node:crypto';
import { open, type FileHandle } from 'node:fs/promises';
import { Message, type DataType } from 'apache-arrow';
import { Footer } from 'apache-arrow/ipc/metadata/file';
import { ArtifactCorruptError } from '@bfe/core';
import type { VectorDtype } from './bank-files.js';

/**
 * Where a token table's `vector` column lies in its Arrow file: one segment of consecutive
 * rows per record batch, each a contiguous little-endian `[rows × dim]` float32 or float16
 * matrix from byte `offset`. `@bfe/index`'s `fileTokenStore` takes it as its
 * `MatrixFileLayout` (same shape), so a bank's tokens can be searched without loading them.
 */
export interface VectorFileLayout {
  readonly path: string;
  readonly dim: number;
  readonly dtype: VectorDtype;
  readonly segments: ReadonlyArray<{ readonly offset: number; readonly rows: number }>;
}

/** A token table read without its vectors: the Int32 columns in memory, the vectors' layout. */
export interface TokenFileColumns {
  readonly rows: number;
  readonly metadata: Map<string, string>;
  readonly owner: Int32Array;
  readonly position: Int32Array;
  readonly tokenId: Int32Array;
  readonly vectors: VectorFileLayout;
}

const MAGIC = 'ARROW1';

/**
 * Reads a bank token table (`writeBankTables`' layout: Int32 `indexName`, `position`,
 * `token_id`, then `vector` FixedSizeList<Float32|Float16, dim>) by its footer and record
 * batch headers only: the three Int32 columns are read whole (12 bytes a token), the vectors
 * never — their byte ranges are returned instead. A truncated file, a compressed or
 * differently laid out table is refused with {@link ArtifactCorruptError}.
 */
export async function readTokenFileColumns(
  path: string,
  indexName: string,
  dim: number,
): Promise<TokenFileColumns> {
  const handle = await open(path, 'r');
  try {
    const size = (await handle.stat()).size;
    const footer = await readFooter(handle, path, size);
    const schema = footer.schema;
    const names = schema.fields.map((f) => f.name);
    const expected = [indexName, 'position', 'token_id', 'vector'];
    if (names.join() !== expected.join())
      throw new ArtifactCorruptError(`${path}: columns ${names.join(', ')}, expected ${expected}`);
    const vectorType = schema.fields[3]!.type;
    const dtype = vectorDtype(vectorType, dim, path);
    // Buffers per batch: (validity, data) × 3 Int32 columns, list validity, values validity, values.
    const batches: Array<{ rows: number; body: number; buffers: Array<[number, number]> }> = [];
    for (const block of footer.recordBatches()) {
      const meta = await readAt(handle, block.offset, block.metaDataLength, path, size);
      const view = new DataView(meta.buffer, meta.byteOffset, meta.byteLength);
      const continued = view.getInt32(0, true) === -1;
      const start = continued ? 8 : 4;
      const length = view.getInt32(continued ? 4 : 0, true);
      const message = Message.decode(meta.subarray(start, start + length));
      if (!message.isRecordBatch())
        throw new ArtifactCorruptError(`${path}: a file block is not a record batch`);
      const header = message.header();
      if (header.compression !== null)
        throw new ArtifactCorruptError(`${path}: compressed record batches are not supported`);
      if (header.buffers.length !== 9)
        throw new ArtifactCorruptError(`${path}: ${header.buffers.length} buffers in a batch`);
      const body = block.offset + block.metaDataLength;
      if (body + block.bodyLength > size)
        throw new ArtifactCorruptError(`${path}: a record batch ends past the file`);
      batches.push({
        rows: header.length,
        body,
        buffers: header.buffers.map((b) => [b.offset, b.length]),
      });
    }
    const rows = batches.reduce((n, b) => n + b.rows, 0);
    const int32 = async (buffer: number): Promise<Int32Array> => {
      const out = new Int32Array(rows);
      let at = 0;
      for (const b of batches) {
        const [offset, length] = b.buffers[buffer]!;
        if (length < b.rows * 4)
          throw new ArtifactCorruptError(`${path}: an Int32 buffer is shorter than its batch`);
        const bytes = new Uint8Array(out.buffer, at * 4, b.rows * 4);
        await readInto(handle, bytes, b.body + offset, path);
        at += b.rows;
      }
      return out;
    };
    const segments = batches.map((b) => {
      const [offset, length] = b.buffers[8]!;
      if (length < b.rows * dim * (dtype === 'float32' ? 4 : 2))
        throw new ArtifactCorruptError(`${path}: a vector buffer is shorter than its batch`);
      return { offset: b.body + offset, rows: b.rows };
    });
    return {
      rows,
      metadata: schema.metadata,
      owner: await int32(1),
      position: await int32(3),
      tokenId: await int32(5),
      vectors: { path, dim, dtype, segments },
    };
  } finally {
    await handle.close();
  }
}

/** SHA-256 of a file and its size, read in 64 MiB slices (nothing kept). */
export async function hashFile(path: string): Promise<{ sha256: string; bytes: number }> {
  const handle = await open(path, 'r');
  try {
    const hasher = createHash('sha256');
    const slice = Buffer.allocUnsafe(64 * 2 ** 20);
    let bytes = 0;
    for (;;) {
      const { bytesRead } = await handle.read(slice, 0, slice.length, bytes);
      if (bytesRead === 0) break;
      hasher.update(slice.subarray(0, bytesRead));
      bytes += bytesRead;
    }
    return { sha256: hasher.digest('hex'), bytes };
  } finally {
    await handle.close();
  }
}

async function readFooter(handle: FileHandle, path: string, size: number) {
  const corrupt = () =>
    new ArtifactCorruptError(`${path}: not a complete Arrow IPC file (magic bytes missing)`, {
      suggestion: 'The file was truncated or overwritten; delete it and rerun the stage.',
    });
  if (size < 2 * MAGIC.length + 4) throw corrupt();
  const head = await readAt(handle, 0, MAGIC.length, path, size);
  const tail = await readAt(handle, size - MAGIC.length - 4, MAGIC.length + 4, path, size);
  const text = (b: Uint8Array) => Buffer.from(b).toString('latin1');
  if (text(head) !== MAGIC || text(tail.subarray(4)) !== MAGIC) throw corrupt();
  const footerLength = new DataView(tail.buffer, tail.byteOffset, 4).getInt32(0, true);
  const footerStart = size - MAGIC.length - 4 - footerLength;
  if (footerLength <= 0 || footerStart < MAGIC.length) throw corrupt();
  try {
    return Footer.decode(await readAt(handle, footerStart, footerLength, path, size));
  } catch (cause) {
    throw new ArtifactCorruptError(`${path}: Arrow IPC footer could not be decoded`, { cause });
  }
}

function vectorDtype(type: DataType, dim: number, path: string): VectorDtype {
  const child = String(type.children?.[0]?.type);
  const listSize = (type as unknown as { listSize?: number }).listSize;
  if (!String(type).startsWith('FixedSizeList') || listSize !== dim)
    throw new ArtifactCorruptError(`${path}: column vector is ${String(type)}, expected ${dim}`);
  if (child === 'Float32') return 'float32';
  if (child === 'Float16') return 'float16';
  throw new ArtifactCorruptError(`${path}: vector values are ${child}, not Float32 or Float16`);
}

async function readAt(
  handle: FileHandle,
  position: number,
  length: number,
  path: string,
  size: number,
): Promise<Uint8Array> {
  if (position < 0 || position + length > size)
    throw new ArtifactCorruptError(`${path}: bytes ${position}..${position + length} past the end`);
  const bytes = new Uint8Array(length);
  await readInto(handle, bytes, position, path);
  return bytes;
}

async function readInto(
  handle: FileHandle,
  bytes: Uint8Array,
  position: number,
  path: string,
): Promise<void> {
  for (let done = 0; done < bytes.length;) {
    const { bytesRead } = await handle.read(bytes, done, bytes.length - done, position + done);
    if (bytesRead === 0)
      throw new ArtifactCorruptError(`${path}: ended after ${position + done} bytes`);
    done += bytesRead;
  }
}
