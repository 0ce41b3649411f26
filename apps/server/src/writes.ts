import { StorageError } from '@bfe/core';
import type { MemoryInput, MemoryStore } from '@bfe/store';
import type { StoreHealth } from './health.js';
import type { ServerMetrics } from './metrics.js';

/**
 * The store's writes as the service makes them: each is tracked until it settles, so that a
 * shutdown that has cut its client's connection still lets it finish before the store closes
 * ({@link StoreWrites.drain}); a write the disk refuses is logged by the error handler,
 * counted and makes the service unhealthy until a later write succeeds.
 * @example
 * const writes = storeWrites(store, health, metrics);
 * await writes.add(memories); // { ids }
 * await writes.drain(); // every write under way has settled
 */
export interface StoreWrites {
  add(items: readonly MemoryInput[]): Promise<{ ids: string[] }>;
  update(items: readonly MemoryInput[]): Promise<{ ids: string[] }>;
  delete(ids: readonly string[], bank: string): Promise<{ deleted: string[] }>;
  /** Resolves once every write under way has settled (new ones included). */
  drain(): Promise<void>;
}

/** The {@link StoreWrites} of `store`. */
export function storeWrites(
  store: MemoryStore,
  health: StoreHealth,
  metrics: ServerMetrics,
): StoreWrites {
  const inFlight = new Set<Promise<unknown>>();
  const track = <T>(write: Promise<T>): Promise<T> => {
    const settled = write.then(
      () => health.writeSucceeded(),
      (error: unknown) => {
        if (!(error instanceof StorageError)) return;
        health.writeFailed(error.code);
        metrics.persistenceFailed(error.code);
      },
    );
    inFlight.add(settled);
    void settled.finally(() => inFlight.delete(settled));
    return write;
  };
  return {
    add: (items) => track(store.add(items)),
    update: (items) => track(store.update(items)),
    delete: (ids, bank) => track(store.delete(ids, { bank })),
    async drain() {
      while (inFlight.size > 0) await Promise.all(inFlight);
    },
  };
}
