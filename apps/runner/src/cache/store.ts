import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, rename, rm, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fsyncDirs, fsyncPath } from '@bfe/core';
import { cacheWriteError, corruptArtifactError } from './errors.js';
import { inspectArtifact, type Inspection } from './inspect.js';
import { MANIFEST_FILE, artifactKey, type ArtifactSpec, type CacheManifest } from './key.js';
import { KeyLocks, type Held } from './locks.js';
import { buildManifest } from './manifest.js';
import {
  collectGarbage,
  listArtifacts,
  quarantineArtifact,
  removeDeadTemporaries,
  verifyArtifacts,
  type MaintainedStore,
} from './maintenance.js';
import { leaseKey, releaseLeases } from './leases.js';
import type { RemoteCacheClient } from './remote-client.js';
import { fetchFromRemote, sendToRemote, type RemoteTierHost } from './remote-tier.js';
import { installSignalCleanup, trackInFlight } from './signals.js';
import {
  DEFAULT_STALE_MS,
  resolveCacheRoot,
  type ArtifactEntry,
  type ArtifactResult,
  type ArtifactStoreOptions,
  type CacheEvent,
  type ComputeFn,
  type GcOptions,
  type GcReport,
  type GetOrCreateOptions,
  type VerifyOptions,
  type VerifyReport,
} from './types.js';

// The stage files import the store and its result from here.
export type { ArtifactResult } from './types.js';

// One pending getOrCreate per lock path in this process: a second call for the same key waits
// for the first instead of polling the lock, then finds the artifact (or computes if it failed).
const pendingByLock = new Map<string, Promise<unknown>>();

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
 *   async (tmpDir) => ({ memories: await encodeInto(tmpDir) }), // returns the manifest's meta
 * );
 * bank.dir; // …/objects/encode/9c1f…/  (bank.cached: false the first time, true after)
 */
export class ArtifactStore {
  readonly root: string;
  readonly objectsDir: string;
  readonly locksDir: string;
  readonly tmpDir: string;
  readonly quarantineDir: string;
  readonly #verify: boolean;
  readonly #onCorrupt: 'recompute' | 'throw';
  readonly #exitOnSignal: boolean;
  readonly #onEvent: ((event: CacheEvent) => void) | undefined;
  readonly #failpoint: ((point: string) => void) | undefined;
  readonly #remote: RemoteCacheClient | undefined;
  readonly #locks: KeyLocks;
  #dirsReady: Promise<void> | undefined;

