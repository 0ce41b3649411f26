import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import { createInterface } from 'node:readline';
import { writeWithHandle } from './atomic-write.js';
import { Utf8Check } from './utf8.js';

/** What {@link readLines} and {@link readJsonl} read. */
export interface LinesRead {
  /** Lines seen, blank ones included (the last line number). */
  readonly lines: number;
  /** SHA-256 (hex) of the file's bytes, hashed from the same stream the lines came from. */
  readonly sha256: string;
}

/**
 * Streams a text file's lines (1-based numbers, `\n` or `\r\n` ends), never holding the file
 * as one string, so large files (MLDR's corpus) read in constant memory. A UTF-8 byte order
 * mark before the first line is dropped. Returns the line count and the SHA-256 of exactly the
 * bytes read. Bytes that are not valid UTF-8 are refused, not replaced by U+FFFD: a
 * `DataError` names the file, the byte offset and the line ({@link Utf8Check}). If `onLine`
 * throws, reading stops, the file is closed and the error propagates.
 * @example
 * const { sha256 } = await readLines('qrels.tsv', (text, line) => rows.push(text.split('\t')));
 */
export async function readLines(
  path: string,
  onLine: (text: string, line: number) => void,
): Promise<LinesRead> {
  const hash = createHash('sha256');
  const input = createReadStream(path);
  const utf8 = new Utf8Check(path);
  let invalid: unknown;
  input.on('data', (chunk) => {
    hash.update(chunk);
    if (invalid !== undefined) return;
    try {
      utf8.push(chunk as Buffer);
    } catch (error) {
      invalid = error;
      input.destroy(); // ends the lines; the loop below throws `invalid`
    }
  });
  let line = 0;
  try {
    // readline forwards read errors of its input to the async iterator.
    const lines = createInterface({ input, crlfDelay: Infinity });
    for await (const raw of lines) {
      if (invalid !== undefined) break;
      line += 1;
      onLine(line === 1 ? raw.replace(/^\uFEFF/, '') : raw, line);
    }
    if (invalid !== undefined) throw invalid;
    utf8.end();
  } catch (error) {
    throw invalid ?? error;
  } finally {
    input.destroy();
  }
  return { lines: line, sha256: hash.digest('hex') };
}

/**
 * Streams a JSON Lines file ({@link readLines}): each non-blank line is parsed and handed to
 * `onRecord`; a line that is not JSON goes to `onMalformed` with the parser's error, so the
 * caller decides whether that is a reported issue or a thrown error.
 * @example
 * await readJsonl('corpus.jsonl', (value, line) => docs.push(value), (error, line) => {
 *   report.issue({ file: 'corpus.jsonl', record: `line ${line}`, path: '', message: error.message });
 * });
 */
export async function readJsonl(
  path: string,
  onRecord: (value: unknown, line: number) => void,
  onMalformed: (error: SyntaxError, line: number, text: string) => void,
): Promise<LinesRead> {
  return readLines(path, (text, line) => {
    if (text.trim() === '') return;
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch (error) {
      onMalformed(error as SyntaxError, line, text);
      return;
    }
    onRecord(value, line);
  });
}

// Lines are gathered into chunks of about this many characters before each write.
const CHUNK_CHARS = 1 << 16;

/**
 * Writes records as JSON Lines (`JSON.stringify(record)` then `\n`, one per record) atomically
 * (see {@link writeWithHandle}): streamed in chunks, awaiting each write, so a large or
 * asynchronously produced sequence never sits in memory whole. If `records` throws (a caller
 * validating as it yields), nothing is left behind and the error propagates unchanged.
 * @throws Error when a record has no JSON form (`undefined`, a function).
 * @example
 * await writeJsonlAtomic('runs/x/per-query.jsonl', lines); // { lines: lines.length }
 */
export async function writeJsonlAtomic(
  path: string,
  records: Iterable<unknown> | AsyncIterable<unknown>,
): Promise<{ lines: number }> {
  return writeWithHandle(path, async (handle) => {
    let count = 0;
    let pending = '';
    for await (const record of records) {
      const text = JSON.stringify(record) as string | undefined;
      if (text === undefined) {
        throw new Error(`writeJsonlAtomic: record ${count + 1} has no JSON form`);
      }
      count += 1;
      pending += `${text}\n`;
      if (pending.length >= CHUNK_CHARS) {
        await writeAll(handle, pending);
        pending = '';
      }
    }
    if (pending !== '') await writeAll(handle, pending);
    return { lines: count };
  });
}

async function writeAll(handle: FileHandle, text: string): Promise<void> {
  const bytes = Buffer.from(text, 'utf8');
  let offset = 0;
  while (offset < bytes.length) {
    const { bytesWritten } = await handle.write(bytes, offset, bytes.length - offset);
    offset += bytesWritten;
  }
}
