import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import { z } from 'zod';
import { lastAtMost } from './sorted.js';

/**
 * A codec's stored codes `[tokens × bytesPerToken]`, read by position: a range for the exact
 * scan's chunks, single rows for the float64 rescoring. {@link fileCodeSource} reads them from
 * a file (`codes.bin`, or for fp32 codes the bank's own token file, whose float32 rows are the
 * codes), so the score stage never holds the codes whole.
 */
export interface CodeSource {
  readonly tokens: number;
  readonly bytesPerToken: number;
  /** Codes of tokens `start..end-1`; a view valid until the next call on the source. */
  bytes(start: number, end: number): Uint8Array;
  /** Codes of token `t` (through a row cache when read from a file); valid until the next call. */
  row(t: number): Uint8Array;
  close?(): void;
}

/** Where a codes matrix lies in a file: runs of rows, each contiguous from a byte offset. */
export interface CodeFileLayout {
  readonly path: string;
  readonly bytesPerToken: number;
  readonly segments: ReadonlyArray<{ readonly offset: number; readonly rows: number }>;
}

/** Zod schema of {@link CodeFileLayout} (checked by {@link fileCodeSource}). */
export const codeFileLayoutSchema = z.object({
  path: z.string().min(1),
  bytesPerToken: z.number().int().positive(),
  segments: z.array(
    z.object({ offset: z.number().int().nonnegative(), rows: z.number().int().nonnegative() }),
  ),
});

/** Rows kept by {@link fileCodeSource}'s row cache by default. */
export const DEFAULT_CODE_CACHE_ROWS = 16_384;

/** A {@link CodeSource} over codes in memory (views, no copies). */
export function arrayCodeSource(codes: Uint8Array, bytesPerToken: number): CodeSource {
  if (codes.length % bytesPerToken !== 0) {
    throw new Error(`${codes.length} bytes are not codes of ${bytesPerToken}`);
  }
  const tokens = codes.length / bytesPerToken;
  return {
    tokens,
    bytesPerToken,
    bytes: (start, end) => codes.subarray(start * bytesPerToken, end * bytesPerToken),
    row: (t) => codes.subarray(t * bytesPerToken, (t + 1) * bytesPerToken),
  };
}

/** `codes` as a {@link CodeSource} (an array is wrapped; a source is itself). */
export function codeSourceOf(codes: Uint8Array | CodeSource, bytesPerToken: number): CodeSource {
  return codes instanceof Uint8Array ? arrayCodeSource(codes, bytesPerToken) : codes;
}

/**
 * A {@link CodeSource} that reads codes by position from a file with `pread` (aligned scratch
 * buffers, so fp32 / fp16 codes can be viewed as typed arrays): ranges into a grown scratch,
 * rows through a direct-mapped cache of `cacheRows` rows. Memory is the largest range asked
 * for plus the cache, whatever the file's size.
 *
 * @example
 * const src = fileCodeSource({ path: 'codes.bin', bytesPerToken: 192, segments: [{ offset: 0, rows: n }] });
 * src.bytes(0, 100); // Uint8Array(100 · 192)
 * src.close();
 */
export function fileCodeSource(
  layout: CodeFileLayout,
  options: { readonly cacheRows?: number } = {},
): CodeSource & { close(): void } {
  const { path, bytesPerToken: bpt, segments: all } = codeFileLayoutSchema.parse(layout);
  const segments = all.filter((s) => s.rows > 0);
  const starts = new Float64Array(segments.length + 1);
  for (let i = 0; i < segments.length; i++) starts[i + 1] = starts[i]! + segments[i]!.rows;
  const tokens = starts[segments.length]!;
  const fd = openSync(path, 'r');
  try {
    const size = fstatSync(fd).size;
    for (const s of segments) {
      if (s.offset + s.rows * bpt > size) throw new Error(`${path}: a segment ends past its end`);
    }
  } catch (error) {
    closeSync(fd);
    throw error;
  }
  let open = true;
  // 8-byte aligned scratch (a fresh ArrayBuffer), grown, never shrunk.
  let scratch = new Uint8Array(0);
  const cacheRows = Math.max(
    1,
    Math.min(options.cacheRows ?? DEFAULT_CODE_CACHE_ROWS, tokens || 1),
  );
  const cache = new Uint8Array(cacheRows * bpt);
  const tag = new Float64Array(cacheRows).fill(-1);

  const segmentOf = (t: number): number => lastAtMost(starts, t, segments.length - 1);
  const readInto = (out: Uint8Array, at: number, position: number, count: number): void => {
    if (!open) throw new Error(`${path}: the code source is closed`);
    for (let done = 0; done < count;) {
      const n = readSync(fd, out, at + done, count - done, position + done);
      if (n === 0) throw new Error(`${path}: ended after ${position + done} bytes`);
      done += n;
    }
  };
  const check = (start: number, end: number): void => {
    if (!open) throw new Error(`${path}: the code source is closed`);
    if (!(Number.isInteger(start) && Number.isInteger(end) && start >= 0 && end <= tokens)) {
      throw new RangeError(`${path}: tokens ${start}..${end} are outside 0..${tokens}`);
    }
  };
  return {
    tokens,
    bytesPerToken: bpt,
    bytes(start, end) {
      check(start, end);
      const need = Math.max(0, end - start) * bpt;
      if (scratch.length < need) scratch = new Uint8Array(Math.max(need, 2 * scratch.length));
      let t = start;
      let s = segmentOf(start);
      while (t < end) {
        const stop = Math.min(end, starts[s + 1]!);
        const from = t - starts[s]!;
        readInto(scratch, (t - start) * bpt, segments[s]!.offset + from * bpt, (stop - t) * bpt);
        t = stop;
        s++;
      }
      return scratch.subarray(0, need);
    },
    row(t) {
      check(t, t + 1);
      const slot = t % cacheRows;
      if (tag[slot] !== t) {
        const s = segmentOf(t);
        readInto(cache, slot * bpt, segments[s]!.offset + (t - starts[s]!) * bpt, bpt);
        tag[slot] = t;
      }
      return cache.subarray(slot * bpt, (slot + 1) * bpt);
    },
    close() {
      if (!open) return;
      open = false;
      closeSync(fd);
    },
  };
}
