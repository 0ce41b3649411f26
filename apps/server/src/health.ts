import { constants } from 'node:fs';
import { access, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { MemoryStore, StoreIndexFactory } from '@bfe/store';

/** Each check of the store: `ok`, or what is wrong. */
export interface HealthChecks {
  readonly store: string;
  readonly wal: string;
  readonly writes: string;
}

/** What `/healthz` answers: `ok` when every check is, else `unavailable` and the checks. */
export type Health =
  { readonly status: 'ok' } | { readonly status: 'unavailable'; readonly checks: HealthChecks };

/**
 * The store's health as the service sees it: the store is open, its directory and current
 * write-ahead log can be written (they exist on a writable file system and this user may
 * write them), and the last write the service made did not fail on disk.
 * @example
 * const health = storeHealth(store);
 * health.writeFailed('STORAGE_FULL'); // after a write the disk refused
 * (await health.check()).status; // 'unavailable' until a later write succeeds
 */
export interface StoreHealth {
  check(): Promise<Health>;
  /** Readiness (`/readyz`): the health checks and the token index's state. */
  ready(): Promise<Readiness>;
  /** A write failed on disk: unhealthy until {@link StoreHealth.writeSucceeded}. */
  writeFailed(code: string): void;
  writeSucceeded(): void;
}

const WAL = /^wal-\d+\.log$/;

/** What the service sees of the store's token index: its graphs' state. */
export type IndexState = Pick<StoreIndexFactory, 'graphsSettled' | 'graphStats'>;

/** What `/readyz` answers: every check, and `ready` when each is `ok`. */
export interface Readiness {
  readonly status: 'ready' | 'not-ready';
  readonly checks: HealthChecks & { readonly index: string };
  /** The index's graphs: banks with one, and those dropped after a failure (searched exactly). */
  readonly index?: { readonly graphs: number; readonly failures: string[] };
}

/**
 * The {@link StoreHealth} of `store`; with `index` (the store's graph-keeping index, when the
 * service made it), readiness also waits until no graph build or load is under way.
 */
export function storeHealth(store: MemoryStore, index?: IndexState): StoreHealth {
  let lastFailure: string | undefined;
  const health: StoreHealth = {
    async ready() {
      const h = await health.check();
      const checks = h.status === 'ok' ? { store: 'ok', wal: 'ok', writes: 'ok' } : h.checks;
      if (index === undefined) {
        const all = { ...checks, index: 'ok' };
        return { status: h.status === 'ok' ? 'ready' : 'not-ready', checks: all };
      }
      const settled = await Promise.race([
        index.graphsSettled().then(() => true),
        new Promise<boolean>((resolve) => setImmediate(() => resolve(false))),
      ]);
      const stats = index.graphStats();
      const all = {
        ...checks,
        index: settled ? 'ok' : 'building: graph builds or loads under way',
      };
      return {
        status: h.status === 'ok' && settled ? 'ready' : 'not-ready',
        checks: all,
        index: { graphs: Object.keys(stats.banks).length, failures: [...stats.failures] },
      };
    },
    async check() {
      let open = 'ok';
      try {
        store.banks(); // throws once the store is closed
      } catch (error) {
        open = `closed: ${(error as Error).message}`;
      }
      const wal = open === 'ok' ? await walWritable(store.dir) : 'not checked: store closed';
      const writes = lastFailure === undefined ? 'ok' : `last write failed: ${lastFailure}`;
      if (open === 'ok' && wal === 'ok' && writes === 'ok') return { status: 'ok' };
      return { status: 'unavailable', checks: { store: open, wal, writes } };
    },
    writeFailed(code) {
      lastFailure = code;
    },
    writeSucceeded() {
      lastFailure = undefined;
    },
  };
  return health;
}

/** "ok", or why the store directory or its newest WAL file cannot be written. */
async function walWritable(dir: string): Promise<string> {
  try {
    await access(dir, constants.W_OK);
    const wals = (await readdir(dir)).filter((f) => WAL.test(f));
    const generation = (f: string): number => Number.parseInt(f.slice(4), 10);
    const current = wals.sort((a, b) => generation(a) - generation(b)).at(-1);
    if (current === undefined) return 'no write-ahead log in the store directory';
    await access(join(dir, current), constants.W_OK);
    return 'ok';
  } catch (error) {
    return `not writable: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`;
  }
}
