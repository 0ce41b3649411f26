import { randomBytes } from 'node:crypto';
import {
  mkdir,
  mkdtemp,
  readFile,
  readdir,
  rename,
  rm,
  stat,
  utimes,
  writeFile,
} from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { check, lock } from 'proper-lockfile';
import { z } from 'zod';
import { ArtifactCorruptError, canonicalJson, fileSha256, fsyncDirs, fsyncPath } from '@bfe/core';
import { CacheUnwritableError, isNotFound, isUnwritableError } from './errors.js';
import { isSafeRelativePath, listTree, sleep, treeBytes } from './fs-util.js';
import {
  KEY_PATTERN,
  MANIFEST_FILE,
  artifactKey,
  cacheManifestSchema,
  type ArtifactMeta,
  type ArtifactSpec,
  type CacheManifest,
} from './key.js';
import { installSignalCleanup, trackInFlight, type HeldLock } from './signals.js';

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
  /** Another process (or call) holds the key's lock; this call waits for it. */
  | { readonly kind: 'wait'; readonly stage: string; readonly key: string; readonly lock: string }
  | { readonly kind: 'compute'; readonly stage: string; readonly key: string }
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
  /** Re-hash every file (SHA-256) on each hit instead of comparing sizes (default false). */
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
  /** Progress and warnings. Without it, warnings go to `process.emitWarning`. */
  readonly onEvent?: ((event: CacheEvent) => void) | undefined;
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
  /** Wall time of this call (the compute's own time is `manifest.seconds`). */
  readonly seconds: number;
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
  readonly kind: 'tmp' | 'lock' | 'quarantine' | 'artifact';
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
  /** Things skipped because a live process holds their lock. */
  readonly busy: readonly string[];
}

type Inspection =
  | { readonly state: 'ok'; readonly manifest: CacheManifest }
  | { readonly state: 'missing' }
  | { readonly state: 'corrupt'; readonly problems: readonly string[] };

/** A lock this process holds on one key. */
interface Held extends HeldLock {
  release: () => Promise<void>;
}

// One pending getOrCreate per lock path in this process: a second call for the same key waits
// for the first instead of polling the lock, then finds the artifact (or computes if it failed).
const pendingByLock = new Map<string, Promise<unknown>>();

const TMP_NAME = /^([0-9a-f]{64})\./;
const LOCK_NAME = /^([0-9a-f]{64})\.lock$/;

/**
 * A content-addressed store of stage artifacts. Layout under the root:
 * `objects/<stage>/<key>/` (the files a stage wrote plus `artifact.json`, whose mtime records
 * the last use), `locks/<key>.lock` (proper-lockfile lock directories), `tmp/` (artifacts
 * being computed) and `quarantine/` (corrupt artifacts moved aside).
 *
 * @example
 * const store = await ArtifactStore.open(); // .bfe-cache/, or $BFE_CACHE_DIR
 * const bank = await store.getOrCreate(
 *   { stage: 'encode', version: '3', config: { model, dtype }, inputs: { data: benchmarkHash(b) } },
 *   async (tmpDir) => {
 *     await encodeInto(tmpDir); // memories.arrow, queries.arrow …
 *     return { memories: 5882 };
 *   },
 * );
 * bank.dir; // …/objects/encode/9c1f…/  (bank.cached: false the first time, true after)
 * const scores = await store.getOrCreate(
 *   { stage: 'score', version: '1', config: { k: 10 }, inputs: { bank: bank.key } },
 *   async (tmpDir) => { await scoreInto(bank.dir, tmpDir); },
 * );
 */
export class ArtifactStore {
  readonly root: string;
  readonly objectsDir: string;
  readonly locksDir: string;
  readonly tmpDir: string;
  readonly quarantineDir: string;
  readonly #verify: boolean;
  readonly #onCorrupt: 'recompute' | 'throw';
  readonly #staleMs: number;
  readonly #exitOnSignal: boolean;
  readonly #onEvent: ((event: CacheEvent) => void) | undefined;
  #dirsReady: Promise<void> | undefined;

