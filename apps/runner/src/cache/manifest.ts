import { readFile } from 'node:fs/promises';
import { z } from 'zod';
import { ArtifactCorruptError, canonicalJson, contentHash, fileSha256, fsyncPath } from '@bfe/core';
import { listTree } from './fs-util.js';
import {
  MANIFEST_FILE,
  cacheManifestSchema,
  type ArtifactSpec,
  type CacheManifest,
} from './key.js';

// An artifact's `artifact.json`: made from what a compute wrote, and read back (validated).
// (Module-internal to src/cache.)

/**
 * The manifest of a finished computation in `tmpDir`: `returned` (the compute's metadata) must
 * be a JSON object; every file is fsync'd and hashed. Does not write the manifest.
 * @throws Error when the metadata is not a JSON object or the compute wrote `artifact.json`
 */
export async function buildManifest(
  spec: ArtifactSpec,
  key: string,
  tmpDir: string,
  seconds: number,
  returned: unknown,
): Promise<CacheManifest> {
  const { stage } = spec;
  const meta = z.record(z.string(), z.json()).safeParse(returned ?? {});
  if (!meta.success) {
    throw new Error(
      `${stage}: compute returned metadata that is not a JSON object:\n${z.prettifyError(meta.error)}`,
    );
  }
  const files = [];
  for (const f of await listTree(tmpDir)) {
    if (f.path === MANIFEST_FILE) {
      throw new Error(`${stage}: compute wrote ${MANIFEST_FILE}, which the store owns`);
    }
    await fsyncPath(f.absolute);
    files.push({ path: f.path, bytes: f.bytes, sha256: await fileSha256(f.absolute) });
  }
  const manifest: CacheManifest = {
    schemaVersion: 1,
    stage,
    key,
    inputs: { ...spec.inputs },
    config: JSON.parse(canonicalJson(spec.config)) as unknown,
    codeVersion: spec.version,
    files,
    createdAt: new Date().toISOString(),
    seconds,
    meta: meta.data,
  };
  return { ...manifest, manifestSha256: manifestSha256(manifest) };
}

/**
 * The manifest's own hash: SHA-256 of the canonical JSON of every field but `manifestSha256`,
 * so a same-size edit of `meta`, `seconds` or a file's recorded hash is caught on read.
 */
export function manifestSha256(manifest: CacheManifest): string {
  const body: Partial<CacheManifest> = { ...manifest };
  delete body.manifestSha256;
  return contentHash(body);
}

/**
 * Reads and validates an `artifact.json`.
 * @throws ENOENT when it is missing; ArtifactCorruptError when it is not a valid manifest
 */
export async function readManifest(path: string): Promise<CacheManifest> {
  const text = await readFile(path, 'utf8');
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (cause) {
    throw new ArtifactCorruptError(`${path} is not valid JSON`, { cause });
  }
  const parsed = cacheManifestSchema.safeParse(raw);
  if (!parsed.success) {
    throw new ArtifactCorruptError(
      `${path} is not a valid artifact manifest: ${z.prettifyError(parsed.error).replace(/\n\s*/g, ' ')}`,
    );
  }
  return parsed.data;
}
