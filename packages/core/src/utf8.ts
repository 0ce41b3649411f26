import { DataError } from './errors.js';

const SUGGESTION =
  'Re-encode the file as UTF-8 (e.g. `iconv -f latin1 -t utf-8 in > out`). bfe refuses ' +
  'non-UTF-8 input rather than replace bytes with U+FFFD, which would change the texts encoded.';

/**
 * Checks a byte stream for valid UTF-8 as it is read, chunk by chunk, with the platform's
 * fatal `TextDecoder` (fast); only when it fails is the first bad byte located, for the message.
 * Input is refused, never repaired: a replaced byte would silently change a memory's text.
 * @example
 * const check = new Utf8Check('corpus.jsonl');
 * stream.on('data', (chunk) => check.push(chunk)); // throws DataError at the first bad byte
 * check.end();
 */
export class Utf8Check {
  readonly #decoder = new TextDecoder('utf-8', { fatal: true });
  #offset = 0;
  #lines = 1;
  #tail: Uint8Array = new Uint8Array(0);

  constructor(readonly file: string) {}

  /** Checks the next chunk. @throws {DataError} naming the file, byte offset and line. */
  push(chunk: Uint8Array): void {
    try {
      this.#decoder.decode(chunk, { stream: true });
    } catch {
      throw this.#locate(chunk);
    }
    this.#lines += countNewlines(chunk, chunk.length);
    this.#offset += chunk.length;
    this.#tail = chunk.subarray(Math.max(0, chunk.length - 3));
  }

  /** Ends the stream: a sequence cut off at the end of the file is an error too. */
  end(): void {
    try {
      this.#decoder.decode();
    } catch {
      throw this.#error(this.#offset - this.#tail.length, 'a truncated sequence at the end');
    }
  }

  // Re-decodes byte by byte from the start of the last (possibly split) sequence of the
  // previous chunk to find the first byte the decoder refuses. Runs only on invalid input.
  #locate(chunk: Uint8Array): DataError {
    let start = this.#tail.length;
    while (start > 0 && ((this.#tail[start - 1] as number) & 0xc0) === 0x80) start -= 1;
    if (start > 0) start -= 1;
    const bytes = new Uint8Array(this.#tail.length - start + chunk.length);
    bytes.set(this.#tail.subarray(start), 0);
    bytes.set(chunk, this.#tail.length - start);
    const base = this.#offset - (this.#tail.length - start);
    const probe = new TextDecoder('utf-8', { fatal: true });
    for (let i = 0; i < bytes.length; i++) {
      try {
        probe.decode(bytes.subarray(i, i + 1), { stream: true });
      } catch {
        // The bad sequence starts at an unfinished lead byte just before i, if there is one.
        let j = i;
        for (let k = i - 1; k >= Math.max(0, i - 3); k--) {
          const b = bytes[k] as number;
          if (b >= 0xc0) {
            j = k;
            break;
          }
          if ((b & 0xc0) !== 0x80) break;
        }
        if (j !== i) i = j;
        const at = base + i;
        const inChunk = at - this.#offset;
        const line = this.#lines + (inChunk > 0 ? countNewlines(chunk, inChunk) : 0);
        const hex = (bytes[i] as number).toString(16).padStart(2, '0');
        return this.#error(at, `byte 0x${hex}`, line);
      }
    }
    return this.#error(base, 'an invalid sequence');
  }

  #error(offset: number, what: string, line = this.#lines): DataError {
    return new DataError(
      `${this.file}: not valid UTF-8: ${what} at byte offset ${offset} (line ${line})`,
      { file: this.file, suggestion: SUGGESTION },
    );
  }
}

/**
 * Decodes a whole file's bytes as UTF-8, refusing invalid input (see {@link Utf8Check}).
 * @throws {DataError} naming the file, the first bad byte, its offset and its line.
 * @example
 * decodeUtf8Strict(await readFile(path), path); // string
 */
export function decodeUtf8Strict(bytes: Uint8Array, file: string): string {
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    const check = new Utf8Check(file);
    check.push(bytes);
    check.end();
    throw new Error(`decodeUtf8Strict: ${file} failed to decode but no bad byte was found`);
  }
}

function countNewlines(bytes: Uint8Array, end: number): number {
  let n = 0;
  for (let i = 0; i < end; i++) if (bytes[i] === 0x0a) n += 1;
  return n;
}
