import { randomBytes } from 'node:crypto';
import { appendFileSync, mkdirSync, readdirSync, rmSync } from 'node:fs';
import { readFile, rm } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { readdirOrEmpty } from './inspect.js';
import { isPidAlive } from './locks.js';

// Reader leases: every key a process has read (or computed) is listed in its own file under
// `leases/`, `<pid>@<host>.<random>`, one key a line, for as long as the process lives (an
// `exit` handler removes it; after a crash the next process to lease in this cache, or
// `bfe cache gc`, removes leases of dead processes).
// `gc --keep-days` leaves leased artifacts alone. A reader writes its lease before it takes
// the key's lock to look at the artifact, and gc reads the leases after it has taken that lock,
// so either gc sees the lease, or the reader sees the artifact gone and computes it again.
// (Module-internal to src/cache.)

/** The leases directory of a cache root. */
export function leasesDir(root: string): string {
  return join(root, 'leases');
}

const LEASE_NAME = /^(\d+)@(.+)\.[0-9a-f]+$/;

interface ProcessLease {
  readonly file: string;
  readonly keys: Set<string>;
}

const mine = new Map<string, ProcessLease>();
let exitHookInstalled = false;

function removeOwnLeases(): void {
  for (const lease of mine.values()) rmSync(lease.file, { force: true });
  mine.clear();
}

/**
 * Records that this process reads artifact `key` of the cache at `root` (synchronous, so the
 * lease is on disk before the caller goes on). Idempotent per key.
 */
export function leaseKey(root: string, key: string): void {
  let lease = mine.get(root);
  if (lease?.keys.has(key) === true) return;
  if (lease === undefined) {
    const dir = leasesDir(root);
    mkdirSync(dir, { recursive: true });
    const name = `${process.pid}@${hostname()}.${randomBytes(4).toString('hex')}`;
    lease = { file: join(dir, name), keys: new Set() };
    mine.set(root, lease);
    sweepDeadLeases(dir);
    if (!exitHookInstalled) {
      exitHookInstalled = true;
      process.on('exit', removeOwnLeases);
    }
  }
  appendFileSync(lease.file, `${key}\n`);
  lease.keys.add(key);
}

/** Drops this process's leases on the cache at `root` (see `ArtifactStore.close`). */
export function releaseLeases(root: string): void {
  const lease = mine.get(root);
  if (lease === undefined) return;
  rmSync(lease.file, { force: true });
  mine.delete(root);
}

/** Removes lease files of dead processes of this host (what SIGKILL left), synchronously. */
function sweepDeadLeases(dir: string): void {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return;
  }
  for (const name of names) {
    const m = LEASE_NAME.exec(name);
    if (m !== null && isPidAlive(Number(m[1]), m[2]) === false) {
      rmSync(join(dir, name), { force: true });
    }
  }
}

/** The leases of a cache root, as `bfe cache gc` sees them. */
export interface LeaseScan {
  /** Keys leased by live processes (other than this one) or by processes of other hosts. */
  readonly leased: ReadonlySet<string>;
  /** Lease files of processes that are gone. */
  readonly dead: readonly string[];
}

/** Reads every lease file of `root`; this process's own leases do not count. */
export async function scanLeases(root: string): Promise<LeaseScan> {
  const dir = leasesDir(root);
  const leased = new Set<string>();
  const dead: string[] = [];
  const own = mine.get(root)?.file;
  for (const name of await readdirOrEmpty(dir)) {
    const path = join(dir, name);
    if (path === own) continue;
    const m = LEASE_NAME.exec(name);
    if (m !== null && isPidAlive(Number(m[1]), m[2]) === false) {
      dead.push(path);
      continue;
    }
    const text = await readFile(path, 'utf8').catch(() => '');
    for (const line of text.split('\n')) if (line !== '') leased.add(line);
  }
  return { leased, dead };
}

/** Removes a dead process's lease file. */
export async function removeLease(path: string): Promise<void> {
  await rm(path, { force: true });
}
