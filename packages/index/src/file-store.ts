import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import { z } from 'zod';
import { fromHalfInto } from './codecs/fp16.js';
import { dotsInto, scratchOffsets } from './dots.js';
import type { TokenStore } from './token-store.js';
import { lastAtMost } from './sorted.js';

/**
 * Where a row-major `[rows × dim]` matrix of float32 or float16 values lies in a file: in
 * segments of consecutive rows, each stored contiguously (little-endian) from a byte offset.
 * An Arrow IPC file's `FixedSizeList<Float32|Float16>` column is one segment per record batch
 * (`@bfe/encoder`'s bank reader computes it from the file's footer and batch headers).
 */
export interface MatrixFileLayout {
  readonly path: string;
  readonly dim: number;
  readonly dtype: 'float32' | 'float16';
  /** Runs of consecutive rows: `rows` rows stored contiguously from byte `offset`. */
  readonly segments: ReadonlyArray<{ readonly offset: number; readonly rows: number }>;
}

/** Zod schema of {@link MatrixFileLayout} (checked by {@link fileTokenStore}). */
export const matrixFileLayoutSchema = z.object({
  path: z.string().min(1),
  dim: z.number().int().positive(),
  dtype: z.enum(['float32', 'float16']),
  segments: z.array(
    z.object({ offset: z.number().int().nonnegative(), rows: z.number().int().nonnegative() }),
  ),
});

/** Options of {@link fileTokenStore}. */
/** Rows kept by {@link fileTokenStore}'s rescoring cache by default (24 MiB at d = 384). */
export const DEFAULT_CACHE_ROWS = 16_384;

export interface FileTokenStoreOptions {
  /** Rows of the rescoring cache (default {@link DEFAULT_CACHE_ROWS}). */
  readonly cacheRows?: number;
  /**
   * Counts every byte read from the file (bounded reads are tested with it): `bytes` and the
   * number of `reads` (`pread` calls).
   */
  readonly stats?: { bytes: number; reads: number };
}

/**
 * A {@link TokenStore} that reads rows by position from a file ({@link MatrixFileLayout})
 * with `pread` into reused scratch buffers: ranges for the streamed search, single rows for
 * the float64 rescoring (through a direct-mapped cache of `cacheRows` rows). Nothing but the
 * rows asked for is read, so a bank larger than RAM can be searched exactly; memory is the
 * largest range read (the search's chunk) plus the cache. Float16 files are widened to float32 on read (exactly), so scores are the
 * same as with the widened bank in memory ({@link flatTokenStore}), bit for bit.
 *
 * @example
 * const store = fileTokenStore({ path, dim: 384, dtype: 'float32', segments: [{ offset: 1024, rows: 5000 }] });
 * store.read(10, 20); // Float32Array [10 * 384], valid until the next call
 * store.close();
 */
