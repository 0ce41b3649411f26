import { readFileSync } from 'node:fs';
import { mkdir, open, readFile, rm, stat, utimes } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { BfeError, isProcessAlive, toStorageError } from '@bfe/core';

/** File name of the writer lock in a store directory. */
export const LOCK_FILE = 'LOCK';

/**
 * How often a writer refreshes its lock's mtime, and how old a refresh may be before a lock
 * written on another host (whose process this host cannot see) counts as abandoned.
 */
export const LOCK_HEARTBEAT_MS = 10_000;
export const LOCK_LEASE_MS = 6 * LOCK_HEARTBEAT_MS;

/** Another live process (or another open store in this one) writes this store directory. */
export class StoreLockedError extends BfeError {
  constructor(
    readonly dir: string,
    readonly pid: number,
    readonly host?: string,
  ) {
    super(
      'STORE_LOCKED',
      `store ${dir} is open for writing by process ${pid}${host === undefined ? '' : ` on host ${host}`}`,
      {
        suggestion:
          host === undefined
            ? 'One process writes a store directory at a time: close the other store (or end that process), or share it through one process.'
            : `One process writes a store directory at a time. If that process is gone, its lock expires ${LOCK_LEASE_MS / 1000} s after its last heartbeat (or delete ${LOCK_FILE}).`,
      },
    );
  }
}

/**
 * Who wrote a lock: the pid, and what tells that pid's process apart from a later process
 * given the same pid — its start time (clock ticks after boot, `/proc/<pid>/stat` field 22),
 * the boot it ran in (`/proc/sys/kernel/random/boot_id`) and the host name. The three are
 * absent where the system does not expose them (and in locks of older versions, which held
 * the pid alone).
 */
export interface LockOwner {
  readonly pid: number;
  readonly start?: string | undefined;
  readonly boot?: string | undefined;
  readonly host?: string | undefined;
}

/** What {@link lockIsHeld} asks of the system; injectable for tests. */
export interface LockProbes {
  readonly self: LockOwner;
  isAlive(pid: number): boolean;
  startOf(pid: number): string | undefined;
  /** Milliseconds since the lock file's last heartbeat. */
  readonly ageMs: number;
}

/** The start time of process `pid` in clock ticks after boot, or undefined (no `/proc`). */
export function processStartTime(pid: number): string | undefined {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, 'latin1');
  } catch {
    return undefined;
  }
  // Field 2, the command name, is in parentheses and may hold spaces and parentheses itself:
  // the fields after the last ')' start at field 3, so field 22 is the 20th of them.
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
  const start = fields[19];
  return start !== undefined && /^\d+$/.test(start) ? start : undefined;
}

function bootId(): string | undefined {
  try {
    const id = readFileSync('/proc/sys/kernel/random/boot_id', 'latin1').trim();
    return id === '' ? undefined : id;
  } catch {
    return undefined;
  }
}

/** This process as a lock names it. */
export function currentLockOwner(): LockOwner {
  return {
    pid: process.pid,
    start: processStartTime(process.pid),
    boot: bootId(),
    host: hostname(),
  };
}

/** The lock file's text: the pid on the first line (what older versions read), then fields. */
export function formatLock(owner: LockOwner): string {
  let text = `${owner.pid}\n`;
  if (owner.start !== undefined) text += `start ${owner.start}\n`;
  if (owner.boot !== undefined) text += `boot ${owner.boot}\n`;
  if (owner.host !== undefined) text += `host ${owner.host}\n`;
  return text;
}

/** Parses a lock file's text; undefined when it names no pid (a writer killed mid-write). */
export function parseLock(text: string): LockOwner | undefined {
  const [first, ...rest] = text.split('\n');
  const pid = /^\d+$/.test(first ?? '') ? Number(first) : NaN;
  if (!Number.isSafeInteger(pid) || pid <= 0) return undefined;
  const field = (name: string): string | undefined => {
    const line = rest.find((l) => l.startsWith(`${name} `));
    return line === undefined ? undefined : line.slice(name.length + 1);
  };
  return { pid, start: field('start'), boot: field('boot'), host: field('host') };
}

/**
 * Whether a lock's owner still runs. A lock from another host is judged by its heartbeat
 * (this host cannot see that process); one from this host's previous boot is stale; otherwise
 * its pid must be alive and, where both are known, have the recorded start time — so a later
 * process that got the same pid (PID 1 in a container restarted after `kill -9`) is not
 * mistaken for the writer. A pid-only lock naming this very process was written by an earlier
 * process with the same pid: this process writes its start time.
 */
export function lockIsHeld(owner: LockOwner, probes: LockProbes): boolean {
  const { self } = probes;
  if (owner.host !== undefined && self.host !== undefined && owner.host !== self.host)
    return probes.ageMs < LOCK_LEASE_MS;
  if (owner.boot !== undefined && self.boot !== undefined && owner.boot !== self.boot) return false;
  if (owner.pid === self.pid && owner.start === undefined && self.start !== undefined) return false;
  if (!probes.isAlive(owner.pid)) return false;
  if (owner.start === undefined) return true;
  const start = owner.pid === self.pid ? self.start : probes.startOf(owner.pid);
  return start === undefined || start === owner.start;
}

/**
 * Takes the writer lock of a store directory: `LOCK` created exclusively, naming this process
 * ({@link formatLock}), its mtime refreshed every {@link LOCK_HEARTBEAT_MS} while held. A lock
 * whose owner is gone ({@link lockIsHeld}) is stale and taken over.
 * @throws StoreLockedError when a live process holds it (this process included)
 */
export async function acquireLock(dir: string): Promise<() => Promise<void>> {
  const path = join(dir, LOCK_FILE);
  try {
    await mkdir(dir, { recursive: true });
  } catch (error) {
    throw await toStorageError(error, dir);
  }
  const self = currentLockOwner();
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      const handle = await open(path, 'wx');
      try {
        await handle.writeFile(formatLock(self));
        await handle.sync();
      } finally {
        await handle.close();
      }
      return heldLock(path);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST')
        throw await toStorageError(error, path);
    }
    const owner = parseLock(await readFile(path, 'utf8').catch(() => ''));
    const mtime = await stat(path).then(
      (s) => s.mtimeMs,
      () => 0,
    );
    const probes: LockProbes = {
      self,
      isAlive: isProcessAlive,
      startOf: processStartTime,
      ageMs: Date.now() - mtime,
    };
    if (owner !== undefined && lockIsHeld(owner, probes)) {
      const elsewhere = owner.host !== undefined && owner.host !== self.host;
      throw new StoreLockedError(dir, owner.pid, elsewhere ? owner.host : undefined);
    }
    await rm(path, { force: true });
  }
  throw new StoreLockedError(dir, -1);
}

/** The release of a held lock, whose heartbeat runs until then. */
function heldLock(path: string): () => Promise<void> {
  const beat = setInterval(() => {
    const now = new Date();
    // A failed refresh is retried at the next beat; the lock itself is still ours.
    utimes(path, now, now).catch(() => undefined);
  }, LOCK_HEARTBEAT_MS);
  beat.unref();
  return () => {
    clearInterval(beat);
    return rm(path, { force: true });
  };
}
