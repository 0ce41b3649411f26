import { randomBytes } from 'node:crypto';
import { mkdir, rename, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { isNotFound } from './errors.js';
import { treeBytes } from './fs-util.js';
import { listArtifactDirs, readdirOrEmpty, type Inspection } from './inspect.js';
import { readManifest } from './manifest.js';
import { MANIFEST_FILE } from './key.js';
import { removeLease, scanLeases } from './leases.js';
import { isPidAlive, type KeyLocks } from './locks.js';
import type {
  ArtifactEntry,
  CorruptArtifact,
  GcItem,
  GcOptions,
  GcReport,
  VerifyOptions,
  VerifyReport,
} from './types.js';

// Looking after a whole store: `bfe cache ls`, `verify` and `gc`, behind `ArtifactStore`'s
// `list`, `verify` and `gc`. (Module-internal to src/cache.)

/** What the maintenance functions need from an `ArtifactStore`, which hands it to them. */
export interface MaintainedStore {
  readonly root: string;
  readonly objectsDir: string;
  readonly locksDir: string;
  readonly tmpDir: string;
  readonly quarantineDir: string;
  readonly locks: KeyLocks;
  /** Checks one artifact (see `inspectArtifact`). */
  inspect(stage: string, key: string, full: boolean): Promise<Inspection>;
  /** Moves an artifact to `quarantine/`; undefined when it was already gone. */
  quarantine(stage: string, key: string): Promise<string | undefined>;
  /** Runs a write to the cache, turning "cannot write here" into `CacheUnwritableError`. */
  writing<T>(op: () => Promise<T>): Promise<T>;
}

const TMP_NAME = /^([0-9a-f]{64})\.(\d+)\./;
const LOCK_NAME = /^([0-9a-f]{64})\.lock$/;
const OWNER_NAME = /^([0-9a-f]{64})\.owner$/;

/**
 * Removes the temporary directories of `key` that dead processes of this host left (SIGKILL
 * mid-compute). Called by the new holder of the key's lock, so nobody else writes there.
 */
export async function removeDeadTemporaries(tmpDir: string, key: string): Promise<void> {
  for (const name of await readdirOrEmpty(tmpDir)) {
    const m = TMP_NAME.exec(name);
    if (m?.[1] !== key || Number(m[2]) === process.pid) continue;
    if (isPidAlive(Number(m[2])) === false) {
      await rm(join(tmpDir, name), { recursive: true, force: true });
    }
  }
}

/** Moves artifact `dir` to `quarantineDir`; undefined when it was already gone. */
export async function quarantineArtifact(
  quarantineDir: string,
  dir: string,
  stage: string,
  key: string,
): Promise<string | undefined> {
  const stamp = new Date().toISOString().replace(/[:.]/g, '-');
  const to = join(quarantineDir, `${stage}.${key}.${stamp}.${randomBytes(3).toString('hex')}`);
  try {
    await mkdir(quarantineDir, { recursive: true });
    await rename(dir, to);
    return to;
  } catch (error) {
    if (isNotFound(error)) return undefined;
    throw error;
  }
}

/** `ArtifactStore.list`: every artifact in the store, by stage, oldest first. */
export async function listArtifacts(store: MaintainedStore): Promise<ArtifactEntry[]> {
  const out: ArtifactEntry[] = [];
  for (const { stage, key, dir } of await listArtifactDirs(store.objectsDir)) {
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

/** `ArtifactStore.verify`: checks every artifact in full (see there). */
export async function verifyArtifacts(
  store: MaintainedStore,
  options: VerifyOptions = {},
): Promise<VerifyReport> {
  const dirs = await listArtifactDirs(store.objectsDir);
  const corrupt: CorruptArtifact[] = [];
  let checked = 0;
  let bytes = 0;
  for (const [i, { stage, key, dir }] of dirs.entries()) {
    const found = await store.inspect(stage, key, true);
    options.onProgress?.(i + 1, dirs.length);
    if (found.state === 'missing') continue; // removed meanwhile
    checked += 1;
    if (found.state === 'ok') {
      bytes += found.manifest.files.reduce((sum, f) => sum + f.bytes, 0);
      continue;
    }
    let quarantinedTo: string | null = null;
    if (options.quarantine === true) {
      const held = await store.locks.tryLock(key, stage);
      if (held !== undefined) {
        try {
          quarantinedTo = (await store.quarantine(stage, key)) ?? null;
        } finally {
          await store.locks.release(held, stage, key);
        }
      }
    }
    corrupt.push({ stage, key, dir, problems: found.problems, quarantinedTo });
  }
  return { root: store.root, checked, bytes, corrupt };
}

/** `ArtifactStore.gc`: removes leftovers, quarantined and (with `keepDays`) unused artifacts. */
export async function collectGarbage(
  store: MaintainedStore,
  options: GcOptions = {},
): Promise<GcReport> {
  const dryRun = options.dryRun ?? false;
  const now = (options.now ?? new Date()).getTime();
  const removed: GcItem[] = [];
  const busy: string[] = [];
  const remove = async (item: Omit<GcItem, 'bytes'>): Promise<void> => {
    const bytes = await treeBytes(item.path);
    if (!dryRun) await store.writing(() => rm(item.path, { recursive: true, force: true }));
    removed.push({ ...item, bytes });
  };

  for (const name of await readdirOrEmpty(store.tmpDir)) {
    const path = join(store.tmpDir, name);
    const key = TMP_NAME.exec(name)?.[1];
    if (key !== undefined && (await store.locks.isLocked(key))) {
      busy.push(path);
      continue;
    }
    await remove({ kind: 'tmp', path, reason: 'left by an interrupted computation' });
  }
  for (const name of await readdirOrEmpty(store.locksDir)) {
    const path = join(store.locksDir, name);
    const owner = OWNER_NAME.exec(name)?.[1];
    if (owner !== undefined) {
      // Who held a lock; gone with it (the next holder writes its own).
      if (!(await store.locks.isLocked(owner))) {
        await remove({ kind: 'lock', path, reason: 'holder of a lock that is gone' });
      }
      continue;
    }
    const key = LOCK_NAME.exec(name)?.[1];
    const reason = `not refreshed for ${store.locks.staleMs / 1000} s: its process is gone`;
    if (key === undefined) {
      await remove({ kind: 'lock', path, reason: 'not a lock of this store' });
    } else if (!(await store.locks.isLocked(key))) {
      if (dryRun) {
        removed.push({ kind: 'lock', path, bytes: 0, reason });
        continue;
      }
      // Through proper-lockfile, as any process would take over a stale lock: removing the
      // directory by hand could remove a lock another process has just taken over.
      const held = await store.locks.tryLock(key, '');
      if (held === undefined) continue;
      await store.locks.release(held, '', key);
      removed.push({ kind: 'lock', path, bytes: 0, reason });
    }
  }
  for (const name of await readdirOrEmpty(store.quarantineDir)) {
    await remove({
      kind: 'quarantine',
      path: join(store.quarantineDir, name),
      reason: 'corrupt artifact moved aside',
    });
  }

  for (const path of (await scanLeases(store.root)).dead) {
    if (!dryRun) await removeLease(path);
    removed.push({
      kind: 'lease',
      path,
      bytes: 0,
      reason: 'reader lease of a process that is gone',
    });
  }

  let kept = 0;
  for (const { stage, key, dir } of await listArtifactDirs(store.objectsDir)) {
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
      if ((await scanLeases(store.root)).leased.has(key)) {
        busy.push(dir);
        kept += 1;
      } else removed.push(item);
      continue;
    }
    const held = await store.locks.tryLock(key, stage);
    if (held === undefined) {
      busy.push(dir);
      kept += 1;
      continue;
    }
    try {
      // Leases are read under the key's lock: a reader leases before it locks (leases.ts).
      if ((await scanLeases(store.root)).leased.has(key)) {
        busy.push(dir);
        kept += 1;
        continue;
      }
      // Renamed first, so a reader sees the whole artifact or none of it.
      const doomed = join(
        store.tmpDir,
        `${key}.${process.pid}.gc-${randomBytes(3).toString('hex')}`,
      );
      await store.writing(async () => {
        await mkdir(store.tmpDir, { recursive: true });
        await rename(dir, doomed);
        await rm(doomed, { recursive: true, force: true });
      });
      removed.push(item);
    } finally {
      await store.locks.release(held, stage, key);
    }
  }
  return {
    root: store.root,
    dryRun,
    removed,
    bytes: removed.reduce((sum, r) => sum + r.bytes, 0),
    kept,
    busy,
  };
}
