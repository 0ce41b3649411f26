import { readFile, readdir } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { contentHash } from '@bfe/core';

const require = createRequire(import.meta.url);
const cache = new Map<string, Promise<string>>();

/** The workspace packages whose code a stage runs. */
export type CodePackage =
  | '@bfe/core'
  | '@bfe/datasets'
  | '@bfe/split'
  | '@bfe/models'
  | '@bfe/encoder'
  | '@bfe/index'
  | '@bfe/scorer'
  | '@bfe/adapter'
  | '@bfe/eval';

/**
 * The version of a stage's code: SHA-256 over the source (or built) files of the packages it
 * runs and of the runner's own modules it names, excluding tests. Any edit to that code changes
 * the stage's cache keys, so a cached artifact is never served by code that would compute it
 * differently; edits elsewhere (another stage, the report, docs) leave it valid.
 *
 * @example
 * await codeVersion(['@bfe/core', '@bfe/split'], ['experiment/stages/split.ts']); // 'a1b2…'
 */
export async function codeVersion(
  packages: readonly CodePackage[],
  runnerFiles: readonly string[] = [],
): Promise<string> {
  const parts = await Promise.all([
    ...packages.map((p) => packageHash(p)),
    ...runnerFiles.map((f) => fileHash(join(runnerRoot(), f))),
  ]);
  return contentHash({ packages, runnerFiles, parts });
}

function runnerRoot(): string {
  // This file is <runner>/src/experiment/code-version.ts (or dist/experiment/…).
  return dirname(dirname(fileURLToPath(import.meta.url)));
}

function packageHash(name: CodePackage): Promise<string> {
  let hash = cache.get(name);
  if (hash === undefined) {
    // The resolved entry (src/index.ts under the @bfe/source condition, else dist/index.js).
    const root = dirname(require.resolve(name));
    hash = treeHash(root);
    cache.set(name, hash);
  }
  return hash;
}

async function fileHash(path: string): Promise<string> {
  return contentHash({ text: await readFile(path, 'utf8') });
}

async function treeHash(root: string): Promise<string> {
  const entries = await readdir(root, { recursive: true, withFileTypes: true });
  const files = entries
    .filter((e) => e.isFile() && /\.(ts|js|json)$/.test(e.name) && !/\.test\.(ts|js)$/.test(e.name))
    .map((e) => relative(root, join(e.parentPath, e.name)).split(sep).join('/'))
    .filter((f) => !f.startsWith('testing/'))
    .sort();
  const hashes = await Promise.all(files.map((f) => fileHash(join(root, f))));
  return contentHash(files.map((f, i) => [f, hashes[i]]));
}
