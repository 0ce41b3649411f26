import { ArtifactCorruptError, BfeError, toStorageErrorSync, type BfeErrorCode } from '@bfe/core';

/**
 * The runner's own error code for a cache it cannot write. It lives here, not in
 * `@bfe/core`'s {@link BfeErrorCode} union, because only the runner owns a cache; the CLI's
 * `handleError` prints any {@link BfeError}'s code, so it reads `CACHE_UNWRITABLE` and exits 2.
 */
export const CACHE_UNWRITABLE = 'CACHE_UNWRITABLE';

// Errors from the file system that mean "this directory cannot hold the cache". A full disk
// (ENOSPC, EDQUOT) is not one of them: it is a StorageError naming the path (see cacheWriteError).
const UNWRITABLE_CODES = new Set(['EACCES', 'EPERM', 'EROFS', 'ENOTDIR', 'EEXIST']);
const FULL_CODES = new Set(['ENOSPC', 'EDQUOT']);

/**
 * The cache directory cannot be created or written (permissions, a read-only file system, a
 * file in the way, a full disk). Names the directory and suggests `BFE_CACHE_DIR`.
 */
export class CacheUnwritableError extends BfeError {
  constructor(
    readonly dir: string,
    options: { cause?: unknown } = {},
  ) {
    const reason = options.cause instanceof Error ? ` (${options.cause.message})` : '';
    // The cast widens core's union by one runner-local code; see CACHE_UNWRITABLE.
    super(CACHE_UNWRITABLE as BfeErrorCode, `Cache directory ${dir} is not writable${reason}.`, {
      suggestion:
        'Set BFE_CACHE_DIR (or pass --cache-dir) to a writable directory, or fix its permissions.',
      cause: options.cause,
    });
  }
}

/** True when `error` is a file-system error that means the cache directory is unusable. */
export function isUnwritableError(error: unknown): boolean {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  return code !== undefined && UNWRITABLE_CODES.has(code);
}

/**
 * What a failed write to the cache becomes: a full disk is `@bfe/core`'s StorageError
 * (STORAGE_FULL, naming the failed path, else the cache root); an unusable directory is a
 * {@link CacheUnwritableError}; anything else is returned unchanged.
 */
export function cacheWriteError(root: string, error: unknown): unknown {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  if (code !== undefined && FULL_CODES.has(code)) return toStorageErrorSync(error, root);
  if (isUnwritableError(error) && !(error instanceof CacheUnwritableError)) {
    return new CacheUnwritableError(root, { cause: error });
  }
  return error;
}

/** True when `error` is a file-system "no such file or directory". */
export function isNotFound(error: unknown): boolean {
  return (error as NodeJS.ErrnoException | undefined)?.code === 'ENOENT';
}

/** The error of a corrupt artifact under `onCorrupt: 'throw'`: names the remedy. */
export function corruptArtifactError(
  dir: string,
  problems: readonly string[],
): ArtifactCorruptError {
  return new ArtifactCorruptError(
    `Artifact ${dir} is corrupt: ${problems.join('; ')}. Run \`bfe cache verify --quarantine\` (the next run recomputes it).`,
    {
      suggestion:
        'Run `bfe cache verify --quarantine` to move corrupt artifacts aside (the next run recomputes them), then `bfe cache gc`.',
    },
  );
}