export function fileTokenStore(
  layout: MatrixFileLayout,
  options: FileTokenStoreOptions = {},
): TokenStore & { close(): void } {
  const { path, dim, dtype, segments: all } = matrixFileLayoutSchema.parse(layout);
  const width = dtype === 'float32' ? 4 : 2;
  const rowBytes = dim * width;
  const segments = all.filter((s) => s.rows > 0);
  const starts = new Float64Array(segments.length + 1);
  for (let i = 0; i < segments.length; i++) starts[i + 1] = starts[i]! + segments[i]!.rows;
  const size = starts[segments.length]!;
  const fd = openSync(path, 'r');
  try {
    const fileSize = fstatSync(fd).size;
    for (const s of segments) {
      if (s.offset + s.rows * rowBytes > fileSize)
        throw new Error(`${path}: a segment ends past the file's ${fileSize} bytes`);
    }
  } catch (error) {
    closeSync(fd);
    throw error;
  }
  const stats = options.stats;
  let open = true;
  // Raw bytes (float16 files) and the float32 rows handed out: grown, never shrunk.
  let raw = new Uint8Array(0);
  let rows = new Float32Array(0);
  const cacheRows = Math.max(1, Math.min(options.cacheRows ?? DEFAULT_CACHE_ROWS, size || 1));
  const cache = new Float32Array(cacheRows * dim);
  const cacheTag = new Float64Array(cacheRows).fill(-1);
  // The batch a slot was last used in: a slot used in the current batch is not overwritten.
  const cacheUsed = new Float64Array(cacheRows).fill(-1);
  let epoch = 0;

  /** Segment holding row `t` (binary search over the segments' first rows). */
  const segmentOf = (t: number): number => lastAtMost(starts, t, segments.length - 1);

  /** Reads `count` rows from file position `position` into `out` at row `at`. */
  const readRows = (position: number, count: number, out: Float32Array, at: number): void => {
    if (!open) throw new Error(`${path}: the token store is closed`);
    const bytes = count * rowBytes;
    let target: Uint8Array;
    if (dtype === 'float32') {
      target = new Uint8Array(out.buffer, out.byteOffset + at * rowBytes, bytes);
    } else {
      if (raw.length < bytes) raw = new Uint8Array(Math.max(bytes, 2 * raw.length));
      target = raw;
    }
    for (let done = 0; done < bytes;) {
      const n = readSync(fd, target, done, bytes - done, position + done);
      if (n === 0) throw new Error(`${path}: ended after ${position + done} bytes`);
      done += n;
      if (stats !== undefined) {
        stats.bytes += n;
        stats.reads += 1;
      }
    }
    if (dtype === 'float16') {
      fromHalfInto(
        out.subarray(at * dim, (at + count) * dim),
        new Uint16Array(raw.buffer, 0, count * dim),
      );
    }
  };

  const checkRange = (start: number, end: number): void => {
    if (!(Number.isInteger(start) && Number.isInteger(end) && start >= 0 && end <= size)) {
      throw new RangeError(`${path}: rows ${start}..${end} are outside 0..${size}`);
    }
  };

  return {
    size,
    dim,
    read(start, end) {
      checkRange(start, end);
      const n = Math.max(0, end - start);
      if (rows.length < n * dim) rows = new Float32Array(Math.max(n * dim, 2 * rows.length));
      let t = start;
      let s = segmentOf(start);
      while (t < end) {
        const segmentEnd = Math.min(end, starts[s + 1]!);
        const from = t - starts[s]!;
        readRows(segments[s]!.offset + from * rowBytes, segmentEnd - t, rows, t - start);
        t = segmentEnd;
        s++;
      }
      return rows.subarray(0, n * dim);
    },
    dots(tokens, count, query, at, out) {
      // Rows come from a direct-mapped cache (row t in slot t mod cacheRows), read on a miss:
      // the rescoring asks for the same popular rows again and again. Rows are summed in
      // batches whose slots are distinct; a conflict flushes the batch first.
      const offsets = scratchOffsets(count);
      let from = 0;
      for (let h = 0; h < count; h++) {
        const t = tokens[h]!;
        checkRange(t, t + 1);
        const slot = t % cacheRows;
        if (cacheTag[slot] !== t) {
          if (cacheUsed[slot] === epoch) {
            const done = h - from;
            dotsInto(cache, offsets.subarray(from), done, query, at, out.subarray(from), dim);
            from = h;
            epoch++;
          }
          const s = segmentOf(t);
          readRows(segments[s]!.offset + (t - starts[s]!) * rowBytes, 1, cache, slot);
          cacheTag[slot] = t;
        }
        cacheUsed[slot] = epoch;
        offsets[h] = slot * dim;
      }
      dotsInto(cache, offsets.subarray(from), count - from, query, at, out.subarray(from), dim);
      epoch++;
    },
    close() {
      if (!open) return;
      open = false;
      closeSync(fd);
    },
  };
}
