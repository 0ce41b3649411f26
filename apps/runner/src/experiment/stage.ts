import { monitorEventLoopDelay } from 'node:perf_hooks';
import type { ArtifactStore, ArtifactResult } from '../cache/store.js';
import type { ArtifactSpec } from '../cache/key.js';
import { stageDelayMs, stageFailpoint, stageWait } from './faults.js';

/** One stage as a run saw it. */
export interface StageRecord {
  /** `dataset`, `encode`, `split@42`, `adapt@42`, `score@42`, `report`. */
  readonly name: string;
  readonly key: string;
  readonly cached: boolean;
  /** `local` (this machine's cache), `remote` (the team cache) or `computed`. */
  readonly source: 'local' | 'remote' | 'computed';
  /** Wall time of the stage, waits for another process's lock included. */
  readonly seconds: number;
  /** Of `seconds`, the time spent waiting for another process's lock on the key. */
  readonly waitSeconds: number;
  /**
   * The longest the event loop was blocked during the stage (0 for a hit): the cache's lock
   * is refreshed from a timer, so a block longer than the lock's stale time loses it.
   */
  readonly maxBlockedSeconds: number;
}

/** Writes a stage's artifact files into `dir`; returns the facts its manifest records. */
export type StageCompute = (dir: string) => Promise<Record<string, unknown> | undefined>;

/** What every stage of an experiment is handed: the cached runner, logging and progress. */
export interface StageContext {
  /** Gets the stage's artifact from the cache, or computes and stores it; records the stage. */
  readonly run: (
    name: string,
    spec: ArtifactSpec,
    compute: StageCompute,
  ) => Promise<ArtifactResult>;
  /**
   * The artifact of `spec` from this cache or the team cache, without computing it:
   * undefined when neither holds it.
   */
  readonly find: (spec: ArtifactSpec) => Promise<ArtifactResult | undefined>;
  readonly log: (line: string) => void;
  readonly progress: (label: string, done: number, total: number, extra?: string) => void;
  /** Every stage run so far, in order. */
  readonly records: readonly StageRecord[];
}

/**
 * The stage helper of an experiment: each call goes through the artifact store (a hit returns
 * the cached artifact, a miss computes it under the key's lock), is logged as
 * `stage <name>: cached|computed <key> (<s> s[, waited <w> s for a lock])` and recorded for
 * the receipt. The test failpoints `BFE_FAULT_STAGE_DELAY`, `BFE_FAULT_STAGE_WAIT` and
 * `BFE_FAULT_KILL` are described in faults.ts.
 */
export function stageContext(
  store: ArtifactStore,
  log: (line: string) => void,
  progress: StageContext['progress'],
): StageContext {
  const records: StageRecord[] = [];
  // The stage whose compute is running, for the `compute:<stage>` failpoint.
  let computing: { name: string; kind: string } | undefined;
  const stageProgress: StageContext['progress'] = (label, done, total, extra) => {
    if (computing !== undefined) stageFailpoint('compute', computing.name, computing.kind);
    progress(label, done, total, extra);
  };
  const run: StageContext['run'] = async (name, spec, compute) => {
    log(`stage ${name}: …`);
    stageFailpoint('start', name, spec.stage);
    const faultMs = stageDelayMs(name, spec.stage);
    const blocked = monitorEventLoopDelay({ resolution: 20 });
    const result = await store.getOrCreate(spec, async (dir) => {
      log(`stage ${name}: computing`);
      if (faultMs > 0) await new Promise((wake) => setTimeout(wake, faultMs));
      await stageWait(name, spec.stage);
      computing = { name, kind: spec.stage };
      blocked.enable();
      try {
        return (await compute(dir)) as never;
      } finally {
        blocked.disable();
        computing = undefined;
      }
    });
    // The histogram's max is in nanoseconds (its minimum reading is the resolution).
    const maxBlockedSeconds = result.cached ? 0 : blocked.max / 1e9;
    records.push({
      name,
      key: result.key,
      cached: result.cached,
      source: result.source,
      seconds: result.seconds,
      waitSeconds: result.waitSeconds,
      maxBlockedSeconds,
    });
    const waited =
      result.waitSeconds > 0 ? `, waited ${result.waitSeconds.toFixed(1)} s for a lock` : '';
    log(
      `stage ${name}: ${result.source === 'computed' ? 'computed' : result.source === 'remote' ? 'cached (remote)' : 'cached'} ${result.key.slice(0, 12)} (${result.seconds.toFixed(1)} s${waited})`,
    );
    return result;
  };
  const find: StageContext['find'] = async (spec) => {
    const absent = new Error('not in any cache');
    return store
      .getOrCreate(spec, () => Promise.reject(absent))
      .catch((error: unknown) => (error === absent ? undefined : Promise.reject(error)));
  };
  return { run, find, log, progress: stageProgress, records };
}
