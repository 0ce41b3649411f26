import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DataError } from './errors.js';
import { readLines } from './jsonl.js';
import { Utf8Check, decodeUtf8Strict } from './utf8.js';
import { tmpDir } from './testing/index.js';

const enc = (s: string): Uint8Array => new TextEncoder().encode(s);

describe('UTF-8 is refused, never replaced', () => {
  it('decodes valid UTF-8 (multi-byte, U+FFFD written as such) unchanged', () => {
    expect(decodeUtf8Strict(enc('héllo � 日本 😀'), 'f')).toBe('héllo � 日本 😀');
  });

  it('names the file, the byte, its offset and its line', () => {
    const bytes = new Uint8Array([...enc('ok\nline two é\n'), 0xff, ...enc('x\n')]);
    expect(() => decodeUtf8Strict(bytes, 'corpus.jsonl')).toThrow(
      /corpus\.jsonl: not valid UTF-8: byte 0xff at byte offset 15 \(line 3\)/,
    );
  });

  it('finds a bad sequence split across chunks, and a truncated one at the end', () => {
    const check = new Utf8Check('f');
    const bytes = enc('aé'); // 61 c3 a9
    check.push(bytes.subarray(0, 2)); // ends inside é
    expect(() => check.push(new Uint8Array([0x41]))).toThrow(/byte 0xc3 at byte offset 1/);
    const end = new Utf8Check('g');
    end.push(bytes.subarray(0, 2));
    expect(() => end.end()).toThrow(/g: not valid UTF-8: a truncated sequence/);
  });

  it('readLines refuses a Latin-1 file with a DataError instead of U+FFFD lines', async () => {
    const dir = tmpDir('bfe-utf8-');
    const path = join(dir, 'queries.jsonl');
    writeFileSync(
      path,
      Buffer.concat([
        Buffer.from('{"id":"a","text":"caf'),
        Buffer.from([0xe9]),
        Buffer.from('"}\n'),
      ]),
    );
    const seen: string[] = [];
    const error = await readLines(path, (t) => seen.push(t)).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DataError);
    expect((error as DataError).message).toContain(`${path}: not valid UTF-8`);
    expect(seen.some((t) => t.includes('\uFFFD'))).toBe(false);
  });

  it('readLines still reads large valid files across chunk boundaries', async () => {
    const dir = tmpDir('bfe-utf8-');
    const path = join(dir, 'big.txt');
    const line = 'ééé😀日本語\n';
    writeFileSync(path, line.repeat(20_000)); // > 64 KiB: several chunks, sequences split
    let n = 0;
    const r = await readLines(path, (t) => {
      if (t === line.trimEnd()) n += 1;
    });
    expect(n).toBe(20_000);
    expect(r.lines).toBe(20_000);
  });
});
