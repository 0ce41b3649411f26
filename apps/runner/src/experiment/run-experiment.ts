import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseResults, type Results } from '@bfe/eval';
import { ArtifactStore, type ArtifactResult } from '../cache/store.js';
import { RemoteCacheClient, remoteCacheFromEnv } from '../cache/remote-client.js';
import { describeCacheEvent, staleMsFromEnv } from './cache-events.js';
import { failpoint } from './faults.js';
import { isSelectionData, type Experiment } from './config.js';
import { abandonRunFolder, openRunFolder, publishRunFolder } from './run-folder.js';
import { stageContext, type StageRecord } from './stage.js';
import { runDatasetStage } from './stages/dataset.js';
import { runChunksStages } from './stages/chunks.js';
import { runEncodeStage } from './stages/encode.js';
import { runIndexStage } from './stages/index.js';
import { runScoreStage } from './stages/score.js';
import { runSplitStage, type SplitStage } from './stages/split.js';
import { runCrossFitSeed } from './crossfit/seed.js';
import { openTransferSource, runTransferAdapt, type TransferredFrom } from './transfer.js';
import type { RunResults } from './run-results.js';

/** Where a run writes and what it tells the caller while it works. */
export interface RunExperimentOptions {
  readonly experiment: Experiment;
  /** The experiment file, for the receipt (and for `lmeb:` paths relative to it). */
  readonly configPath: string;
  /** The exact command line, for the receipt. */
  readonly argv: readonly string[];
  /** The cache root (default: `BFE_CACHE_DIR` or `.bfe-cache`). */
  readonly cacheDir?: string | undefined;
  /** Where run folders go (default `runs`). */
  readonly runsDir?: string | undefined;
  /** Stage start/end lines and progress (stderr). */
  readonly log?: (line: string) => void;
  readonly progress?: (label: string, done: number, total: number, extra?: string) => void;
}

/** What a finished run left. */
export interface RunOutcome {
  readonly runDir: string;
  readonly runId: string;
  readonly stages: readonly StageRecord[];
  /** The first seed's results (also `seeds/<seed>/results.json`). */
  readonly results: Results;
  /** The run folder's `results.json`: the mean over training seeds, and every seed's results. */
  readonly summary: RunResults;
  /** Every seed's results, in seed order. */
  readonly perSeed: ReadonlyArray<{ readonly seed: number | null; readonly results: Results }>;
  readonly seconds: number;
  /** The terminal rendering of the report. */
  readonly terminal: string;
}

/**
 * The artifact store of a run, with the team cache when TURBO_API/TURBO_TOKEN/TURBO_TEAM are
 * set: checked before any stage, so a wrong token stops the run (REMOTE_CACHE_AUTH) instead of
 * recomputing everything as silent misses.
 */
export async function openRunStore(
  cacheDir: string | undefined,
  log: (line: string) => void,
): Promise<ArtifactStore> {
  const remoteConfig = remoteCacheFromEnv();
  const remote = remoteConfig === undefined ? undefined : new RemoteCacheClient(remoteConfig);
  await remote?.preflight();
  if (remote !== undefined) log(`remote cache: ${remote.config.api} (team ${remote.config.team})`);
  return ArtifactStore.open({
    root: cacheDir,
    remote,
    staleMs: staleMsFromEnv(),
    onEvent: (event) => {
      const line = describeCacheEvent(event);
      if (line !== undefined) log(line);
    },
    failpoint,
  });
}

/**
 * Runs an experiment (dataset → encode → split → adapt → score, one file each under `stages/`)
 * through the content-addressed cache: each stage's key is the hash of its inputs' keys, its
 * own config and its code version, so a rerun computes only what changed. The split stage runs
 * once for all training seeds (`split.seed`), or once per seed (`split.seed: per-seed`). The run
 * folder gets `results.json` (the mean over training seeds with the standard deviation, see
 * run-results.ts), the first seed's `per-query.jsonl` and `k-sweep.json`, per-seed folders,
 * `report.md`, `report.html` and `receipt.json`.
 */
