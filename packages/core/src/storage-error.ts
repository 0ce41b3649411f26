import { statfs } from 'node:fs/promises';
import { dirname } from 'node:path';
import { BfeError, type BfeErrorOptions } from './errors.js';

/** The storage error codes, by what the user can do about them. */
export type StorageErrorCode = 'STORAGE_FULL' | 'STORAGE_DENIED' | 'STORAGE_IO';

// errno codes → what they mean to a user. Anything else stays a plain error (a bug).
const ERRNO_KIND: Readonly<Record<string, StorageErrorCode>> = {
  ENOSPC: 'STORAGE_FULL',
  EDQUOT: 'STORAGE_FULL',
  EFBIG: 'STORAGE_FULL',
  EACCES: 'STORAGE_DENIED',
  EPERM: 'STORAGE_DENIED',
  EROFS: 'STORAGE_DENIED',
  EIO: 'STORAGE_IO',
  EMFILE: 'STORAGE_IO',
  ENFILE: 'STORAGE_IO',
  EBADF: 'STORAGE_IO',
  ENXIO: 'STORAGE_IO',
  ESTALE: 'STORAGE_IO',
};

const WHAT: Readonly<Record<string, string>> = {
  ENOSPC: 'no space left on the device',
  EDQUOT: 'disk quota exceeded',
  EFBIG: 'file too large for the file system',
  EACCES: 'permission denied',
  EPERM: 'operation not permitted',
  EROFS: 'read-only file system',
  EIO: 'input/output error',
  EMFILE: 'too many open files in this process',
  ENFILE: 'too many open files on the system',
  EBADF: 'bad file descriptor',
  ENXIO: 'no such device',
  ESTALE: 'stale network file handle',
  ENOENT: 'cannot create the directory (a parent is missing, or the file system is read-only)',
};

const SUGGESTION: Readonly<Record<StorageErrorCode, string>> = {
  STORAGE_FULL:
    'Free space on that file system (e.g. `bfe cache gc`, or remove old runs/), or point ' +
    'BFE_CACHE_DIR / --cache-dir / --runs-dir / BFE_DATA_DIR at a larger disk, then run again.',
  STORAGE_DENIED:
    'Make the path writable for this user (or choose another with BFE_CACHE_DIR, --cache-dir, ' +
    '--runs-dir or BFE_DATA_DIR), then run again.',
  STORAGE_IO:
    'The disk or file system reported a failure; check it (dmesg, the mount, `ulimit -n` for ' +
    'open files) and run again. Nothing partial was kept.',
};

/** Where a storage error happened, and the bytes that were being written when known. */
export interface StorageErrorDetails {
  readonly path: string | undefined;
  /** errno code: ENOSPC, EACCES, … */
  readonly errno: string;
  /** The system call (`open`, `write`, `rename`, …), when known. */
  readonly syscall: string | undefined;
  /** Bytes the failed write needed, when known. */
  readonly needed: number | undefined;
  /** Bytes available to this user on the file system of `path`, when `statfs` could tell. */
  readonly available: number | undefined;
}

/**
 * A disk-full, permission or I/O failure (ENOSPC, EDQUOT, EACCES, EPERM, EROFS, EIO, EMFILE…):
 * a fault of the machine, not of bfe, named with the path and, for a full disk, the space
 * needed and the space left.
 * @example
 * new StorageError({ path: '/c/x.arrow', errno: 'ENOSPC', syscall: 'write', needed: 4096, available: 0 });
 * // STORAGE_FULL: no space left on the device (ENOSPC) writing /c/x.arrow: needs 4.0 KB, 0 B free
 */
export class StorageError extends BfeError implements StorageErrorDetails {
  readonly path: string | undefined;
  readonly errno: string;
  readonly syscall: string | undefined;
  readonly needed: number | undefined;
  readonly available: number | undefined;

  constructor(details: StorageErrorDetails, options: BfeErrorOptions = {}) {
    const code =
      ERRNO_KIND[details.errno] ?? (details.errno === 'ENOENT' ? 'STORAGE_DENIED' : 'STORAGE_IO');
    const at = details.path === undefined ? '' : ` ${verb(details.syscall)} ${details.path}`;
    const space: string[] = [];
    if (details.needed !== undefined) space.push(`needs ${formatBytes(details.needed)}`);
    if (details.available !== undefined) space.push(`${formatBytes(details.available)} free`);
    super(
      code,
      `${WHAT[details.errno] ?? details.errno} (${details.errno})${at}` +
        (space.length === 0 ? '' : `: ${space.join(', ')}`),
      { suggestion: options.suggestion ?? SUGGESTION[code], cause: options.cause },
    );
    this.path = details.path;
    this.errno = details.errno;
    this.syscall = details.syscall;
    this.needed = details.needed;
    this.available = details.available;
  }
}

