import { ConfigError } from '@bfe/core';
import type { CacheEvent } from '../cache/index.js';

/** Environment variable: the cache's lock stale time in ms for `bfe run` (default 30 000). */
export const STALE_MS_ENV = 'BFE_CACHE_STALE_MS';

/** `BFE_CACHE_STALE_MS` as a number of ms, or undefined (the store's default) when unset. */
export function staleMsFromEnv(env: NodeJS.ProcessEnv = process.env): number | undefined {
  const raw = env[STALE_MS_ENV];
  if (raw === undefined || raw === '') return undefined;
  const ms = Number(raw);
  if (!Number.isFinite(ms) || ms <= 0) {
    throw new ConfigError(
      `${STALE_MS_ENV} must be a positive number of milliseconds, got '${raw}'`,
    );
  }
  return ms;
}

function mib(bytes: number): string {
  return `${(bytes / 2 ** 20).toFixed(1)} MiB`;
}

/**
 * The line `bfe run` prints for a cache event, or undefined for events the stage lines cover
 * (hit, compute, stored):
 * `waiting for encode 3a386c49022a held by pid 4242, stale in ~27 s`, or `warning: …`.
 */
export function describeCacheEvent(event: CacheEvent): string | undefined {
  if (event.kind === 'warning') return `warning: ${event.message}`;
  if (event.kind === 'remote-hit') {
    return `remote: got ${event.stage} ${event.key.slice(0, 12)} (${mib(event.bytes)}, verified)`;
  }
  if (event.kind === 'uploaded') {
    return `remote: uploaded ${event.stage} ${event.key.slice(0, 12)} (${mib(event.bytes)}, ${event.sent} of ${event.parts} parts new)`;
  }
  if (event.kind !== 'wait') return undefined;
  const holder =
    event.pid === null
      ? 'held by another process'
      : `held by pid ${event.pid}${event.alive === false ? ' (no longer running)' : ''}`;
  const stale =
    event.staleInSeconds === null ? '' : `, stale in ~${Math.ceil(event.staleInSeconds)} s`;
  return `waiting for ${event.stage} ${event.key.slice(0, 12)} ${holder}${stale}`;
}
