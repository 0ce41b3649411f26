import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import { z } from 'zod';
import { ArtifactCorruptError, readArrowFile } from '@bfe/core';
import { codecModelSchema, decodeTokens, type CodecModel } from '@bfe/index';
import type { Data, Table } from 'apache-arrow';
import type { SegmentCodes, SegmentRows } from './segment-rows.js';
import type { MemoryMeta } from '../types.js';

/**
 * Byte positions, in a segment file, of the columns an open reads — the ids (their Utf8 offsets
 * and bytes), the write sequences and the token offsets — so a store opens by reading these
 * few bytes of each segment, never the whole file (the manifest keeps them).
 */
export const segmentDirectorySchema = z.strictObject({
  idOffsets: z.number().int().nonnegative(),
  idBytes: z.number().int().nonnegative(),
  idLength: z.number().int().nonnegative(),
  seqs: z.number().int().nonnegative(),
  tokenOffsets: z.number().int().nonnegative(),
});
export type SegmentDirectory = z.infer<typeof segmentDirectorySchema>;

/** What an open keeps of a segment: its rows' ids, write sequences and token offsets. */
export interface SegmentKeys {
  readonly ids: string[];
  readonly seqs: Float64Array;
  /** `[rows + 1]`, from 0. */
  readonly tokenOffsets: Int32Array;
}

function column(table: Table, name: string): Data | undefined {
  return table.batches[0]?.getChild(name)?.data[0];
}

/** The file position of `view`'s first byte, `view` being a view into `file`'s buffer. */
function positionIn(file: Uint8Array, view: ArrayBufferView, path: string): number {
  if (view.buffer !== file.buffer)
    throw new Error(`segment ${path}: a column was copied while decoding; cannot locate it`);
  return view.byteOffset - file.byteOffset;
}

/** Where the open-time columns of segment bytes `file` lie (see {@link SegmentDirectory}). */
export function directoryOf(file: Uint8Array, path: string): SegmentDirectory {
  const table = readArrowFile(file, path);
  const n = table.numRows;
  const id = column(table, 'id')!;
  const seq = column(table, 'seq')!;
  const tokens = column(table, 'token_ids')!;
  const idOffsets = id.valueOffsets.subarray(id.offset, id.offset + n + 1);
  const first = idOffsets[0]!;
  const last = idOffsets[n]!;
  return {
    idOffsets: positionIn(file, idOffsets, path),
    idBytes: positionIn(file, id.values.subarray(first, last), path),
    idLength: last - first,
    seqs: positionIn(file, (seq.values as Float64Array).subarray(seq.offset, seq.offset + n), path),
    tokenOffsets: positionIn(
      file,
      tokens.valueOffsets.subarray(tokens.offset, tokens.offset + n + 1),
      path,
    ),
  };
}

function readAt(fd: number, position: number, length: number, path: string): Uint8Array {
  const out = new Uint8Array(length);
  let done = 0;
  while (done < length) {
    const got = readSync(fd, out, done, length - done, position + done);
    if (got === 0) throw corrupt(path, `it ends before byte ${position + length}`);
    done += got;
  }
  return out;
}

function corrupt(path: string, why: string): ArtifactCorruptError {
  return new ArtifactCorruptError(`store segment ${path} is corrupt: ${why}`, {
    suggestion: 'Run `bfe store verify` on the store; restore the directory from a backup.',
  });
}

/**
 * Reads the ids, write sequences and token offsets of a `rows`-row segment of `bytes` bytes at
 * the positions its directory names (a few small reads), checking their shape; the rest of the
 * file is read when the bank is searched (and its SHA-256 checked then).
 * @throws ArtifactCorruptError when the file is missing, of another size, or the columns are
 *   not well formed
 */
export function readSegmentKeys(
  path: string,
  rows: number,
  bytes: number,
  dir: SegmentDirectory,
): SegmentKeys {
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT')
      throw corrupt(path, 'the file is missing');
    throw error;
  }
  try {
    const size = fstatSync(fd).size;
    if (size !== bytes) throw corrupt(path, `${size} bytes, the manifest says ${bytes}`);
    const int32 = (position: number, count: number): Int32Array =>
      new Int32Array(readAt(fd, position, count * 4, path).buffer);
    const idOffsets = int32(dir.idOffsets, rows + 1);
    const idBytes = readAt(fd, dir.idBytes, dir.idLength, path);
    const seqs = new Float64Array(readAt(fd, dir.seqs, rows * 8, path).buffer);
    const listOffsets = int32(dir.tokenOffsets, rows + 1);
    const decoder = new TextDecoder('utf-8', { fatal: true });
    const ids: string[] = new Array<string>(rows);
    const base = idOffsets[0]!;
    const tokenOffsets = new Int32Array(rows + 1);
    for (let i = 0; i < rows; i++) {
      const from = idOffsets[i]! - base;
      const to = idOffsets[i + 1]! - base;
      if (from < 0 || to < from || to > dir.idLength) throw corrupt(path, 'its id offsets');
      ids[i] = decoder.decode(idBytes.subarray(from, to));
      tokenOffsets[i + 1] = listOffsets[i + 1]! - listOffsets[0]!;
      if (tokenOffsets[i + 1]! < tokenOffsets[i]!) throw corrupt(path, 'its token offsets');
    }
    return { ids, seqs, tokenOffsets };
  } catch (error) {
    if (error instanceof ArtifactCorruptError) throw error;
    throw new ArtifactCorruptError(`store segment ${path} could not be read by parts`, {
      cause: error,
    });
  } finally {
    closeSync(fd);
  }
}

