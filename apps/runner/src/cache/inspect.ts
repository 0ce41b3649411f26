import { readdir, stat } from 'node:fs/promises';
import type { Stats } from 'node:fs';
import { join } from 'node:path';
import { ArtifactCorruptError, fileSha256 } from '@bfe/core';
import { isNotFound } from './errors.js';
import { isSafeRelativePath } from './fs-util.js';
import { KEY_PATTERN, MANIFEST_FILE, artifactKey, type CacheManifest } from './key.js';
import { manifestSha256, readManifest } from './manifest.js';

// Reading the store without changing it: checking one artifact against its manifest, and
// finding every artifact directory. (Module-internal to src/cache.)

/** What {@link inspectArtifact} found in one artifact directory. */
export type Inspection =
  | { readonly state: 'ok'; readonly manifest: CacheManifest }
  | { readonly state: 'missing' }
  | { readonly state: 'corrupt'; readonly problems: readonly string[] };

/** One artifact directory under `objects/`, found by {@link listArtifactDirs}. */
export interface ArtifactDir {
  readonly stage: string;
  readonly key: string;
  readonly dir: string;
}

// Files at least this large are hashed once per process: a verified (path, size, mtime, inode)
// is remembered with its SHA-256, so a second hit on the same bank in one process does not read
// it again. Smaller files (every JSON artifact) are hashed on every hit.
const MEMO_MIN_BYTES = 1 << 20;
const verifiedInProcess = new Map<string, string>();

/**
 * SHA-256 of `path`, hashing it again unless `memo` and the same file (path, size, mtime, inode)
 * was hashed earlier in this process.
 */
async function sha256Of(path: string, info: Stats, memo: boolean): Promise<string> {
  const id = `${path}\0${info.size}\0${info.mtimeMs}\0${info.ino}`;
  if (memo && info.size >= MEMO_MIN_BYTES) {
    const known = verifiedInProcess.get(id);
    if (known !== undefined) return known;
  }
  const sha = await fileSha256(path);
  if (info.size >= MEMO_MIN_BYTES) verifiedInProcess.set(id, sha);
  return sha;
}

/**
 * Checks one artifact directory against its manifest: the manifest's own hash and key, every
 * listed file's size and SHA-256. With `full` every file is hashed again; without it (a cache
 * hit) files of 1 MiB or more already verified in this process are not read twice.
 */
export async function inspectArtifact(
  dir: string,
  stage: string,
  key: string,
  full: boolean,
): Promise<Inspection> {
  const manifestPath = join(dir, MANIFEST_FILE);
  let manifest: CacheManifest;
  try {
    manifest = await readManifest(manifestPath);
  } catch (error) {
    if (isNotFound(error)) {
      const there = await stat(dir).then(
        () => true,
        (e: unknown) => (isNotFound(e) ? false : Promise.reject(e)),
      );
      if (!there) return { state: 'missing' };
      return { state: 'corrupt', problems: [`${manifestPath} is missing`] };
    }
    if (error instanceof ArtifactCorruptError)
      return { state: 'corrupt', problems: [error.message] };
    throw error;
  }
  const problems: string[] = [];
  if (manifest.key !== key) problems.push(`${manifestPath} names key ${manifest.key}`);
  if (manifest.stage !== stage) problems.push(`${manifestPath} names stage ${manifest.stage}`);
  let recomputed: string | undefined;
  try {
    recomputed = artifactKey({
      stage: manifest.stage,
      version: manifest.codeVersion,
      config: manifest.config,
      inputs: manifest.inputs,
    });
  } catch {
    recomputed = undefined;
  }
  if (
    manifest.manifestSha256 !== undefined &&
    manifestSha256(manifest) !== manifest.manifestSha256
  ) {
    problems.push(`${manifestPath} does not hash to its manifestSha256 (edited or corrupt)`);
  }
  if (recomputed !== key) {
    problems.push(`${manifestPath}: stage, version, config and inputs do not hash to ${key}`);
  }
  for (const f of manifest.files) {
    if (!isSafeRelativePath(f.path) || f.path === MANIFEST_FILE) {
      problems.push(`${manifestPath} lists an invalid path ${f.path}`);
      continue;
    }
    const path = join(dir, f.path);
    const info = await stat(path).catch((e: unknown) =>
      isNotFound(e) ? undefined : Promise.reject(e),
    );
    if (info === undefined || !info.isFile()) {
      problems.push(`${path} is missing`);
      continue;
    }
    if (info.size !== f.bytes) {
      problems.push(`${path} has ${info.size} bytes, the manifest says ${f.bytes}`);
      continue;
    }
    const actual = await sha256Of(path, info, !full);
    if (actual !== f.sha256) {
      problems.push(`${path} has SHA-256 ${actual}, the manifest says ${f.sha256}`);
    }
  }
  return problems.length === 0 ? { state: 'ok', manifest } : { state: 'corrupt', problems };
}

/** The names in `dir`, or none when it does not exist. */
export async function readdirOrEmpty(dir: string): Promise<string[]> {
  try {
    return await readdir(dir);
  } catch (error) {
    if (isNotFound(error)) return [];
    throw error;
  }
}

/** Every `objects/<stage>/<key>/` directory whose name is a key, sorted by stage then key. */
export async function listArtifactDirs(objectsDir: string): Promise<ArtifactDir[]> {
  const out: ArtifactDir[] = [];
  for (const stage of (await readdirOrEmpty(objectsDir)).sort()) {
    for (const key of (await readdirOrEmpty(join(objectsDir, stage))).sort()) {
      if (KEY_PATTERN.test(key)) out.push({ stage, key, dir: join(objectsDir, stage, key) });
    }
  }
  return out;
}
