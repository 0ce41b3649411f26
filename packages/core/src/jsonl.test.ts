import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { bytesSha256 } from './hash.js';
import { readJsonl, readLines, writeJsonlAtomic } from './jsonl.js';
import { tmpDir } from './testing/index.js';

describe('readLines / readJsonl', () => {
  it('streams lines with 1-based numbers, drops a BOM, and hashes the bytes read', async () => {
    const path = join(tmpDir('bfe-jsonl-'), 'a.txt');
    const text = '\uFEFFfirst\r\nsecond\n\nlast';
    writeFileSync(path, text);
    const seen: [string, number][] = [];
    const read = await readLines(path, (t, n) => seen.push([t, n]));
    expect(seen).toEqual([
      ['first', 1],
      ['second', 2],
      ['', 3],
      ['last', 4],
    ]);
    expect(read).toEqual({ lines: 4, sha256: bytesSha256(Buffer.from(text, 'utf8')) });
  });

  it('stops on the first error thrown by the callback', async () => {
    const path = join(tmpDir('bfe-jsonl-'), 'a.txt');
    writeFileSync(path, 'a\nb\nc\n');
    const seen: number[] = [];
    await expect(
      readLines(path, (_t, n) => {
        seen.push(n);
        if (n === 2) throw new Error('line 2 is bad');
      }),
    ).rejects.toThrow('line 2 is bad');
    expect(seen).toEqual([1, 2]);
  });

  it('rejects a missing file', async () => {
    await expect(readLines(join(tmpDir('bfe-jsonl-'), 'nope'), () => undefined)).rejects.toThrow(
      /ENOENT/,
    );
  });

  it('parses JSON lines, skips blank ones, and hands malformed ones to the caller', async () => {
    const path = join(tmpDir('bfe-jsonl-'), 'a.jsonl');
    writeFileSync(path, '{"a":1}\n  \n{broken\n[2]\n');
    const records: [unknown, number][] = [];
    const bad: [string, number, string][] = [];
    const read = await readJsonl(
      path,
      (v, n) => records.push([v, n]),
      (e, n, t) => bad.push([e.name, n, t]),
    );
    expect(records).toEqual([
      [{ a: 1 }, 1],
      [[2], 4],
    ]);
    expect(bad).toEqual([['SyntaxError', 3, '{broken']]);
    expect(read.lines).toBe(4);
  });
});

describe('writeJsonlAtomic', () => {
  it('writes one JSON.stringify line per record, from sync and async iterables', async () => {
    const dir = tmpDir('bfe-jsonl-');
    const records = [{ b: 1, a: 'x' }, [1, 2], 'é', null];
    const path = join(dir, 'out.jsonl');
    expect(await writeJsonlAtomic(path, records)).toEqual({ lines: 4 });
    const expected = records.map((r) => `${JSON.stringify(r)}\n`).join('');
    expect(readFileSync(path, 'utf8')).toBe(expected);
    async function* slowly() {
      for (const r of records) {
        await Promise.resolve();
        yield r;
      }
    }
    await writeJsonlAtomic(path, slowly());
    expect(readFileSync(path, 'utf8')).toBe(expected);
    expect(await writeJsonlAtomic(path, [])).toEqual({ lines: 0 });
    expect(readFileSync(path, 'utf8')).toBe('');
  });

  it('streams more than one chunk byte-exactly', async () => {
    const path = join(tmpDir('bfe-jsonl-'), 'big.jsonl');
    const records = Array.from({ length: 5000 }, (_, i) => ({ i, text: 'ü'.repeat(i % 50) }));
    await writeJsonlAtomic(path, records);
    expect(readFileSync(path, 'utf8')).toBe(records.map((r) => `${JSON.stringify(r)}\n`).join(''));
  });

  it('a failing source leaves no partial file and keeps the old one', async () => {
    const dir = tmpDir('bfe-jsonl-');
    const path = join(dir, 'out.jsonl');
    writeFileSync(path, 'old\n');
    const boom = new Error('record 3 is invalid');
    function* failing() {
      yield { a: 1 };
      yield { a: 2 };
      throw boom;
    }
    await expect(writeJsonlAtomic(path, failing())).rejects.toBe(boom);
    expect(readdirSync(dir)).toEqual(['out.jsonl']);
    expect(readFileSync(path, 'utf8')).toBe('old\n');
    await expect(writeJsonlAtomic(join(dir, 'u.jsonl'), [undefined])).rejects.toThrow(
      'writeJsonlAtomic: record 1 has no JSON form',
    );
    expect(readdirSync(dir)).toEqual(['out.jsonl']);
  });
});
