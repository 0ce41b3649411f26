import { createHash, type Hash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { configure } from 'safe-stable-stringify';

// Sorted keys, no whitespace, and a thrown error (not a placeholder) for values JSON cannot hold.
const stringify = configure({
  deterministic: true,
  strict: true,
  circularValue: Error,
  bigint: false,
});

/** Canonical JSON: sorted keys, no whitespace, so equal values hash equal. */
export function canonicalJson(value: unknown): string {
  const text = stringify(value);
  if (text === undefined) {
    throw new Error(`canonicalJson: value of type ${typeof value} has no JSON form`);
  }
  return text;
}

/**
 * Stable SHA-256 (hex) of a JSON value.
 * @example contentHash({ b: 1, a: [1, 2] }) === contentHash({ a: [1, 2], b: 1 }) // true
 */
export function contentHash(value: unknown): string {
  return createHash('sha256').update(canonicalJson(value)).digest('hex');
}

/**
 * Streams many records into one hash without building one large string: each record's
 * canonical JSON followed by a newline. The order of records matters.
 */
export class RecordHasher {
  readonly #hash: Hash = createHash('sha256');
  #count = 0;

  add(record: unknown): this {
    this.#hash.update(canonicalJson(record));
    this.#hash.update('\n');
    this.#count += 1;
    return this;
  }

  get count(): number {
    return this.#count;
  }

  digest(): string {
    return this.#hash.digest('hex');
  }
}

/** SHA-256 (hex) of a file's bytes, streamed. */
export async function fileSha256(path: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

/** SHA-256 (hex) of bytes in memory. */
export function bytesSha256(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex');
}