export async function runExperiment(options: RunExperimentOptions): Promise<RunOutcome> {
  const started = performance.now();
  const e = options.experiment;
  const log = options.log ?? (() => {});
  const store = await openRunStore(options.cacheDir, log);
  const ctx = stageContext(store, log, options.progress ?? (() => {}));

  const dataset = await runDatasetStage(ctx, e, options.configPath);
  // `adapter.from`: the source experiment read and its encoder checked before anything encodes.
  const transfer = await openTransferSource(ctx, e, options.configPath, dataset);
  const encode = await runEncodeStage(ctx, e, dataset);
  const index = await runIndexStage(ctx, e, encode, dataset);
  // `systems.chunkedPooled`: one chunks@<size> stage per size (the paper's Appendix D control).
  const chunks = await runChunksStages(ctx, e, dataset, encode);
  // Training seeds (adapter initialisation and batch order); the split has its own seed: one
  // split shared by every training seed, or a new one per seed under `split.seed: per-seed`.
  const seeds = e.split.policy === 'none' ? [null] : e.seeds;
  const folds = e.split.folds;
  const sharedSplit =
    e.split.policy === 'none' || e.split.seed === 'per-seed' || folds !== undefined
      ? undefined
      : await runSplitStage(ctx, e, e.split.seed, dataset);
  // Cross-fitting (`split.folds`): one split per fold, shared by every training seed.
  const foldSplits: SplitStage[] = [];
  for (let f = 0; f < (folds ?? 0); f++) {
    foldSplits.push(await runSplitStage(ctx, e, e.split.seed as number, dataset, f));
  }
  const perSeed: Array<{
    seed: number | null;
    splitSeed: number | null;
    splitHash: string | null;
    score: ArtifactResult;
    adapt: ArtifactResult | undefined;
  }> = [];
  for (const seed of seeds) {
    if (seed !== null && foldSplits.length > 0) {
      perSeed.push(await runCrossFitSeed(ctx, e, seed, foldSplits, { dataset, encode, index }));
      continue;
    }
    let split: SplitStage | undefined;
    let adapt: ArtifactResult | undefined;
    if (seed !== null) {
      split = sharedSplit ?? (await runSplitStage(ctx, e, seed, dataset));
      if (e.adapter.enabled) {
        const { runAdaptStage } = await import('./stages/adapt.js');
        adapt = await runAdaptStage(ctx, e, seed, {
          dataset,
          encode,
          split,
          ...(index === undefined ? {} : { index }),
        });
      }
    }
    let transferredFrom: TransferredFrom | undefined;
    if (transfer !== undefined) {
      // The source's adapter at this training seed (without a split: the experiment's first).
      const evaluated = async (): Promise<readonly string[]> =>
        split?.split.queries[e.split.evaluate] ??
        (await dataset.load()).benchmark.queries.map((q) => q.id);
      const target = { experiment: e, configPath: options.configPath };
      ({ adapt, transferredFrom } = await runTransferAdapt(
        transfer,
        target,
        seed ?? e.seeds[0]!,
        evaluated,
      ));
    }
    const tag = seed === null ? '' : `@${seed}`;
    const score = await runScoreStage(ctx, e, {
      tag,
      dataset,
      encode,
      split,
      adapt,
      index,
      ...(transferredFrom === undefined ? {} : { transferredFrom }),
      chunks,
    });
    perSeed.push({
      seed,
      splitSeed: split?.split.seed ?? null,
      splitHash: split?.split.hash ?? null,
      score,
      adapt,
    });
  }
  const selectionData = isSelectionData(e);

  // --- the run folder: copies of the artifacts people read, the receipt and the report.
  const folder = await openRunFolder({
    runsDir: options.runsDir ?? 'runs',
    experiment: e.name,
    stageKeys: ctx.records.map((s) => s.key),
    perSeed,
  });
  // A failed run (a full disk, a denied write) leaves no partial run folder behind.
  try {
    const { buildReceipt } = await import('./receipt.js');
    const seconds = (performance.now() - started) / 1000;
    const receipt = await buildReceipt({
      experiment: e,
      configPath: options.configPath,
      argv: options.argv,
      sources: dataset.sources,
      modelManifest: encode.modelManifest,
      bankManifestSha256: encode.bankManifestSha256,
      encoding: encode.encoding,
      splits: perSeed.map((p) => ({ seed: p.seed, splitSeed: p.splitSeed, hash: p.splitHash })),
      selectionData,
      stages: ctx.records,
      cacheRoot: store.root,
      seconds,
    });
    failpoint('run-folder');
    await writeFile(join(folder.tmpDir, 'receipt.json'), `${JSON.stringify(receipt, null, 2)}\n`);
    // Each seed's results, read and validated once: for the report and for the caller.
    const withResults = await Promise.all(
      perSeed.map(async (p) => ({
        ...p,
        results: parseResults(
          JSON.parse(await readFile(join(p.score.dir, 'results.json'), 'utf8')),
          p.score.dir,
        ),
      })),
    );
    const { buildRunResults } = await import('./run-results.js');
    const { readTrainingRecord } = await import('./stages/adapt.js');
    const trainings = await Promise.all(
      perSeed.map(async (p) =>
        p.adapt === undefined ? undefined : readTrainingRecord(p.adapt.dir),
      ),
    );
    const summary = buildRunResults({
      splitSeed: e.split.policy === 'none' ? null : e.split.seed,
      selectionData,
      load: await dataset.loadSummary(),
      runs: withResults.map((p, i) => ({
        seed: p.seed,
        splitHash: p.splitHash,
        results: p.results,
        selected: trainings[i]?.selected,
      })),
    });
    await writeFile(join(folder.tmpDir, 'results.json'), `${JSON.stringify(summary, null, 2)}\n`);
    const { writeRunReport } = await import('./run-report.js');
    const terminal = await writeRunReport({
      dir: folder.tmpDir,
      experiment: e,
      runId: folder.runId,
      perSeed: withResults.map((p, i) => ({ ...p, training: trainings[i] })),
      summary,
      receipt,
    });
    await publishRunFolder(folder);
    return {
      runDir: folder.runDir,
      runId: folder.runId,
      stages: ctx.records,
      results: withResults[0]!.results,
      summary,
      perSeed: withResults.map((p) => ({ seed: p.seed, results: p.results })),
      seconds,
      terminal,
    };
  } catch (error) {
    await abandonRunFolder(folder);
    throw error;
  }
}