  private constructor(root: string, options: ArtifactStoreOptions) {
    this.root = root;
    this.objectsDir = join(root, 'objects');
    this.locksDir = join(root, 'locks');
    this.tmpDir = join(root, 'tmp');
    this.quarantineDir = join(root, 'quarantine');
    this.#verify = options.verify ?? false;
    this.#onCorrupt = options.onCorrupt ?? 'recompute';
    this.#exitOnSignal = options.exitOnSignal ?? true;
    this.#onEvent = options.onEvent;
    this.#failpoint = options.failpoint;
    this.#remote = options.remote;
    this.#locks = new KeyLocks({
      root,
      locksDir: this.locksDir,
      staleMs: Math.max(options.staleMs ?? DEFAULT_STALE_MS, 2000),
      emit: (event) => this.#emit(event),
    });
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
   * Returns the artifact of `spec`, computing it on a miss. The key is leased to this process
   * (so `gc` leaves it alone) and its lock taken (waiting while another process holds it);
   * then the artifact is checked (manifest valid and hashing to itself and to its key, every
   * file present with its size and SHA-256; files of 1 MiB or more already verified in this
   * process are not hashed twice unless `verify`) and its last use recorded. On a miss
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
    return this.#result(spec.stage, key, 'local', t0, found.manifest, 0);
  }

  /**
   * Declares that this process no longer reads the artifacts it got: drops its reader leases,
   * so `gc --keep-days` in another process may remove them. (A process's leases also end
   * with it.) Later `getOrCreate` calls lease again.
   */
  close(): void {
    releaseLeases(this.root);
  }

  /** Every artifact in the store, by stage, oldest first. */
  async list(): Promise<ArtifactEntry[]> {
    return listArtifacts(this.#maintained());
  }

  /**
   * Checks every artifact in full: manifest valid and matching its key, every listed file
   * present with its size and SHA-256.
   */
  async verify(options: VerifyOptions = {}): Promise<VerifyReport> {
    return verifyArtifacts(this.#maintained(), options);
  }

  /**
   * Removes what crashed or interrupted runs left (temporary directories and lock directories
   * no live process holds), quarantined artifacts, and with `keepDays` every artifact not used
   * for longer. Anything whose lock a live process holds is left alone.
   */
  async gc(options: GcOptions = {}): Promise<GcReport> {
    return collectGarbage(this.#maintained(), options);
  }

  async #getOrCreate(
    spec: ArtifactSpec,
    key: string,
    compute: ComputeFn,
    verify: boolean,
  ): Promise<ArtifactResult> {
    const t0 = performance.now();
    const { stage } = spec;
    // The lease first, then the lock: `gc` reads leases under the key's lock (see leases.ts).
    leaseKey(this.root, key);
    await this.#ensureDirs();
    const { held, waitSeconds } = await this.#locks.acquire(stage, key);
    try {
      const found = await this.#inspect(stage, key, verify);
      if (found.state === 'ok') return this.#hit(stage, key, t0, found.manifest, waitSeconds);
      if (found.state === 'corrupt') {
        if (this.#onCorrupt === 'throw') {
          throw corruptArtifactError(this.artifactDir(stage, key), found.problems);
        }
        const to = await this.#quarantine(stage, key);
        const message = `Corrupt ${stage} artifact: ${found.problems.join('; ')}. Moved it to ${to ?? 'nowhere (it vanished)'}; computing it again.`;
        this.#emit({ kind: 'warning', stage, key, message });
      }
      await removeDeadTemporaries(this.tmpDir, key);
      const remote = await fetchFromRemote(this.#remoteHost(), stage, key);
      if (remote !== undefined) return this.#result(stage, key, 'remote', t0, remote, waitSeconds);
      return await this.#compute(spec, key, compute, held, verify, t0, waitSeconds);
    } finally {
      await this.#locks.release(held, stage, key);
    }
  }

  async #compute(
    spec: ArtifactSpec,
    key: string,
    compute: ComputeFn,
    held: Held,
    verify: boolean,
    t0: number,
    waitSeconds: number,
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
      const manifest = await buildManifest(spec, key, tmp, seconds, returned);
      const winner = await this.#writing(async () => {
        const manifestPath = join(tmp, MANIFEST_FILE);
        await writeFile(manifestPath, `${JSON.stringify(manifest, null, 2)}\n`);
        await fsyncPath(manifestPath);
        await fsyncDirs(tmp);
        await mkdir(join(this.objectsDir, stage), { recursive: true });
        this.#failpoint?.(`before-publish:${stage}`);
        const existing = await this.#publish(stage, key, tmp, verify);
        await fsyncPath(join(this.objectsDir, stage));
        this.#failpoint?.(`after-publish:${stage}`);
        return existing;
      });
      if (winner !== undefined) return this.#hit(stage, key, t0, winner, waitSeconds);
      this.#emit({ kind: 'stored', stage, key, seconds });
      await sendToRemote(this.#remoteHost(), stage, key);
      return this.#result(stage, key, 'computed', t0, manifest, waitSeconds);
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

  async #inspect(stage: string, key: string, full: boolean): Promise<Inspection> {
    return inspectArtifact(this.artifactDir(stage, key), stage, key, full);
  }

  /** Moves an artifact to `quarantine/`; undefined when it was already gone. */
  async #quarantine(stage: string, key: string): Promise<string | undefined> {
    return this.#writing(() =>
      quarantineArtifact(this.quarantineDir, this.artifactDir(stage, key), stage, key),
    );
  }

  #hit(
    stage: string,
    key: string,
    t0: number,
    manifest: CacheManifest,
    waitSeconds: number,
  ): ArtifactResult {
    // The manifest's mtime is the last use, for `bfe cache gc --keep-days`; a read-only cache
    // simply keeps its old times.
    const now = new Date();
    utimes(join(this.artifactDir(stage, key), MANIFEST_FILE), now, now).catch(() => undefined);
    this.#emit({ kind: 'hit', stage, key });
    return this.#result(stage, key, 'local', t0, manifest, waitSeconds);
  }

  #result(
    stage: string,
    key: string,
    source: ArtifactResult['source'],
    t0: number,
    manifest: CacheManifest,
    waitSeconds: number,
  ): ArtifactResult {
    return {
      key,
      dir: this.artifactDir(stage, key),
      cached: source !== 'computed',
      source,
      seconds: (performance.now() - t0) / 1000,
      waitSeconds,
      manifest,
    };
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

  /** Runs a write to the cache: "cannot write here" and "disk full" become typed errors. */
  async #writing<T>(op: () => Promise<T>): Promise<T> {
    try {
      return await op();
    } catch (error) {
      throw cacheWriteError(this.root, error);
    }
  }

  /** The narrow view of this store that the remote tier publishes through. */
  #remoteHost(): RemoteTierHost {
    return {
      client: this.#remote,
      tmpDir: this.tmpDir,
      artifactDir: (stage, key) => this.artifactDir(stage, key),
      publish: (stage, key, tmp) => this.#publish(stage, key, tmp, false),
      writing: (op) => this.#writing(op),
      emit: (event) => this.#emit(event),
    };
  }

  /** The narrow view of this store that `list`, `verify` and `gc` work through. */
  #maintained(): MaintainedStore {
    return {
      root: this.root,
      objectsDir: this.objectsDir,
      locksDir: this.locksDir,
      tmpDir: this.tmpDir,
      quarantineDir: this.quarantineDir,
      locks: this.#locks,
      inspect: (stage, key, full) => this.#inspect(stage, key, full),
      quarantine: (stage, key) => this.#quarantine(stage, key),
      writing: (op) => this.#writing(op),
    };
  }
}
