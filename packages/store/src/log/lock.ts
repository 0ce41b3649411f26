import { mkdir, open, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { BfeError, isProcessAlive, toStorageError } from '@bfe/core';

/** File name of the writer lock in a store directory. */
export const LOCK_FILE = 'LOCK';

/** Another live process (or another open store in this one) writes this store directory. */
export class StoreLockedError extends BfeError {
  constructor(
    readonly dir: string,
    readonly pid: number,
  ) {
    super('STORE_LOCKED', `store ${dir} is open for writing by process ${pid}`, {
      suggestion:
        'One process writes a store directory at a time: close the other store (or end that process), or share it through one process.',
    });
  }
}

/**
 * Takes the writer lock of a store directory: `LOCK` created exclusively, holding this
 * process's pid. A lock whose process is gone (a crash) is stale and taken over.
 * @throws StoreLockedError when a live process holds it (this process included)
 */
export async function acquireLock(dir: string): Promise<() => Promise<void>> {
  const path = join(dir, LOCK_FILE);
  try {
    await mkdir(dir, { recursive: true });
  } catch (error) {
    throw await toStorageError(error, dir);
  }
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      const handle = await open(path, 'wx');
      try {
        await handle.writeFile(`${process.pid}\n`);
        await handle.sync();
      } finally {
        await handle.close();
      }
      return () => rm(path, { force: true });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST')
        throw await toStorageError(error, path);
    }
    const pid = Number.parseInt(await readFile(path, 'utf8').catch(() => ''), 10);
    // An empty lock is a writer killed between creating and filling it.
    if (Number.isInteger(pid) && pid > 0 && isProcessAlive(pid))
      throw new StoreLockedError(dir, pid);
    await rm(path, { force: true });
  }
  throw new StoreLockedError(dir, -1);
}
