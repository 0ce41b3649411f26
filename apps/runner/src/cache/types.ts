import { resolve } from 'node:path';
import type { ArtifactMeta, CacheManifest } from './key.js';
import type { RemoteCacheClient } from './remote-client.js';

// The cache's public vocabulary: where it lives, the options of `ArtifactStore`, the events it
// reports and the shapes its methods return. `store.ts` holds the class itself.

/** The environment variable that moves the cache. */
export const CACHE_DIR_ENV = 'BFE_CACHE_DIR';

/** The cache directory, relative to the working directory, when nothing else is given. */
export const DEFAULT_CACHE_DIR = '.bfe-cache';

/** Default lock staleness: a lock not refreshed for this long belongs to a dead process. */
export const DEFAULT_STALE_MS = 30_000;

/** Where to find the cache: see {@link resolveCacheRoot}. */
export interface CacheRootOptions {
  /** An explicit directory (e.g. `--cache-dir`); wins over the environment. */
  readonly root?: string | undefined;
  readonly env?: NodeJS.ProcessEnv | undefined;
  /** Base of relative paths and of the default (default `process.cwd()`). */
  readonly cwd?: string | undefined;
}

/**
 * The cache root: an explicit `root`, else `$BFE_CACHE_DIR`, else `.bfe-cache/` in the working
 * directory; relative paths are taken from `cwd`.
 * @example resolveCacheRoot({ env: { BFE_CACHE_DIR: '/scratch/c' } }) // '/scratch/c'
 */
export function resolveCacheRoot(options: CacheRootOptions = {}): string {
  const cwd = options.cwd ?? process.cwd();
  if (options.root !== undefined && options.root !== '') return resolve(cwd, options.root);
  const fromEnv = (options.env ?? process.env)[CACHE_DIR_ENV];
  if (fromEnv !== undefined && fromEnv !== '') return resolve(cwd, fromEnv);
  return resolve(cwd, DEFAULT_CACHE_DIR);
}

/** What the store reports while it works; library code never prints. */
export type CacheEvent =
  | { readonly kind: 'hit'; readonly stage: string; readonly key: string }
  /**
   * Another process holds the key's lock; this call waits for it. `pid` is the holder's (null
   * when it recorded none), `alive` whether it still runs (null: unknown), `staleInSeconds`
   * when its lock goes stale unless refreshed, so a dead holder's lock is taken over then.
   */
  | {
      readonly kind: 'wait';
      readonly stage: string;
      readonly key: string;
      readonly lock: string;
      readonly pid: number | null;
      readonly alive: boolean | null;
      readonly staleInSeconds: number | null;
    }
  | { readonly kind: 'compute'; readonly stage: string; readonly key: string }
  /** A local miss found on the team server, downloaded and verified (`bytes`: its files). */
  | {
      readonly kind: 'remote-hit';
      readonly stage: string;
      readonly key: string;
      readonly bytes: number;
    }
  /** A computed artifact sent to the team server (`sent` of `parts` were new to it). */
  | {
      readonly kind: 'uploaded';
      readonly stage: string;
      readonly key: string;
      readonly bytes: number;
      readonly parts: number;
      readonly sent: number;
    }
  | {
      readonly kind: 'stored';
      readonly stage: string;
      readonly key: string;
      readonly seconds: number;
    }
  /** A corrupt artifact was quarantined, or a lock was taken over. */
  | {
      readonly kind: 'warning';
      readonly stage: string;
      readonly key: string;
      readonly message: string;
    };

/** Options of {@link ArtifactStore.open}. */
export interface ArtifactStoreOptions extends CacheRootOptions {
  /**
   * Create the cache's folders and check that they can be written (default true). `false`
   * opens an existing cache, or none, as is: for `bfe cache ls`, `verify` and `gc`.
   */
  readonly create?: boolean | undefined;
  /**
   * Re-hash every file on each hit (default false: files of 1 MiB or more that this process
   * has already verified, by path, size, mtime and inode, are not hashed again; smaller files
   * always are).
   */
  readonly verify?: boolean | undefined;
  /**
   * What a corrupt artifact found on read becomes: `'recompute'` (default) moves it to
   * `quarantine/`, reports a warning and computes it again; `'throw'` raises
   * `ArtifactCorruptError`.
   */
  readonly onCorrupt?: 'recompute' | 'throw' | undefined;
  /** Lock staleness in ms (default {@link DEFAULT_STALE_MS}; at least 2000). */
  readonly staleMs?: number | undefined;
  /**
   * While a computation runs, SIGINT/SIGTERM remove its temporary directory and lock and exit
   * 130/143 (default true; see {@link installSignalCleanup}).
   */
  readonly exitOnSignal?: boolean | undefined;
  /**
   * The team cache (Turborepo's `/v8/artifacts` protocol): a local miss is looked up there
   * before computing, and what this store computes is uploaded. Downloads are verified like a
   * local hit, every file hashed; one that does not check out is refused (a warning) and
   * computed. Build it with `remoteCacheFromEnv` and check it with `preflight()` first.
   */
  readonly remote?: RemoteCacheClient | undefined;
  /** Progress and warnings. Without it, warnings go to `process.emitWarning`. */
  readonly onEvent?: ((event: CacheEvent) => void) | undefined;
  /**
   * Fault injection for tests: called at `before-publish:<stage>` (the manifest written, not
   * yet renamed into place) and `after-publish:<stage>` (renamed, the lock still held).
   */
  readonly failpoint?: ((point: string) => void) | undefined;
}

