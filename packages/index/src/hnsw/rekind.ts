import { open } from 'node:fs/promises';
import { toHalfBits } from '../codecs/fp16.js';
import { hnswFileKind, KIND_CODE } from './hnsw.js';
import type { HnswScalarKind } from './hnsw.js';

/** Bytes of usearch's dense-index header (`index_dense_head_buffer_t`). */
const HEAD_BYTES = 64;
/** Byte of the scalar kind inside that header. */
const KIND_AT = 14;
/** Rows converted per read/write. */
const CHUNK_ROWS = 4096;

/**
 * usearch's own f32 → i8 cast (`cast_to_i8_gt`), bit for bit: each value times 127 over the
 * row's L2 norm (in double), clamped to ±127 and truncated toward zero; a zero row stays zero.
 */
export function castI8Into(out: Int8Array, x: Float32Array, dim: number): void {
  const rows = Math.floor(x.length / dim);
  for (let r = 0; r < rows; r++) {
    const at = r * dim;
    let s = 0;
    for (let d = 0; d < dim; d++) s += x[at + d]! * x[at + d]!;
    const magnitude = Math.sqrt(s);
    if (!(magnitude > 0)) {
      out.fill(0, at, at + dim);
      continue;
    }
    for (let d = 0; d < dim; d++) {
      const v = (x[at + d]! * 127) / magnitude;
      out[at + d] = Math.trunc(v > 127 ? 127 : v < -127 ? -127 : v);
    }
  }
}

/**
 * Writes `dst`: the usearch index file `src` (f32 vectors) with its vectors re-stored as `kind`
 * (usearch's i8 cast, {@link castI8Into}, or IEEE half floats rounded to nearest even) and the
 * graph unchanged — the links found with float32 distances, searched with the cheaper kind's
 * kernel. A file is the vectors (`u32` rows, `u32` bytes per row, the rows), the 64-byte
 * header (byte 14: the scalar kind), then the graph, which holds keys and links only. Streams
 * in pieces, so a graph larger than RAM converts too. Returns the bytes written.
 *
 * @example
 * await rekindHnswFile('all.usearch', 'all-i8.usearch', 'i8', 384); // 1/4 of the vector bytes
 * await loadHnsw('all-i8.usearch', 384, params, { kind: 'i8' });
 */
export async function rekindHnswFile(
  src: string,
  dst: string,
  kind: Exclude<HnswScalarKind, 'f32'>,
  dim: number,
): Promise<number> {
  const stored = await hnswFileKind(src);
  if (stored !== 'f32')
    throw new Error(`${src} stores ${stored ?? 'another kind of'} vectors, not f32.`);
  const input = await open(src, 'r');
  const output = await open(dst, 'w');
  try {
    const head = Buffer.alloc(8);
    await input.read(head, 0, 8, 0);
    const rows = head.readUInt32LE(0);
    if (head.readUInt32LE(4) !== dim * 4) {
      throw new Error(`${src} holds ${head.readUInt32LE(4) / 4}-dim vectors, expected ${dim}.`);
    }
    const width = kind === 'i8' ? dim : dim * 2;
    head.writeUInt32LE(width, 4);
    let written = 0;
    const write = async (bytes: Uint8Array): Promise<void> => {
      await output.write(bytes, 0, bytes.length, written);
      written += bytes.length;
    };
    await write(head);
    const f32 = new Float32Array(CHUNK_ROWS * dim);
    const raw = new Uint8Array(f32.buffer);
    const i8 = new Int8Array(CHUNK_ROWS * dim);
    const f16 = new Uint16Array(CHUNK_ROWS * dim);
    for (let r = 0; r < rows; r += CHUNK_ROWS) {
      const n = Math.min(CHUNK_ROWS, rows - r);
      const bytes = n * dim * 4;
      const { bytesRead } = await input.read(raw, 0, bytes, 8 + r * dim * 4);
      if (bytesRead !== bytes) throw new Error(`${src} ends inside its vectors.`);
      const x = f32.subarray(0, n * dim);
      if (kind === 'i8') {
        castI8Into(i8, x, dim);
        await write(new Uint8Array(i8.buffer, 0, n * dim));
      } else {
        for (let i = 0; i < n * dim; i++) f16[i] = toHalfBits(x[i]!);
        await write(new Uint8Array(f16.buffer, 0, n * dim * 2));
      }
    }
    // The header with the new scalar kind, then the graph as it is.
    let at = 8 + rows * dim * 4;
    const buffer = Buffer.alloc(1 << 22);
    const { bytesRead } = await input.read(buffer, 0, HEAD_BYTES, at);
    if (bytesRead !== HEAD_BYTES) throw new Error(`${src} ends inside its header.`);
    buffer[KIND_AT] = KIND_CODE[kind];
    await write(buffer.subarray(0, HEAD_BYTES));
    at += HEAD_BYTES;
    for (;;) {
      const { bytesRead: got } = await input.read(buffer, 0, buffer.length, at);
      if (got === 0) break;
      await write(buffer.subarray(0, got));
      at += got;
    }
    return written;
  } finally {
    await input.close();
    await output.close();
  }
}
