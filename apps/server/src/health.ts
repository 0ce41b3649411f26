import { constants } from 'node:fs';
import { access, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { MemoryStore } from '@bfe/store';

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
  /** A write failed on disk: unhealthy until {@link StoreHealth.writeSucceeded}. */
  writeFailed(code: string): void;
  writeSucceeded(): void;
}

const WAL = /^wal-\d+\.log$/;

/** The {@link StoreHealth} of `store`. */
export function storeHealth(store: MemoryStore): StoreHealth {
  let lastFailure: string | undefined;
  return {
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
