import { mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { isAbsolute, join, relative } from 'node:path';
import { afterAll, beforeAll, onTestFinished } from 'vitest';

// Resolved once: on macOS os.tmpdir() is a symbolic link, and the guard compares real paths.
const tmpRoot = realpathSync(tmpdir());

/** Removes a directory made here; refuses anything that is not strictly inside the temp root. */
function remove(dir: string): void {
  const rel = relative(tmpRoot, dir);
  if (rel === '' || rel.startsWith('..') || isAbsolute(rel)) {
    throw new Error(`refusing to remove ${dir}: not inside ${tmpRoot}`);
  }
  rmSync(dir, { recursive: true, force: true });
}

/**
 * A fresh directory under `os.tmpdir()` for the running test, removed when the test ends
 * (passed, failed or timed out). Call it inside a test or a `beforeEach`.
 * @example
 * it('writes atomically', async () => {
 *   const dir = tmpDir('bfe-files-'); // '/tmp/bfe-files-Xa81Qz'
 *   await writeFileAtomic(join(dir, 'a.json'), '{}');
 * });
 */
export function tmpDir(prefix = 'bfe-test-'): string {
  const dir = mkdtempSync(join(tmpRoot, prefix));
  onTestFinished(() => remove(dir));
  return dir;
}

/**
 * A directory under `os.tmpdir()` shared by every test of the enclosing `describe` (or file):
 * made in `beforeAll`, removed in `afterAll`. Call it at suite level; read the path through
 * the returned function inside hooks and tests.
 * @example
 * const root = suiteTmpDir('bfe-real-');
 * it('fetches', async () => { await fetchDataset('locomo', { dataDir: root() }); });
 */
export function suiteTmpDir(prefix = 'bfe-test-'): () => string {
  let dir: string | undefined;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpRoot, prefix));
  });
  afterAll(() => {
    if (dir !== undefined) remove(dir);
    dir = undefined;
  });
  return () => {
    if (dir === undefined) throw new Error('suiteTmpDir: read the directory inside a hook or test');
    return dir;
  };
}
