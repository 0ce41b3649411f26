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
  /**
   * Codes of `tokens[0..count)` in their order, `[count × bytesPerToken]`, into `out`. A file
   * source reads ascending tokens (an exhaustive pass over a candidate set's tokens) in runs,
   * tokens at most {@link GATHER_GAP_BYTES} apart in one read, so such a pass costs a read per
   * run, not per token; others (a row's scattered proposals) a token at a time through its
   * row cache. Absent: {@link row} a token at a time.
   */
  rows?(tokens: ArrayLike<number>, count: number, out: Uint8Array): void;
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

/**
 * The largest gap in bytes between two tokens {@link CodeSource.rows} reads in one call: a
 * page. Reading the gap's bytes (from the page cache, or the disk block that holds both)
 * costs less than a second system call.
 */
export const GATHER_GAP_BYTES = 4096;

/** The most bytes one of {@link CodeSource.rows}'s reads spans. */
const GATHER_RUN_BYTES = 1 << 20;

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
  options: {
    readonly cacheRows?: number;
    /** Counts every byte read from the file and the number of reads (`pread` calls). */
    readonly stats?: { bytes: number; reads: number };
  } = {},
): CodeSource & { close(): void; rows: NonNullable<CodeSource['rows']> } {
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

  const stats = options.stats;
  // rows(): the scratch a run is read into.
  let run = new Uint8Array(0);
  const gapRows = Math.max(1, Math.floor(GATHER_GAP_BYTES / bpt));
  const runRows = Math.max(1, Math.floor(GATHER_RUN_BYTES / bpt));

  const segmentOf = (t: number): number => lastAtMost(starts, t, segments.length - 1);
  const readInto = (out: Uint8Array, at: number, position: number, count: number): void => {
    if (!open) throw new Error(`${path}: the code source is closed`);
    for (let done = 0; done < count;) {
      const n = readSync(fd, out, at + done, count - done, position + done);
      if (n === 0) throw new Error(`${path}: ended after ${position + done} bytes`);
      done += n;
      if (stats !== undefined) {
        stats.bytes += n;
        stats.reads += 1;
      }
    }
  };
  const cached = (t: number): boolean => tag[t % cacheRows] === t;
  /** Row `t`'s codes from `bytes` at `from` into the cache. */
  const keep = (t: number, bytes: Uint8Array, from: number): void => {
    const slot = t % cacheRows;
    cache.set(bytes.subarray(from, from + bpt), slot * bpt);
    tag[slot] = t;
  };
  const check = (start: number, end: number): void => {
    if (!open) throw new Error(`${path}: the code source is closed`);
    if (!(Number.isInteger(start) && Number.isInteger(end) && start >= 0 && end <= tokens)) {
      throw new RangeError(`${path}: tokens ${start}..${end} are outside 0..${tokens}`);
    }
  };
  const row = (t: number): Uint8Array => {
    check(t, t + 1);
    const slot = t % cacheRows;
    if (tag[slot] !== t) {
      const s = segmentOf(t);
      readInto(cache, slot * bpt, segments[s]!.offset + (t - starts[s]!) * bpt, bpt);
      tag[slot] = t;
    }
    return cache.subarray(slot * bpt, (slot + 1) * bpt);
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
    row,
    rows(tokens, count, out) {
      if (out.length < count * bpt) {
        throw new RangeError(`${path}: ${out.length} bytes cannot hold ${count} rows`);
      }
      let ascending = true;
      for (let h = 0; h < count; h++) {
        const t = tokens[h]!;
        check(t, t + 1);
        if (h > 0 && t < tokens[h - 1]!) ascending = false;
      }
      if (!ascending) {
        for (let h = 0; h < count; h++) out.set(row(tokens[h]!), h * bpt);
        return;
      }
      for (let i = 0; i < count;) {
        const first = tokens[i]!;
        if (cached(first)) {
          out.set(row(first), i++ * bpt);
          continue;
        }
        // A run: the uncached tokens from `first` on, each within gapRows of the one before,
        // in one segment and at most runRows long.
        const s = segmentOf(first);
        const segmentEnd = starts[s + 1]!;
        let last = first;
        for (let j = i; j < count; j++) {
          const t = tokens[j]!;
          if (t - last > gapRows || t >= segmentEnd || t - first >= runRows) break;
          if (!cached(t)) last = t;
        }
        const span = (last - first + 1) * bpt;
        if (run.length < span) run = new Uint8Array(Math.max(span, 2 * run.length));
        readInto(run, 0, segments[s]!.offset + (first - starts[s]!) * bpt, span);
        for (; i < count && tokens[i]! <= last; i++) {
          const t = tokens[i]!;
          out.set(run.subarray((t - first) * bpt, (t - first + 1) * bpt), i * bpt);
          keep(t, run, (t - first) * bpt);
        }
      }
    },
    close() {
      if (!open) return;
      open = false;
      closeSync(fd);
    },
  };
}
