import { existsSync, readFileSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { tmpDir } from '@bfe/core/testing';
import {
  LOCK_FILE,
  LOCK_HEARTBEAT_MS,
  LOCK_LEASE_MS,
  StoreLockedError,
  acquireLock,
  currentLockOwner,
  formatLock,
  lockIsHeld,
  parseLock,
  processStartTime,
  type LockOwner,
} from './lock.js';

const hasProc = existsSync('/proc/self/stat') && existsSync('/proc/sys/kernel/random/boot_id');

/** A store directory whose LOCK holds `text`. */
function lockedDir(text: string): string {
  const dir = tmpDir();
  writeFileSync(join(dir, LOCK_FILE), text);
  return dir;
}

const self = (): LockOwner => currentLockOwner();

afterEach(() => {
  vi.useRealTimers();
});

describe('the store lock, judged by more than the pid', () => {
  it('round-trips its text, the pid on the first line as older versions wrote it', () => {
    const owner = { pid: 42, start: '123', boot: 'b-1', host: 'h' };
    expect(formatLock(owner).split('\n')[0]).toBe('42');
    expect(parseLock(formatLock(owner))).toEqual(owner);
    expect(parseLock('42\n')).toEqual({ pid: 42 });
    expect(parseLock('')).toBeUndefined();
    expect(parseLock('x42\n')).toBeUndefined();
  });

  it.runIf(hasProc)('reads a process start time from /proc', () => {
    const start = processStartTime(process.pid);
    expect(start).toMatch(/^\d+$/);
    expect(processStartTime(process.pid)).toBe(start);
    expect(processStartTime(999_999_999)).toBeUndefined();
  });

  it.runIf(hasProc)('takes over a lock naming this pid with another start time', async () => {
    const me = self();
    const dir = lockedDir(formatLock({ ...me, start: String(Number(me.start) + 1) }));
    const release = await acquireLock(dir);
    expect(readFileSync(join(dir, LOCK_FILE), 'utf8')).toBe(formatLock(me));
    await release();
    expect(existsSync(join(dir, LOCK_FILE))).toBe(false);
  });

  it.runIf(hasProc)('takes over a lock naming this pid from another boot', async () => {
    const dir = lockedDir(formatLock({ ...self(), boot: 'a-boot-before-this-one' }));
    await (
      await acquireLock(dir)
    )();
  });

  it('takes over a pid-only lock (an older version) that names this very process', async () => {
    const dir = lockedDir(`${process.pid}\n`);
    await (
      await acquireLock(dir)
    )();
  });

  it('refuses a lock this process holds, and a pid-only lock of another live process', async () => {
    const dir = tmpDir();
    const release = await acquireLock(dir);
    const second = await acquireLock(dir).catch((error: unknown) => error);
    expect(second).toBeInstanceOf(StoreLockedError);
    expect((second as StoreLockedError).pid).toBe(process.pid);
    await release();
    // The parent process (vitest's) lives; an older version's lock names it alone.
    const other = lockedDir(`${process.ppid}\n`);
    await expect(acquireLock(other)).rejects.toThrow(`by process ${process.ppid}`);
  });

  it.runIf(hasProc)('refuses a live process with its recorded start time', async () => {
    const parent = { ...self(), pid: process.ppid, start: processStartTime(process.ppid) };
    await expect(acquireLock(lockedDir(formatLock(parent)))).rejects.toThrow(StoreLockedError);
    // The same pid with another start time: a later process that reused the pid.
    const reused = { ...parent, start: String(Number(parent.start) + 1) };
    await (
      await acquireLock(lockedDir(formatLock(reused)))
    )();
  });

  it('judges a lock from another host by its heartbeat', async () => {
    const foreign = formatLock({ pid: 1, start: '5', boot: 'other-boot', host: 'elsewhere' });
    const dir = lockedDir(foreign);
    const refused = await acquireLock(dir).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(StoreLockedError);
    expect((refused as Error).message).toBe(
      `store ${dir} is open for writing by process 1 on host elsewhere`,
    );
    const old = new Date(Date.now() - LOCK_LEASE_MS - 1000);
    utimesSync(join(dir, LOCK_FILE), old, old);
    await (
      await acquireLock(dir)
    )();
  });

  it('decides from the probes alone (no /proc: the pid is all there is)', () => {
    const probes = (alive: boolean, start?: string) => ({
      self: { pid: 10, host: 'h' },
      isAlive: () => alive,
      startOf: () => start,
      ageMs: 0,
    });
    expect(lockIsHeld({ pid: 7 }, probes(true))).toBe(true);
    expect(lockIsHeld({ pid: 7 }, probes(false))).toBe(false);
    expect(lockIsHeld({ pid: 7, start: '1' }, probes(true, '1'))).toBe(true);
    expect(lockIsHeld({ pid: 7, start: '1' }, probes(true, '2'))).toBe(false);
    expect(lockIsHeld({ pid: 7, start: '1', host: 'h' }, probes(true))).toBe(true);
    expect(lockIsHeld({ pid: 7, host: 'g' }, { ...probes(false), ageMs: 1 })).toBe(true);
  });

  it('refreshes its mtime while held', async () => {
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
    const dir = tmpDir();
    const release = await acquireLock(dir);
    const path = join(dir, LOCK_FILE);
    const old = new Date(Date.now() - LOCK_LEASE_MS);
    utimesSync(path, old, old);
    vi.advanceTimersByTime(LOCK_HEARTBEAT_MS);
    await vi.waitFor(() => expect(statSync(path).mtimeMs).toBeGreaterThan(old.getTime()), {
      timeout: 60_000,
      interval: 20,
    });
    await release();
  });
});