/** Whether `error` is a Node errno error that {@link StorageError} stands for. */
export function isStorageErrno(error: unknown): error is NodeJS.ErrnoException {
  if (!(error instanceof Error)) return false;
  const { code, syscall } = error as NodeJS.ErrnoException;
  if (typeof code !== 'string') return false;
  // `mkdir -p` on a read-only or vanished mount reports ENOENT for a path it was asked to create.
  return Object.hasOwn(ERRNO_KIND, code) || (code === 'ENOENT' && syscall === 'mkdir');
}

/**
 * Turns a Node errno error into a {@link StorageError} (anything else is returned unchanged):
 * the path is the error's own `path` when Node set it, else `path` (streams and handles lose
 * it); for a full disk the free space is read with `statfs`.
 * @example
 * try { await handle.write(bytes); } catch (e) { throw await toStorageError(e, file, bytes.length); }
 */
export async function toStorageError(
  error: unknown,
  path?: string,
  needed?: number,
): Promise<unknown> {
  if (error instanceof StorageError || !isStorageErrno(error)) return error;
  const where = failedPath(error) ?? path;
  const errno = error.code as string;
  const available =
    ERRNO_KIND[errno] === 'STORAGE_FULL' && where !== undefined
      ? await freeBytes(where)
      : undefined;
  return new StorageError(
    { path: where, errno, syscall: error.syscall, needed, available },
    { cause: error },
  );
}

/** The same as {@link toStorageError}, without `statfs` (for a synchronous funnel). */
export function toStorageErrorSync(error: unknown, path?: string): unknown {
  if (error instanceof StorageError || !isStorageErrno(error)) return error;
  return new StorageError(
    {
      path: failedPath(error) ?? path,
      errno: error.code as string,
      syscall: error.syscall,
      needed: undefined,
      available: undefined,
    },
    { cause: error },
  );
}

// A copy or rename that fails for lack of space or a read-only target failed at its
// destination; Node puts the source in `path` and the target in `dest`.
function failedPath(error: NodeJS.ErrnoException): string | undefined {
  const dest = (error as { dest?: unknown }).dest;
  const atTarget = ['ENOSPC', 'EDQUOT', 'EFBIG', 'EROFS'].includes(error.code as string);
  return atTarget && typeof dest === 'string' ? dest : error.path;
}

/** Bytes available to an unprivileged user on the file system holding `path` (or its parent). */
async function freeBytes(path: string): Promise<number | undefined> {
  for (let p = path; ; p = dirname(p)) {
    try {
      const s = await statfs(p);
      return Number(s.bavail) * Number(s.bsize);
    } catch {
      if (dirname(p) === p) return undefined;
    }
  }
}

function verb(syscall: string | undefined): string {
  switch (syscall) {
    case 'mkdir':
      return 'at';
    case 'open':
    case 'read':
    case 'scandir':
    case 'stat':
    case 'lstat':
      return 'at';
    case 'rename':
      return 'renaming';
    case 'unlink':
    case 'rmdir':
      return 'removing';
    default:
      return 'writing';
  }
}

/** `1536` → `1.5 KB`. */
export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  const units = ['KB', 'MB', 'GB', 'TB'];
  let v = bytes / 1024;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i += 1;
  }
  return `${v.toFixed(1)} ${units[i]}`;
}

/**
 * Test failpoint: with `BFE_FAULT_ENOSPC=<substring>` set, a write whose target path contains
 * the substring fails as a full disk would (an errno error `ENOSPC`), after its temporary file
 * exists, so that the clean-up is exercised too. For tests of the no-space path where a small
 * tmpfs cannot be mounted; unset, it costs one environment lookup.
 */
export function injectedStorageFault(path: string): NodeJS.ErrnoException | undefined {
  const needle = process.env.BFE_FAULT_ENOSPC;
  if (needle === undefined || needle === '' || !path.includes(needle)) return undefined;
  const error: NodeJS.ErrnoException = new Error(
    `ENOSPC: no space left on device (injected by BFE_FAULT_ENOSPC), write`,
  );
  error.code = 'ENOSPC';
  error.errno = -28;
  error.syscall = 'write';
  return error;
}
