import type { ArtifactStore, ArtifactResult } from '../cache/store.js';
import type { ArtifactSpec } from '../cache/key.js';

/** One stage as a run saw it. */
export interface StageRecord {
  /** `dataset`, `encode`, `split@42`, `adapt@42`, `score@42`, `report`. */
  readonly name: string;
  readonly key: string;
  readonly cached: boolean;
  readonly seconds: number;
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
  readonly log: (line: string) => void;
  readonly progress: (label: string, done: number, total: number, extra?: string) => void;
  /** Every stage run so far, in order. */
  readonly records: readonly StageRecord[];
}

/**
 * The stage helper of an experiment: each call goes through the artifact store (a hit returns
 * the cached artifact, a miss computes it under the key's lock), is logged as
 * `stage <name>: cached|computed <key> (<s> s)` and recorded for the receipt.
 *
 * Test failpoint: `BFE_FAULT_STAGE_DELAY=<stage>:<ms>` (the stage kind, e.g. `score:5000`, or
 * its full name, `score@42`) sleeps that long inside the compute, before it computes, so a test
 * can interrupt a run mid-stage. An awaited timer, so signals are handled meanwhile.
 */
export function stageContext(
  store: ArtifactStore,
  log: (line: string) => void,
  progress: StageContext['progress'],
): StageContext {
  const records: StageRecord[] = [];
  const run: StageContext['run'] = async (name, spec, compute) => {
    log(`stage ${name}: …`);
    const fault = /^(.+):(\d+)$/.exec(process.env.BFE_FAULT_STAGE_DELAY ?? '');
    const faultMs =
      fault !== null && (fault[1] === name || fault[1] === spec.stage) ? Number(fault[2]) : 0;
    const result = await store.getOrCreate(spec, async (dir) => {
      log(`stage ${name}: computing`);
      if (faultMs > 0) await new Promise((wake) => setTimeout(wake, faultMs));
      return (await compute(dir)) as never;
    });
    records.push({ name, key: result.key, cached: result.cached, seconds: result.seconds });
    log(
      `stage ${name}: ${result.cached ? 'cached' : 'computed'} ${result.key.slice(0, 12)} (${result.seconds.toFixed(1)} s)`,
    );
    return result;
  };
  return { run, log, progress, records };
}
