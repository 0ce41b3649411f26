import { readFile, rm, stat, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { check, lock } from 'proper-lockfile';
import { z } from 'zod';
import { isProcessAlive } from '@bfe/core';
import { cacheWriteError } from './errors.js';
import { sleep } from './fs-util.js';
import type { HeldLock } from './signals.js';
import type { CacheEvent } from './types.js';

// The per-key locks under `locks/`: proper-lockfile lock directories, refreshed from a timer
// while held and taken over by anyone once stale. (Module-internal to src/cache.)

/** A lock this process holds on one key. */
export interface Held extends HeldLock {
  release: () => Promise<void>;
}

/** Who holds a key's lock, as a `wait` event reports it. */
export interface LockHolder {
  readonly lock: string;
  /** The holder's pid, when it recorded one. */
  readonly pid: number | null;
  /** Whether that process still runs (null: unknown, e.g. another host). */
  readonly alive: boolean | null;
  /** Seconds until the lock goes stale unless refreshed (null: it is gone already). */
  readonly staleInSeconds: number | null;
}

const ownerSchema = z.object({
  pid: z.int().positive(),
  hostname: z.string(),
  stage: z.string(),
  since: z.string(),
});
type Owner = z.infer<typeof ownerSchema>;

async function writeOwner(path: string, stage: string): Promise<void> {
  const owner: Owner = {
    pid: process.pid,
    hostname: hostname(),
    stage,
    since: new Date().toISOString(),
  };
  await writeFile(path, `${JSON.stringify(owner)}\n`);
}

async function readOwner(path: string): Promise<Owner | undefined> {
  try {
    const parsed = ownerSchema.safeParse(JSON.parse(await readFile(path, 'utf8')));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined; // none yet, or half-written
  }
}

/**
 * Whether process `pid` of `host` runs: signal 0 on this host (EPERM: it runs, as someone else);
 * null for another host, which cannot be asked.
 */
export function isPidAlive(pid: number, host: string = hostname()): boolean | null {
  if (host !== hostname()) return null;
  return isProcessAlive(pid);
}

function isAlive(owner: Owner): boolean | null {
  return isPidAlive(owner.pid, owner.hostname);
}

/** What {@link KeyLocks} needs from its store. */
export interface KeyLocksOptions {
  /** The store's root, named by {@link CacheUnwritableError}. */
  readonly root: string;
  readonly locksDir: string;
  /** Lock staleness in ms. */
  readonly staleMs: number;
  /** Reports waits, lost locks and failed releases. */
  readonly emit: (event: CacheEvent) => void;
}

/**
 * Takes, releases and checks the lock of one key at a time.
 * @example
 * const held = await locks.tryLock(key, 'encode'); // undefined while a live process holds it
 * if (held !== undefined) {
 *   try { … } finally { await locks.release(held, 'encode', key); }
 * }
 */
export class KeyLocks {
  readonly root: string;
  readonly locksDir: string;
  readonly staleMs: number;
  readonly #emit: (event: CacheEvent) => void;

  constructor(options: KeyLocksOptions) {
    this.root = options.root;
    this.locksDir = options.locksDir;
    this.staleMs = options.staleMs;
    this.#emit = options.emit;
  }

  /**
   * Takes the key's lock, waiting while someone else holds it (announced once by a `wait`
   * event naming the holder's pid and when its lock goes stale), and records this process as
   * its holder in `locks/<key>.owner`. Returns the lock and the seconds spent waiting.
   */
  async acquire(stage: string, key: string): Promise<{ held: Held; waitSeconds: number }> {
    const t0 = performance.now();
    let delay = 25;
    let announced = false;
    for (;;) {
      const held = await this.tryLock(key, stage);
      if (held !== undefined) {
        await writeOwner(this.ownerFile(key), stage).catch(() => undefined);
        return { held, waitSeconds: announced ? (performance.now() - t0) / 1000 : 0 };
      }
      if (!announced) {
        announced = true;
        this.#emit({ kind: 'wait', stage, key, ...(await this.holder(key)) });
      }
      await sleep(delay);
      delay = Math.min(delay * 2, 500);
    }
  }

  /** `locks/<key>.owner`: who holds the key's lock (pid, host, stage, since). */
  ownerFile(key: string): string {
    return join(this.locksDir, `${key}.owner`);
  }

  /** The lock directory of a key, its holder's pid (when recorded) and when it goes stale. */
  async holder(key: string): Promise<LockHolder> {
    const lockDir = `${join(this.locksDir, key)}.lock`;
    const owner = await readOwner(this.ownerFile(key));
    const mtime = await stat(lockDir).then(
      (s) => s.mtimeMs,
      () => undefined,
    );
    return {
      lock: lockDir,
      pid: owner?.pid ?? null,
      alive: owner === undefined ? null : isAlive(owner),
      staleInSeconds:
        mtime === undefined ? null : Math.max(0, (mtime + this.staleMs - Date.now()) / 1000),
    };
  }

  /** The key's lock, or undefined when a live process holds it. */
  async tryLock(key: string, stage: string): Promise<Held | undefined> {
    const lockFile = join(this.locksDir, key);
    const held: Held = { dir: `${lockFile}.lock`, lost: false, release: async () => undefined };
    try {
      held.release = await lock(lockFile, {
        realpath: false,
        stale: this.staleMs,
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
      throw cacheWriteError(this.root, error);
    }
    return held;
  }

  /** Releases a lock; one already lost or released is left alone, other failures are warnings. */
  async release(held: Held, stage: string, key: string): Promise<void> {
    if (held.lost) return;
    await rm(this.ownerFile(key), { force: true }).catch(() => undefined);
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

  /** Whether a live process holds the key's lock. */
  async isLocked(key: string): Promise<boolean> {
    return check(join(this.locksDir, key), { realpath: false, stale: this.staleMs });
  }
}