  private constructor(root: string, options: ArtifactStoreOptions) {
    this.root = root;
    this.objectsDir = join(root, 'objects');
    this.locksDir = join(root, 'locks');
    this.tmpDir = join(root, 'tmp');
    this.quarantineDir = join(root, 'quarantine');
    this.#verify = options.verify ?? false;
    this.#onCorrupt = options.onCorrupt ?? 'recompute';
    this.#staleMs = Math.max(options.staleMs ?? DEFAULT_STALE_MS, 2000);
    this.#exitOnSignal = options.exitOnSignal ?? true;
    this.#onEvent = options.onEvent;
  }

  /**
   * Opens the store at {@link resolveCacheRoot}; unless `create: false`, creates its folders
   * and checks it can write there.
   * @throws CacheUnwritableError (code `CACHE_UNWRITABLE`) naming the directory
   */
  static async open(options: ArtifactStoreOptions = {}): Promise<ArtifactStore> {
    const store = new ArtifactStore(resolveCacheRoot(options), options);
    if (options.create ?? true) {
      await store.#ensureDirs();
      const probe = join(store.tmpDir, `.probe-${process.pid}-${randomBytes(4).toString('hex')}`);
      await store.#writing(async () => {
        await writeFile(probe, '');
        await rm(probe, { force: true });
      });
    }
    return store;
  }

  /** The directory artifact `key` of `stage` has (or would have). */
  artifactDir(stage: string, key: string): string {
    return join(this.objectsDir, stage, key);
  }

  /**
   * Returns the artifact of `spec`, computing it on a miss. On a hit the artifact is checked
   * (manifest valid, every file present with its size; SHA-256 too with `verify`) and its
   * last use recorded. On a miss the key's lock is taken (waiting while another process holds
   * it), the store is checked again (that process may have just made it: `cached: true`), and
   * `compute` writes into a fresh directory under `tmp/`, which gets its manifest, is flushed
   * to disk and renamed into place. A compute that throws leaves nothing behind and its error
   * propagates. A corrupt artifact is quarantined and recomputed (see `onCorrupt`).
   *
   * @throws CacheUnwritableError when the cache cannot be written
   * @throws ArtifactCorruptError only with `onCorrupt: 'throw'`
   */
  async getOrCreate(
    spec: ArtifactSpec,
    compute: ComputeFn,
    options: GetOrCreateOptions = {},
  ): Promise<ArtifactResult> {
    const key = artifactKey(spec);
    const lockFile = join(this.locksDir, key);
    for (;;) {
      const pending = pendingByLock.get(lockFile);
      if (pending === undefined) break;
      await pending.catch(() => undefined);
    }
    const run = this.#getOrCreate(spec, key, compute, options.verify ?? this.#verify);
    pendingByLock.set(lockFile, run);
    try {
      return await run;
    } finally {
      if (pendingByLock.get(lockFile) === run) pendingByLock.delete(lockFile);
    }
  }

  /**
   * The valid artifact of `spec`, or undefined when it is missing or corrupt. Reads only:
   * neither records a use nor quarantines.
   */
  async lookup(
    spec: ArtifactSpec,
    options: GetOrCreateOptions = {},
  ): Promise<ArtifactResult | undefined> {
    const t0 = performance.now();
    const key = artifactKey(spec);
    const found = await this.#inspect(spec.stage, key, options.verify ?? this.#verify);
    if (found.state !== 'ok') return undefined;
    return this.#result(spec.stage, key, true, t0, found.manifest);
  }

  /** Every artifact in the store, by stage, oldest first. */
  async list(): Promise<ArtifactEntry[]> {
    const out: ArtifactEntry[] = [];
    for (const { stage, key, dir } of await this.#artifactDirs()) {
      const manifestPath = join(dir, MANIFEST_FILE);
      const manifest = await readManifest(manifestPath).catch(() => undefined);
      const used = await stat(manifestPath).catch(() => stat(dir).catch(() => undefined));
      if (used === undefined) continue; // removed meanwhile
      out.push({
        stage,
        key,
        dir,
        bytes:
          manifest === undefined
            ? await treeBytes(dir)
            : manifest.files.reduce((sum, f) => sum + f.bytes, 0),
        files: manifest?.files.length ?? 0,
        codeVersion: manifest?.codeVersion ?? null,
        createdAt: manifest?.createdAt ?? null,
        lastUsedAt: used.mtime.toISOString(),
        manifestOk: manifest !== undefined,
      });
    }
    return out.sort(
      (a, b) =>
        a.stage.localeCompare(b.stage) ||
        (a.createdAt ?? '').localeCompare(b.createdAt ?? '') ||
        a.key.localeCompare(b.key),
    );
  }

  /**
   * Checks every artifact in full: manifest valid and matching its key, every listed file
   * present with its size and SHA-256.
   */
  async verify(options: VerifyOptions = {}): Promise<VerifyReport> {
    const dirs = await this.#artifactDirs();
    const corrupt: CorruptArtifact[] = [];
    let checked = 0;
    let bytes = 0;
    for (const [i, { stage, key, dir }] of dirs.entries()) {
      const found = await this.#inspect(stage, key, true);
      options.onProgress?.(i + 1, dirs.length);
      if (found.state === 'missing') continue; // removed meanwhile
      checked += 1;
      if (found.state === 'ok') {
        bytes += found.manifest.files.reduce((sum, f) => sum + f.bytes, 0);
        continue;
      }
      let quarantinedTo: string | null = null;
      if (options.quarantine === true) {
        const held = await this.#tryLock(key, stage);
        if (held !== undefined) {
          try {
            quarantinedTo = (await this.#quarantine(stage, key)) ?? null;
          } finally {
            await this.#release(held, stage, key);
          }
        }
      }
      corrupt.push({ stage, key, dir, problems: found.problems, quarantinedTo });
    }
    return { root: this.root, checked, bytes, corrupt };
  }

  /**
   * Removes what crashed or interrupted runs left (temporary directories and lock directories
   * no live process holds), quarantined artifacts, and with `keepDays` every artifact not used
   * for longer. Anything whose lock a live process holds is left alone.
   */
  async gc(options: GcOptions = {}): Promise<GcReport> {
    const dryRun = options.dryRun ?? false;
    const now = (options.now ?? new Date()).getTime();
    const removed: GcItem[] = [];
    const busy: string[] = [];
    const remove = async (item: Omit<GcItem, 'bytes'>): Promise<void> => {
      const bytes = await treeBytes(item.path);
      if (!dryRun) await this.#writing(() => rm(item.path, { recursive: true, force: true }));
      removed.push({ ...item, bytes });
    };

    for (const name of await readdirOrEmpty(this.tmpDir)) {
      const path = join(this.tmpDir, name);
      const key = TMP_NAME.exec(name)?.[1];
      if (key !== undefined && (await this.#isLocked(key))) {
        busy.push(path);
        continue;
      }
      await remove({ kind: 'tmp', path, reason: 'left by an interrupted computation' });
    }
    for (const name of await readdirOrEmpty(this.locksDir)) {
      const path = join(this.locksDir, name);
      const key = LOCK_NAME.exec(name)?.[1];
      const reason = `not refreshed for ${this.#staleMs / 1000} s: its process is gone`;
      if (key === undefined) {
        await remove({ kind: 'lock', path, reason: 'not a lock of this store' });
      } else if (!(await this.#isLocked(key))) {
        if (dryRun) {
          removed.push({ kind: 'lock', path, bytes: 0, reason });
          continue;
        }
        // Through proper-lockfile, as any process would take over a stale lock: removing the
        // directory by hand could remove a lock another process has just taken over.
        const held = await this.#tryLock(key, '');
        if (held === undefined) continue;
        await this.#release(held, '', key);
        removed.push({ kind: 'lock', path, bytes: 0, reason });
      }
    }
    for (const name of await readdirOrEmpty(this.quarantineDir)) {
      await remove({
        kind: 'quarantine',
        path: join(this.quarantineDir, name),
        reason: 'corrupt artifact moved aside',
      });
    }

    let kept = 0;
    for (const { stage, key, dir } of await this.#artifactDirs()) {
      const lastUsed = await stat(join(dir, MANIFEST_FILE)).catch(() =>
        stat(dir).catch(() => undefined),
      );
      if (lastUsed === undefined) continue;
      const days = (now - lastUsed.mtime.getTime()) / 86_400_000;
      if (options.keepDays === undefined || days <= options.keepDays) {
        kept += 1;
        continue;
      }
      const item: GcItem = {
        kind: 'artifact',
        path: dir,
        bytes: await treeBytes(dir),
        reason: `${stage}: last used ${days.toFixed(1)} days ago`,
      };
      if (dryRun) {
        removed.push(item);
        continue;
      }
      const held = await this.#tryLock(key, stage);
      if (held === undefined) {
        busy.push(dir);
        kept += 1;
        continue;
      }
      try {
        // Renamed first, so a reader sees the whole artifact or none of it.
        const doomed = join(
          this.tmpDir,
          `${key}.${process.pid}.gc-${randomBytes(3).toString('hex')}`,
        );
        await this.#writing(async () => {
          await mkdir(this.tmpDir, { recursive: true });
          await rename(dir, doomed);
          await rm(doomed, { recursive: true, force: true });
        });
        removed.push(item);
      } finally {
        await this.#release(held, stage, key);
      }
    }
    return {
      root: this.root,
      dryRun,
      removed,
      bytes: removed.reduce((sum, r) => sum + r.bytes, 0),
      kept,
      busy,
    };
  }

  async #getOrCreate(
    spec: ArtifactSpec,
    key: string,
    compute: ComputeFn,
    verify: boolean,
  ): Promise<ArtifactResult> {
    const t0 = performance.now();
    const { stage } = spec;
    const first = await this.#inspect(stage, key, verify);
    if (first.state === 'ok') return this.#hit(stage, key, t0, first.manifest);
    if (first.state === 'corrupt' && this.#onCorrupt === 'throw') {
      this.#throwCorrupt(stage, key, first);
    }

    await this.#ensureDirs();
    const acquired = await this.#acquire(stage, key, verify);
    if ('manifest' in acquired) return this.#hit(stage, key, t0, acquired.manifest);
    const held = acquired;
    try {
      const again = await this.#inspect(stage, key, verify);
      if (again.state === 'ok') return this.#hit(stage, key, t0, again.manifest);
      if (again.state === 'corrupt') {
        if (this.#onCorrupt === 'throw') this.#throwCorrupt(stage, key, again);
        const to = await this.#quarantine(stage, key);
        this.#emit({
          kind: 'warning',
          stage,
          key,
          message: `Corrupt artifact ${this.artifactDir(stage, key)} (${again.problems.join('; ')}) moved to ${to ?? 'nowhere (it vanished)'}; computing it again.`,
        });
      }
      return await this.#compute(spec, key, compute, held, verify, t0);
    } finally {
      await this.#release(held, stage, key);
    }
  }

  async #compute(
    spec: ArtifactSpec,
    key: string,
    compute: ComputeFn,
    held: Held,
    verify: boolean,
    t0: number,
  ): Promise<ArtifactResult> {
    const { stage } = spec;
    const tmp = await this.#writing(() => mkdtemp(join(this.tmpDir, `${key}.${process.pid}.`)));
    const untrack = trackInFlight({ tmpDir: tmp, lock: held });
    const uninstall = this.#exitOnSignal ? installSignalCleanup() : () => undefined;
    try {
      this.#emit({ kind: 'compute', stage, key });
      const c0 = performance.now();
      const returned = await compute(tmp, { stage, key });
      const seconds = (performance.now() - c0) / 1000;
      const meta = z.record(z.string(), z.json()).safeParse(returned ?? {});
      if (!meta.success) {
        throw new Error(
          `${stage}: compute returned metadata that is not a JSON object:\n${z.prettifyError(meta.error)}`,
        );
      }
      const files = [];
      for (const f of await listTree(tmp)) {
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
      const winner = await this.#writing(async () => {
        const manifestPath = join(tmp, MANIFEST_FILE);
        await writeFile(manifestPath, `${JSON.stringify(manifest, null, 2)}\n`);
        await fsyncPath(manifestPath);
        await fsyncDirs(tmp);
        await mkdir(join(this.objectsDir, stage), { recursive: true });
        const existing = await this.#publish(stage, key, tmp, verify);
        await fsyncPath(join(this.objectsDir, stage));
        return existing;
      });
      if (winner !== undefined) return this.#hit(stage, key, t0, winner);
      this.#emit({ kind: 'stored', stage, key, seconds });
      return this.#result(stage, key, false, t0, manifest);
    } catch (error) {
      await rm(tmp, { recursive: true, force: true });
      throw error;
    } finally {
      untrack();
      uninstall();
    }
  }

  /**
   * Renames the finished `tmp` into place. Normally nothing is there (we hold the lock); if a
   * valid artifact is (our lock was taken over after a stall), it wins and is returned.
   */
  async #publish(
    stage: string,
    key: string,
    tmp: string,
    verify: boolean,
  ): Promise<CacheManifest | undefined> {
    const dir = this.artifactDir(stage, key);
    for (let attempt = 0; ; attempt++) {
      try {
        await rename(tmp, dir);
        return undefined;
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code;
        if ((code !== 'ENOTEMPTY' && code !== 'EEXIST') || attempt >= 2) throw error;
      }
      const existing = await this.#inspect(stage, key, verify);
      if (existing.state === 'ok') {
        await rm(tmp, { recursive: true, force: true });
        return existing.manifest;
      }
      await this.#quarantine(stage, key);
    }
  }

  /** Takes the key's lock, waiting while someone else holds it, or returns a hit seen meanwhile. */
  async #acquire(
    stage: string,
    key: string,
    verify: boolean,
  ): Promise<Held | { readonly manifest: CacheManifest }> {
    let delay = 25;
    let announced = false;
    for (;;) {
      const held = await this.#tryLock(key, stage);
      if (held !== undefined) return held;
      if (!announced) {
        announced = true;
        this.#emit({ kind: 'wait', stage, key, lock: `${join(this.locksDir, key)}.lock` });
      }
      const seen = await this.#inspect(stage, key, verify);
      if (seen.state === 'ok') return { manifest: seen.manifest };
      await sleep(delay);
      delay = Math.min(delay * 2, 500);
    }
  }

  /** The key's lock, or undefined when a live process holds it. */
  async #tryLock(key: string, stage: string): Promise<Held | undefined> {
    const lockFile = join(this.locksDir, key);
    const held: Held = { dir: `${lockFile}.lock`, lost: false, release: async () => undefined };
    try {
      held.release = await lock(lockFile, {
        realpath: false,
        stale: this.#staleMs,
        retries: 0,
        // proper-lockfile's default throws from a timer, which would crash the process.
        onCompromised: (error) => {
          held.lost = true;
          this.#emit({
            kind: 'warning',
            stage,
            key,
            message: `Lost the lock ${held.dir} (${error.message}); another process may compute the same artifact, and the first to finish wins.`,
          });
        },
      });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ELOCKED') return undefined;
      if (isUnwritableError(error)) throw new CacheUnwritableError(this.root, { cause: error });
      throw error;
    }
    return held;
  }

  async #release(held: Held, stage: string, key: string): Promise<void> {
    if (held.lost) return;
    try {
      await held.release();
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'ERELEASED' || code === 'ENOTACQUIRED') return;
      this.#emit({
        kind: 'warning',
        stage,
        key,
        message: `Could not release the lock ${held.dir}: ${String(error)}`,
      });
    }
  }

  async #isLocked(key: string): Promise<boolean> {
    return check(join(this.locksDir, key), { realpath: false, stale: this.#staleMs });
  }

  async #inspect(stage: string, key: string, full: boolean): Promise<Inspection> {
    return inspectArtifact(this.artifactDir(stage, key), stage, key, full);
  }

  /** Moves an artifact to `quarantine/`; undefined when it was already gone. */
  async #quarantine(stage: string, key: string): Promise<string | undefined> {
    const stamp = new Date().toISOString().replace(/[:.]/g, '-');
    const to = join(
      this.quarantineDir,
      `${stage}.${key}.${stamp}.${randomBytes(3).toString('hex')}`,
    );
    try {
      await this.#writing(async () => {
        await mkdir(this.quarantineDir, { recursive: true });
        await rename(this.artifactDir(stage, key), to);
      });
      return to;
    } catch (error) {
      if (isNotFound(error)) return undefined;
      throw error;
    }
  }

  #hit(stage: string, key: string, t0: number, manifest: CacheManifest): ArtifactResult {
    // The manifest's mtime is the last use, for `bfe cache gc --keep-days`; a read-only cache
    // simply keeps its old times.
    const now = new Date();
    utimes(join(this.artifactDir(stage, key), MANIFEST_FILE), now, now).catch(() => undefined);
    this.#emit({ kind: 'hit', stage, key });
    return this.#result(stage, key, true, t0, manifest);
  }

  #result(
    stage: string,
    key: string,
    cached: boolean,
    t0: number,
    manifest: CacheManifest,
  ): ArtifactResult {
    return {
      key,
      dir: this.artifactDir(stage, key),
      cached,
      seconds: (performance.now() - t0) / 1000,
      manifest,
    };
  }

  #throwCorrupt(stage: string, key: string, found: { problems: readonly string[] }): never {
    throw new ArtifactCorruptError(
      `Artifact ${this.artifactDir(stage, key)} is corrupt: ${found.problems.join('; ')}`,
      {
        suggestion:
          'Run `bfe cache verify --quarantine` to move corrupt artifacts aside (the next run recomputes them), then `bfe cache gc`.',
      },
    );
  }

  #emit(event: CacheEvent): void {
    if (this.#onEvent !== undefined) this.#onEvent(event);
    else if (event.kind === 'warning') process.emitWarning(event.message, 'BfeCacheWarning');
  }

  #ensureDirs(): Promise<void> {
    this.#dirsReady ??= this.#writing(async () => {
      for (const dir of [this.objectsDir, this.locksDir, this.tmpDir, this.quarantineDir]) {
        await mkdir(dir, { recursive: true });
      }
    }).catch((error: unknown) => {
      this.#dirsReady = undefined;
      throw error;
    });
    return this.#dirsReady;
  }

  /** Runs a write to the cache, turning "cannot write here" into {@link CacheUnwritableError}. */
  async #writing<T>(op: () => Promise<T>): Promise<T> {
    try {
      return await op();
    } catch (error) {
      if (isUnwritableError(error) && !(error instanceof CacheUnwritableError)) {
        throw new CacheUnwritableError(this.root, { cause: error });
      }
      throw error;
    }
  }

  async #artifactDirs(): Promise<{ stage: string; key: string; dir: string }[]> {
    const out: { stage: string; key: string; dir: string }[] = [];
    for (const stage of (await readdirOrEmpty(this.objectsDir)).sort()) {
      for (const key of (await readdirOrEmpty(join(this.objectsDir, stage))).sort()) {
        if (KEY_PATTERN.test(key)) out.push({ stage, key, dir: join(this.objectsDir, stage, key) });
      }
    }
    return out;
  }
}

/**
 * Checks one artifact directory against its manifest: sizes always, SHA-256 with `full`.
 * (Module-internal.)
 */
async function inspectArtifact(
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
    if (full) {
      const actual = await fileSha256(path);
      if (actual !== f.sha256) {
        problems.push(`${path} has SHA-256 ${actual}, the manifest says ${f.sha256}`);
      }
    }
  }
  return problems.length === 0 ? { state: 'ok', manifest } : { state: 'corrupt', problems };
}

/**
 * Reads and validates an `artifact.json`.
 * @throws ENOENT when it is missing; ArtifactCorruptError when it is not a valid manifest
 */
async function readManifest(path: string): Promise<CacheManifest> {
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

async function readdirOrEmpty(dir: string): Promise<string[]> {
  try {
    return await readdir(dir);
  } catch (error) {
    if (isNotFound(error)) return [];
    throw error;
  }
}
