import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { writeDirAtomic, writeFileAtomic } from './atomic-write.js';
import { BfeError } from './errors.js';
import { writeJsonlAtomic } from './jsonl.js';
import { StorageError, formatBytes, toStorageError, toStorageErrorSync } from './storage-error.js';
import { tmpDir } from './testing/index.js';

function errno(code: string, extra: Partial<NodeJS.ErrnoException> = {}): NodeJS.ErrnoException {
  return Object.assign(new Error(`${code}: something`), { code, ...extra });
}

afterEach(() => {
  delete process.env.BFE_FAULT_ENOSPC;
});

describe('StorageError', () => {
  it.each([
    ['ENOSPC', 'STORAGE_FULL'],
    ['EDQUOT', 'STORAGE_FULL'],
    ['EACCES', 'STORAGE_DENIED'],
    ['EPERM', 'STORAGE_DENIED'],
    ['EROFS', 'STORAGE_DENIED'],
    ['EIO', 'STORAGE_IO'],
    ['EMFILE', 'STORAGE_IO'],
  ])('maps %s to %s, naming the path, with a suggestion', (code, expected) => {
    const e = toStorageErrorSync(errno(code, { path: '/x/y.json', syscall: 'open' }));
    expect(e).toBeInstanceOf(StorageError);
    expect(e).toBeInstanceOf(BfeError);
    expect((e as StorageError).code).toBe(expected);
    expect((e as StorageError).message).toContain('/x/y.json');
    expect((e as StorageError).message).toContain(code);
    expect((e as StorageError).suggestion).toBeTruthy();
  });

  it('leaves other errors alone (ENOENT, plain errors)', () => {
    const enoent = errno('ENOENT');
    expect(toStorageErrorSync(enoent)).toBe(enoent);
    const plain = new TypeError('x');
    expect(toStorageErrorSync(plain)).toBe(plain);
  });

  it('uses the given path when Node gave none, and reads the free space for a full disk', async () => {
    const dir = tmpDir('bfe-storage-');
    const e = (await toStorageError(
      errno('ENOSPC', { syscall: 'write' }),
      join(dir, 'f'),
      2048,
    )) as StorageError;
    expect(e.path).toBe(join(dir, 'f'));
    expect(e.needed).toBe(2048);
    expect(typeof e.available).toBe('number');
    expect(e.message).toMatch(/writing .*\/f: needs 2\.0 KB, .* free/);
  });

  it('formats byte counts', () => {
    expect(formatBytes(12)).toBe('12 B');
    expect(formatBytes(1536)).toBe('1.5 KB');
    expect(formatBytes(3 * 1024 * 1024)).toBe('3.0 MB');
  });
});

describe('atomic writes under a full disk (BFE_FAULT_ENOSPC failpoint)', () => {
  it('writeFileAtomic throws STORAGE_FULL naming the file and leaves nothing', async () => {
    const dir = tmpDir('bfe-storage-');
    process.env.BFE_FAULT_ENOSPC = 'results.json';
    const target = join(dir, 'results.json');
    const error = await writeFileAtomic(target, 'x'.repeat(100)).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StorageError);
    expect((error as StorageError).code).toBe('STORAGE_FULL');
    expect((error as StorageError).path).toBe(target);
    expect((error as StorageError).needed).toBe(100);
    expect(readdirSync(dir)).toEqual([]);
  });

  it('writeJsonlAtomic and writeDirAtomic leave no temporary file or folder', async () => {
    const dir = tmpDir('bfe-storage-');
    process.env.BFE_FAULT_ENOSPC = 'out';
    await expect(writeJsonlAtomic(join(dir, 'out.jsonl'), [{ a: 1 }])).rejects.toBeInstanceOf(
      StorageError,
    );
    const error = await writeDirAtomic(join(dir, 'out-dir'), async (tmp) => {
      await writeFileAtomic(join(tmp, 'a.bin'), new Uint8Array(8));
    }).catch((e: unknown) => e);
    expect((error as StorageError).code).toBe('STORAGE_FULL');
    expect(readdirSync(dir)).toEqual([]);
    expect(existsSync(join(dir, 'out-dir'))).toBe(false);
  });

  it('a real permission error keeps the path Node gave (EACCES on a read-only folder)', async () => {
    if (process.getuid?.() === 0) {
      // root ignores file modes; the mapping itself is covered above
      const e = toStorageErrorSync(errno('EACCES', { path: '/ro/x', syscall: 'open' }));
      expect((e as StorageError).code).toBe('STORAGE_DENIED');
      return;
    }
    const { chmodSync } = await import('node:fs');
    const dir = tmpDir('bfe-storage-');
    chmodSync(dir, 0o500);
    const error = await writeFileAtomic(join(dir, 'x.json'), '{}').catch((e: unknown) => e);
    chmodSync(dir, 0o700);
    expect((error as StorageError).code).toBe('STORAGE_DENIED');
    expect((error as StorageError).message).toContain(dir);
  });
});
