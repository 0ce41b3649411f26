import type { ArtifactResult } from '../cache/store.js';
import type { Experiment } from './config.js';
import { openRunStore } from './run-experiment.js';
import { stageContext, type StageRecord } from './stage.js';
import { runDatasetStage } from './stages/dataset.js';
import { runEncodeShardStage } from './stages/encode-shard.js';

/** One slice of a sharded encode: `--shard 1/4` is `{ index: 1, count: 4 }`. */
export interface ShardSelector {
  readonly index: number;
  readonly count: number;
}

/** What `bfe run … --shard i/n` left. */
export interface ShardOutcome {
  readonly shard: ShardSelector;
  readonly artifact: ArtifactResult;
  /** The shard count a run without --shard will assemble (the plan's, normally `count`). */
  readonly plannedShards: number;
  readonly stages: readonly StageRecord[];
}

/**
 * `bfe run <experiment> --shard i/n`: the dataset stage, then the i-th slice of the memories'
 * encoding (and the plan), through the cache and the team cache; no split, score or run
 * folder. A run without --shard then assembles the slices (see stages/encode-shard.ts).
 */
export async function runExperimentShard(options: {
  readonly experiment: Experiment;
  readonly configPath: string;
  readonly shard: ShardSelector;
  readonly cacheDir?: string | undefined;
  readonly log?: (line: string) => void;
  readonly progress?: (label: string, done: number, total: number, extra?: string) => void;
}): Promise<ShardOutcome> {
  const log = options.log ?? (() => {});
  const store = await openRunStore(options.cacheDir, log);
  const ctx = stageContext(store, log, options.progress ?? (() => {}));
  const dataset = await runDatasetStage(ctx, options.experiment, options.configPath);
  const { index, count } = options.shard;
  const done = await runEncodeShardStage(ctx, options.experiment, dataset, index, count);
  return {
    shard: options.shard,
    artifact: done.shard,
    plannedShards: done.plannedShards,
    stages: ctx.records,
  };
}
