import { existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { tempSibling, writeDirAtomic, writeFileAtomic, writeWithHandle } from './atomic-write.js';
import { tmpDir } from './testing/index.js';

describe('writeFileAtomic', () => {
  it('writes text and bytes exactly, creating the parent, and leaves only the file', async () => {
    const dir = tmpDir('bfe-atomic-');
    const path = join(dir, 'a', 'b', 'x.json');
    await writeFileAtomic(path, 'héllo\n');
    expect(readFileSync(path, 'utf8')).toBe('héllo\n');
    const bytes = new Uint8Array([0, 255, 10, 13]);
    await writeFileAtomic(path, bytes);
    expect(new Uint8Array(readFileSync(path))).toEqual(bytes);
    expect(readdirSync(join(dir, 'a', 'b'))).toEqual(['x.json']);
  });

  it('replaces an existing file whole', async () => {
    const dir = tmpDir('bfe-atomic-');
    const path = join(dir, 'x.txt');
    writeFileSync(path, 'a much longer old content');
    await writeFileAtomic(path, 'new');
    expect(readFileSync(path, 'utf8')).toBe('new');
  });

  it('a failed write leaves no partial file and keeps the old one', async () => {
    const dir = tmpDir('bfe-atomic-');
    // The rename fails: the target is a non-empty directory.
    const target = join(dir, 'taken');
    mkdirSync(target);
    writeFileSync(join(target, 'inside'), 'x');
    await expect(writeFileAtomic(target, 'data')).rejects.toThrow(/EISDIR|ENOTEMPTY|EEXIST/);
    expect(readdirSync(dir)).toEqual(['taken']);
    // The content fails half way: the old file survives untouched, no temporary file remains.
    const path = join(dir, 'kept.txt');
    writeFileSync(path, 'old');
    const boom = new Error('boom');
    await expect(
      writeWithHandle(path, async (handle) => {
        await handle.write('partial');
        throw boom;
      }),
    ).rejects.toBe(boom);
    expect(readFileSync(path, 'utf8')).toBe('old');
    expect(readdirSync(dir).sort()).toEqual(['kept.txt', 'taken']);
  });

  it('names temporary siblings uniquely, hidden, in the same directory', () => {
    const a = tempSibling('/x/y/results.json');
    const b = tempSibling('/x/y/results.json');
    expect(a).not.toBe(b);
    expect(a).toMatch(/^\/x\/y\/\.results\.json\.\d+\.[0-9a-f]{8}\.tmp$/);
  });
});

describe('writeDirAtomic', () => {
  it('builds a directory, replaces an old one, and returns what build returned', async () => {
    const root = tmpDir('bfe-atomic-dir-');
    const dir = join(root, 'bank');
    mkdirSync(dir);
    writeFileSync(join(dir, 'stale.bin'), 'old');
    const out = await writeDirAtomic(dir, async (tmp) => {
      expect(existsSync(join(dir, 'stale.bin'))).toBe(true); // the old one is still readable
      mkdirSync(join(tmp, 'sub'));
      writeFileSync(join(tmp, 'sub', 'a.txt'), 'A');
      return 42;
    });
    expect(out).toBe(42);
    expect(readdirSync(dir)).toEqual(['sub']);
    expect(readFileSync(join(dir, 'sub', 'a.txt'), 'utf8')).toBe('A');
    expect(readdirSync(root)).toEqual(['bank']);
  });

  it('a failed build leaves nothing behind and keeps the old directory', async () => {
    const root = tmpDir('bfe-atomic-dir-');
    const dir = join(root, 'bank');
    const boom = new Error('boom');
    await expect(
      writeDirAtomic(dir, async (tmp) => {
        writeFileSync(join(tmp, 'half.bin'), 'x');
        throw boom;
      }),
    ).rejects.toBe(boom);
    expect(readdirSync(root)).toEqual([]);
    mkdirSync(dir);
    writeFileSync(join(dir, 'keep.bin'), 'k');
    await expect(writeDirAtomic(dir, () => Promise.reject(boom))).rejects.toBe(boom);
    expect(readdirSync(root)).toEqual(['bank']);
    expect(readdirSync(dir)).toEqual(['keep.bin']);
  });
});
