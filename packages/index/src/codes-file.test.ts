import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readCodesFile } from './codes-file.js';

describe('readCodesFile', () => {
  it('reads every byte into a fresh array, and refuses a missing file', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'codes-file-'));
    try {
      const bytes = Uint8Array.from({ length: 100_003 }, (_, i) => (i * 31) % 256);
      await writeFile(join(dir, 'codes.bin'), bytes);
      const read = await readCodesFile(join(dir, 'codes.bin'));
      expect(read).toEqual(bytes);
      expect(read.byteOffset).toBe(0);
      await expect(readCodesFile(join(dir, 'none.bin'))).rejects.toThrow();
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
