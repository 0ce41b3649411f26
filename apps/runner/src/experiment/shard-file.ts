import { endianness } from 'node:os';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import type { EncodedChunk } from '@bfe/encoder';

// The files of one slice of a sharded encode (`bfe run --shard i/n`): the encoder's chunks of
// that slice, exactly as `encodePass` yielded them, one binary file per chunk plus
// `shard.json`. Assembling the slices in order feeds the bank writer the same chunks a single
// pass would, so the bank's files, and its content hash, are the same bytes.

/** The index of a slice's files. */
export const SHARD_FILE = 'shard.json';

const shardIndexSchema = z.strictObject({
  format: z.literal('bfe-encode-shard/1'),
  shard: z.strictObject({ index: z.int().min(0), count: z.int().positive() }),
  chunkSize: z.int().positive(),
  /** Memory rows [start, end) of the slice. */
  start: z.int().min(0),
  end: z.int().min(0),
  chunks: z.array(
    z.strictObject({
      file: z.string().regex(/^chunk-\d{9}\.bin$/),
      start: z.int().min(0),
      count: z.int().positive(),
      dim: z.int().positive(),
      tokens: z.int().min(0),
    }),
  ),
});
/** `shard.json`. */
export type ShardIndex = z.infer<typeof shardIndexSchema>;

function assertLittleEndian(): void {
  // Typed arrays are written in the platform's byte order; every supported platform is LE.
  if (endianness() !== 'LE') throw new Error('sharded encode files need a little-endian platform');
}

/** Bytes of a chunk's arrays, in file order. */
function parts(c: EncodedChunk): Uint8Array[] {
  const u8 = (a: ArrayBufferView) => new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
  return [
    c.pooled,
    c.nTokens,
    c.tokenOwner,
    c.tokenPosition,
    c.tokenId,
    c.tokenVectors,
    c.truncated,
  ].map(u8);
}

/**
 * Writes a slice's chunks into `dir`: `chunk-<start>.bin` each (pooled f32, nTokens i32,
 * tokenOwner i32, tokenPosition i32, tokenId i32, tokenVectors f32, truncated u8) and
 * `shard.json`. `offset` is added to each chunk's `start` and `tokenOwner` (the slice was
 * encoded on its own, so its indices start at 0).
 */
export async function writeShard(
  dir: string,
  header: Omit<ShardIndex, 'format' | 'chunks'>,
  chunks: AsyncIterable<EncodedChunk>,
): Promise<ShardIndex> {
  assertLittleEndian();
  const index: ShardIndex = { format: 'bfe-encode-shard/1', ...header, chunks: [] };
  for await (const local of chunks) {
    const start = local.start + header.start;
    const owner = new Int32Array(local.tokenOwner.length);
    for (let i = 0; i < owner.length; i++) owner[i] = local.tokenOwner[i]! + header.start;
    const c: EncodedChunk = { ...local, start, tokenOwner: owner };
    const file = `chunk-${String(start).padStart(9, '0')}.bin`;
    await writeFile(join(dir, file), Buffer.concat(parts(c)));
    index.chunks.push({ file, start, count: c.count, dim: c.dim, tokens: owner.length });
  }
  await writeFile(join(dir, SHARD_FILE), `${JSON.stringify(index, null, 2)}\n`);
  return index;
}

/** Reads `shard.json` of a slice. */
export async function readShardIndex(dir: string): Promise<ShardIndex> {
  return shardIndexSchema.parse(JSON.parse(await readFile(join(dir, SHARD_FILE), 'utf8')));
}

/** A copy of `bytes[at, at + n)` as its own (aligned) buffer. */
function slice(buf: Buffer, at: number, n: number): ArrayBuffer {
  return buf.buffer.slice(buf.byteOffset + at, buf.byteOffset + at + n) as ArrayBuffer;
}

/** The chunks of one slice, in order, read back from `dir`. */
export async function* readShardChunks(
  dir: string,
  index: ShardIndex,
): AsyncGenerator<EncodedChunk> {
  assertLittleEndian();
  for (const meta of index.chunks) {
    const buf = await readFile(join(dir, meta.file));
    const { count, dim, tokens } = meta;
    const sizes = [
      count * dim * 4,
      count * 4,
      tokens * 4,
      tokens * 4,
      tokens * 4,
      tokens * dim * 4,
      count,
    ];
    const total = sizes.reduce((s, n) => s + n, 0);
    if (buf.length !== total) {
      throw new Error(`${meta.file}: ${buf.length} bytes, expected ${total} for its counts`);
    }
    const at: number[] = [];
    sizes.reduce((off, n) => (at.push(off), off + n), 0);
    yield {
      start: meta.start,
      count,
      dim,
      pooled: new Float32Array(slice(buf, at[0]!, sizes[0]!)),
      nTokens: new Int32Array(slice(buf, at[1]!, sizes[1]!)),
      tokenOwner: new Int32Array(slice(buf, at[2]!, sizes[2]!)),
      tokenPosition: new Int32Array(slice(buf, at[3]!, sizes[3]!)),
      tokenId: new Int32Array(slice(buf, at[4]!, sizes[4]!)),
      tokenVectors: new Float32Array(slice(buf, at[5]!, sizes[5]!)),
      truncated: new Uint8Array(slice(buf, at[6]!, sizes[6]!)),
    };
  }
}
