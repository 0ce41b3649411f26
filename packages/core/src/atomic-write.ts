import { randomBytes } from 'node:crypto';
import { mkdir, open, readdir, rename, rm, type FileHandle } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { injectedStorageFault, toStorageError } from './storage-error.js';

/**
 * A unique hidden sibling of `path` for work in progress: `.<name>.<pid>.<random>.tmp`. Same
 * directory, so the final rename never crosses a file system; hidden, so a listing of the
 * directory never shows it as a finished file.
 */
export function tempSibling(path: string): string {
  return join(
    dirname(path),
    `.${basename(path)}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`,
  );
}

/**
 * Flushes a file's or directory's data to disk. Platforms that cannot fsync a directory
 * (Windows) are tolerated: the rename that follows is still atomic there.
 * @example
 * await fsyncPath('runs/x/results.json');
 */
export async function fsyncPath(path: string): Promise<void> {
  const handle = await open(path, 'r');
  try {
    await handle.sync();
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code !== 'EISDIR' && code !== 'EPERM' && code !== 'EINVAL') throw error;
  } finally {
    await handle.close();
  }
}

/**
 * Flushes every directory of a tree, deepest first (files are flushed by whoever wrote them).
 * @example
 * await fsyncDirs(tmp); // before renaming `tmp` into place
 */
export async function fsyncDirs(root: string): Promise<void> {
  for (const entry of await readdir(root, { withFileTypes: true })) {
    if (entry.isDirectory()) await fsyncDirs(join(root, entry.name));
  }
  await fsyncPath(root);
}

/**
 * Writes a file atomically: into a temporary sibling, flushed to disk, then renamed over
 * `path`, so a reader sees the old file or the whole new one, never a part, and a crash leaves
 * no complete-looking partial file. Creates the parent directory. On failure the temporary
 * file is removed and the error rethrown; a disk-full, permission or I/O failure becomes a
 * {@link StorageError} naming `path` and the bytes needed.
 * @example
 * await writeFileAtomic('runs/x/results.json', `${JSON.stringify(results, null, 2)}\n`);
 * await writeFileAtomic('data/locomo10.json', bytes); // Uint8Array
 */
export async function writeFileAtomic(path: string, data: string | Uint8Array): Promise<void> {
  await writeWithHandle(
    path,
    async (handle) => {
      await handle.writeFile(data);
    },
    typeof data === 'string' ? Buffer.byteLength(data) : data.byteLength,
  );
}

/**
 * Writes a file atomically (as {@link writeFileAtomic}) through a callback that receives the
 * open handle of the temporary file: for content produced piece by piece (streamed lines).
 * The callback's result is returned; if it throws, nothing is left behind, and a disk-full,
 * permission or I/O failure is rethrown as a {@link StorageError} naming `path` (`needed`: the
 * bytes being written, when the caller knows them).
 * @example
 * await writeWithHandle('out.bin', async (h) => { await h.write(header); await h.write(body); });
 */
export async function writeWithHandle<T>(
  path: string,
  write: (handle: FileHandle) => Promise<T>,
  needed?: number,
): Promise<T> {
  const dir = dirname(path);
  const tmp = tempSibling(path);
  try {
    await mkdir(dir, { recursive: true });
    const handle = await open(tmp, 'w');
    let result: T;
    try {
      const fault = injectedStorageFault(path);
      if (fault !== undefined) throw fault;
      result = await write(handle);
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(tmp, path);
    await fsyncPath(dir);
    return result;
  } catch (error) {
    await rm(tmp, { force: true });
    throw await toStorageError(error, path, needed);
  }
}

/** Flushes every file and directory of a tree to disk, the root last. */
async function fsyncTree(root: string): Promise<void> {
  for (const entry of await readdir(root, { withFileTypes: true })) {
    const path = join(root, entry.name);
    if (entry.isDirectory()) await fsyncTree(path);
    else if (entry.isFile()) await fsyncPath(path);
  }
  await fsyncPath(root);
}

/**
 * Builds a directory atomically: `build` fills a fresh temporary sibling of `dir`; its files
 * and directories are flushed to disk and renamed into place, replacing whatever was at `dir` (moved aside first,
 * then deleted). An interrupted or failed build leaves no directory that looks complete; on
 * failure the temporary directory is removed and the error rethrown (a disk-full, permission
 * or I/O failure as a {@link StorageError}, with the failing file's path where Node gave one,
 * else `dir`).
 * @example
 * const manifest = await writeDirAtomic('banks/locomo', async (tmp) => {
 *   await writeBankTables(join(tmp, 'memories.arrow'), …);
 *   return manifest;
 * });
 */
export async function writeDirAtomic<T>(
  dir: string,
  build: (tmp: string) => Promise<T>,
): Promise<T> {
  const parent = dirname(dir);
  const tmp = tempSibling(dir);
  try {
    await mkdir(parent, { recursive: true });
    await mkdir(tmp);
  } catch (error) {
    throw await toStorageError(error, dir);
  }
  try {
    const result = await build(tmp);
    const fault = injectedStorageFault(dir);
    if (fault !== undefined) throw fault;
    await fsyncTree(tmp);
    const old = `${tmp}.old`;
    let replaced = false;
    try {
      await rename(dir, old);
      replaced = true;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    }
    try {
      await rename(tmp, dir);
    } catch (error) {
      if (replaced) await rename(old, dir); // put the previous directory back
      throw error;
    }
    await fsyncPath(parent);
    if (replaced) await rm(old, { recursive: true, force: true });
    return result;
  } catch (error) {
    await rm(tmp, { recursive: true, force: true });
    throw await toStorageError(error, dir);
  }
}