/** The codec models a format-2 segment names in its schema metadata (none for format 1). */
function codecsOf(table: Table, dim: number, path: string): CodecModel[] | undefined {
  const text = table.schema.metadata.get('bfe.codec');
  if (text === undefined) return undefined;
  const parsed = z.array(codecModelSchema).min(1).safeParse(JSON.parse(text));
  if (!parsed.success || parsed.data.some((m) => m.dim !== dim || m.codeDim !== dim))
    throw corrupt(path, 'its bfe.codec metadata is not a list of codecs of the store');
  return parsed.data as CodecModel[];
}

/** Decodes each row's tokens with its block's model, runs of rows of one block at a time. */
function decodeBlocks(
  coded: SegmentCodes,
  offsets: Int32Array,
  dim: number,
  path: string,
): Float32Array {
  const n = coded.blocks.length;
  const out = new Float32Array(offsets[n]! * dim);
  let row = 0;
  while (row < n) {
    const block = coded.blocks[row]!;
    let end = row + 1;
    while (end < n && coded.blocks[end] === block) end++;
    const model = coded.models[block];
    if (model === undefined) throw corrupt(path, `row ${row} names codec block ${block}`);
    const from = offsets[row]!;
    const to = offsets[end]!;
    decodeTokens(model, coded.codes, from, to, out.subarray(from * dim, to * dim));
    row = end;
  }
  return out;
}

/** The rows of a checked segment table, token states decoded to float32 (no copy for fp32). */
export function decodeSegment(table: Table, bank: string, dim: number, path: string): SegmentRows {
  const batch = table.batches[0]!;
  const col = (name: string): Data => {
    const child = column(table, name);
    if (child === undefined) throw corrupt(path, `it has no column ${name}`);
    return child;
  };
  const n = table.numRows;
  const strings = (name: string): string[] => batch.getChild(name)!.toArray() as string[];
  const metaColumn = batch.getChild('meta')!;
  const metas: (MemoryMeta | undefined)[] = new Array<MemoryMeta | undefined>(n);
  for (let i = 0; i < n; i++) {
    const m = metaColumn.get(i) as string | null;
    metas[i] = m === null ? undefined : (JSON.parse(m) as MemoryMeta);
  }
  const models = codecsOf(table, dim, path);
  const vectors = col(models === undefined ? 'token_vectors' : 'token_codes');
  const offsets = vectors.valueOffsets.subarray(vectors.offset, vectors.offset + n + 1);
  const base = offsets[0]!;
  const tokens = offsets[n]! - base;
  const pooledData = col('pooled');
  const pooled = (pooledData.children[0]!.values as Float32Array).subarray(
    pooledData.offset * dim,
    (pooledData.offset + n) * dim,
  );
  const child = vectors.children[0]!;
  const tokenOffsets = new Int32Array(n + 1);
  for (let i = 0; i <= n; i++) tokenOffsets[i] = offsets[i]! - base;
  let tokenVectors: () => Float32Array;
  let coded: SegmentCodes | undefined;
  if (models === undefined) {
    const raw = (child.children[0]!.values as Float32Array).subarray(
      (child.offset + base) * dim,
      (child.offset + base + tokens) * dim,
    );
    tokenVectors = () => raw;
  } else {
    const width = models[0]!.bytesPerToken;
    const codes = (child.values as Uint8Array).subarray(
      (child.offset + base) * width,
      (child.offset + base + tokens) * width,
    );
    // Without the column (a segment of one model) every row is of block 0.
    const blockData = column(table, 'codec_block');
    const blocks =
      blockData === undefined
        ? new Uint16Array(n)
        : (blockData.values as Uint16Array).subarray(blockData.offset, blockData.offset + n);
    const c: SegmentCodes = { models, blocks, codes };
    coded = c;
    // Decoded at first use: reading a memory's text or metadata decodes no token.
    let decoded: Float32Array | undefined;
    tokenVectors = () =>
      (decoded ??=
        models.length === 1 && models[0]!.name === 'fp32' && codes.byteOffset % 4 === 0
          ? new Float32Array(codes.buffer, codes.byteOffset, tokens * dim)
          : decodeBlocks(c, tokenOffsets, dim, path));
  }
  const listValues = (name: string): Int32Array => {
    const d = col(name);
    const c = d.children[0]!;
    return (c.values as Int32Array).subarray(c.offset + base, c.offset + base + tokens);
  };
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
      get tokenVectors() {
        return tokenVectors();
      },
      tokenIds: listValues('token_ids'),
      tokenPositions: listValues('token_positions'),
      truncated: (truncData.values as Uint8Array).subarray(truncData.offset, truncData.offset + n),
    },
    ...(coded === undefined ? {} : { codes: coded }),
  };
}
