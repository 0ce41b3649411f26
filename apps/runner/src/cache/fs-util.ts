import { lstat, readdir } from 'node:fs/promises';
import { isAbsolute, join, normalize, sep } from 'node:path';
import { isNotFound } from './errors.js';

// File-system helpers of the artifact store (fsync lives in @bfe/core). (Module-internal to src/cache.)

/** One regular file of a directory tree, by its POSIX path relative to the root. */
export interface TreeFile {
  readonly path: string;
  readonly absolute: string;
  readonly bytes: number;
}

/**
 * Every regular file under `root`, sorted by relative path. Symbolic links and other special
 * files are refused: an artifact must be self-contained bytes.
 */
export async function listTree(root: string): Promise<TreeFile[]> {
  const out: TreeFile[] = [];
  const walk = async (dir: string, prefix: string): Promise<void> => {
    for (const entry of await readdir(dir, { withFileTypes: true })) {
      const absolute = join(dir, entry.name);
      const rel = prefix === '' ? entry.name : `${prefix}/${entry.name}`;
      if (entry.isDirectory()) await walk(absolute, rel);
      else if (entry.isFile())
        out.push({ path: rel, absolute, bytes: (await lstat(absolute)).size });
      else throw new Error(`${absolute}: artifacts may hold only regular files and directories`);
    }
  };
  await walk(root, '');
  return out.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
}

/** Total bytes of the regular files under `path` (0 when it does not exist). */
export async function treeBytes(path: string): Promise<number> {
  let info;
  try {
    info = await lstat(path);
  } catch (error) {
    if (isNotFound(error)) return 0;
    throw error;
  }
  if (!info.isDirectory()) return info.size;
  let total = 0;
  for (const entry of await readdir(path)) total += await treeBytes(join(path, entry));
  return total;
}

/** True when `path` is relative and stays inside its root once normalised. */
export function isSafeRelativePath(path: string): boolean {
  if (path === '' || isAbsolute(path)) return false;
  const n = normalize(path);
  return n !== '..' && !n.startsWith(`..${sep}`) && !n.startsWith('../');
}

/** Sleeps `ms` milliseconds. */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
