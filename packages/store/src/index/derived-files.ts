// What the store's derived index files (HNSW graphs, IVF indexes) share: a folder of data files,
// each named by a meta file swapped in atomically; what no meta names is garbage of a save that a
// crash interrupted.
import { readFile, readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';

/**
 * Removes from `storeDir/folder` the data files (names ending in `extension`) that no meta file
 * names — `named` reads a meta's JSON and says which file it names, or undefined for a meta it
 * does not accept — and temporary files (names starting with a dot); returns them as
 * `folder/name`.
 */
export async function removeUnnamed(
  storeDir: string,
  folder: string,
  extension: string,
  named: (meta: unknown) => string | undefined,
): Promise<string[]> {
  const dir = join(storeDir, folder);
  const names = await readdir(dir).catch(() => [] as string[]);
  const kept = new Set<string>();
  for (const name of names) {
    if (!name.endsWith('.json') || name.startsWith('.')) continue;
    try {
      const file = named(JSON.parse(await readFile(join(dir, name), 'utf8')));
      if (file !== undefined) kept.add(file);
    } catch {
      // an unreadable meta names nothing; its bank's index is built again
    }
  }
  const removed = names.filter((n) => (n.endsWith(extension) ? !kept.has(n) : n.startsWith('.')));
  for (const n of removed) await rm(join(dir, n), { force: true });
  return removed.map((n) => `${folder}/${n}`);
}