/** What a compute function is told. */
export interface ComputeContext {
  readonly stage: string;
  readonly key: string;
}

/**
 * Writes an artifact's files into `tmpDir` (an empty directory of its own) and returns JSON
 * metadata for the manifest, or nothing. It must not write `artifact.json`.
 */
export type ComputeFn = (
  tmpDir: string,
  context: ComputeContext,
) => Promise<ArtifactMeta | undefined | void>;

/** Options of {@link ArtifactStore.getOrCreate}. */
export interface GetOrCreateOptions {
  /** Full SHA-256 check on a hit (default: the store's `verify`). */
  readonly verify?: boolean | undefined;
}

/** The outcome of {@link ArtifactStore.getOrCreate}. */
export interface ArtifactResult {
  readonly key: string;
  /** The artifact directory: the files the compute wrote, plus `artifact.json`. */
  readonly dir: string;
  /** True when this call did not compute: the artifact was there, or another process made it. */
  readonly cached: boolean;
  /**
   * Where it came from: this cache (`local`, also when another process made it meanwhile), the
   * team server (`remote`), or this call's compute (`computed`).
   */
  readonly source: 'local' | 'remote' | 'computed';
  /** Wall time of this call, waits included (the compute's own time is `manifest.seconds`). */
  readonly seconds: number;
  /** Seconds of that spent waiting for another process's lock on the key. */
  readonly waitSeconds: number;
  readonly manifest: CacheManifest;
}

/** One artifact in the store, as {@link ArtifactStore.list} sees it. */
export interface ArtifactEntry {
  readonly stage: string;
  readonly key: string;
  readonly dir: string;
  /** Bytes of the listed files (of the whole directory when the manifest is unreadable). */
  readonly bytes: number;
  readonly files: number;
  readonly codeVersion: string | null;
  readonly createdAt: string | null;
  /** When a `getOrCreate` last returned it (or created it). */
  readonly lastUsedAt: string;
  /** False when `artifact.json` is missing or invalid. */
  readonly manifestOk: boolean;
}

/** A corrupt artifact found by {@link ArtifactStore.verify}. */
export interface CorruptArtifact {
  readonly stage: string;
  readonly key: string;
  readonly dir: string;
  readonly problems: readonly string[];
  /** Where it was moved with `quarantine: true` (null when not moved). */
  readonly quarantinedTo: string | null;
}

/** What {@link ArtifactStore.verify} found. */
export interface VerifyReport {
  readonly root: string;
  readonly checked: number;
  readonly bytes: number;
  readonly corrupt: readonly CorruptArtifact[];
}

/** Options of {@link ArtifactStore.verify}. */
export interface VerifyOptions {
  /** Move corrupt artifacts to `quarantine/`, so the next run recomputes them. */
  readonly quarantine?: boolean | undefined;
  readonly onProgress?: ((done: number, total: number) => void) | undefined;
}

/** Options of {@link ArtifactStore.gc}. */
export interface GcOptions {
  /** Also remove artifacts not used for more than this many days (default: keep all). */
  readonly keepDays?: number | undefined;
  /** Report what would be removed; remove nothing. */
  readonly dryRun?: boolean | undefined;
  /** The present, for tests (default now). */
  readonly now?: Date | undefined;
}

/** One thing {@link ArtifactStore.gc} removed (or would remove). */
export interface GcItem {
  readonly kind: 'tmp' | 'lock' | 'lease' | 'quarantine' | 'artifact' | 'run';
  readonly path: string;
  readonly bytes: number;
  readonly reason: string;
}

/** What {@link ArtifactStore.gc} did. */
export interface GcReport {
  readonly root: string;
  readonly dryRun: boolean;
  readonly removed: readonly GcItem[];
  readonly bytes: number;
  /** Artifacts left in place. */
  readonly kept: number;
  /** Things skipped because a live process holds their lock or leases them. */
  readonly busy: readonly string[];
}
