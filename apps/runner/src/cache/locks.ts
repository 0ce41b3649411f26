import { join } from 'node:path';
import { check, lock } from 'proper-lockfile';
import { CacheUnwritableError, isUnwritableError } from './errors.js';
import { sleep } from './fs-util.js';
import type { CacheManifest } from './key.js';
import type { HeldLock } from './signals.js';
import type { CacheEvent } from './types.js';

// The per-key locks under `locks/`: proper-lockfile lock directories, refreshed from a timer
// while held and taken over by anyone once stale. (Module-internal to src/cache.)

/** A lock this process holds on one key. */
export interface Held extends HeldLock {
  release: () => Promise<void>;
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
   * Takes the key's lock, waiting while someone else holds it, or returns a hit seen meanwhile:
   * between tries `seen` looks for the artifact and returns its manifest when it is there.
   */
  async acquire(
    stage: string,
    key: string,
    seen: () => Promise<CacheManifest | undefined>,
  ): Promise<Held | { readonly manifest: CacheManifest }> {
    let delay = 25;
    let announced = false;
    for (;;) {
      const held = await this.tryLock(key, stage);
      if (held !== undefined) return held;
      if (!announced) {
        announced = true;
        this.#emit({ kind: 'wait', stage, key, lock: `${join(this.locksDir, key)}.lock` });
      }
      const manifest = await seen();
      if (manifest !== undefined) return { manifest };
      await sleep(delay);
      delay = Math.min(delay * 2, 500);
    }
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
      if (isUnwritableError(error)) throw new CacheUnwritableError(this.root, { cause: error });
      throw error;
    }
    return held;
  }

  /** Releases a lock; one already lost or released is left alone, other failures are warnings. */
  async release(held: Held, stage: string, key: string): Promise<void> {
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

  /** Whether a live process holds the key's lock. */
  async isLocked(key: string): Promise<boolean> {
    return check(join(this.locksDir, key), { realpath: false, stale: this.staleMs });
  }
}
