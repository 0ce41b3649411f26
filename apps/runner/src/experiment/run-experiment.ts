import { copyFile, mkdir, readFile, rename, rm, rmdir, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import {
  DataError,
  benchmarkHash,
  contentHash,
  fileSha256,
  splitSchema,
  writeFileAtomic,
  type LoadedDataset,
  type Split,
} from '@bfe/core';
import { dataLocationFromEnv, datasetSources, loadDataset } from '@bfe/datasets';
import {
  BANK_MANIFEST_FILE,
  encodeBenchmark,
  loadModelManifest,
  openBank,
  openEncoder,
  resolveModelDir,
  type OpenedBank,
} from '@bfe/encoder';
import { parseResults, writePerQueryJsonl, perQueryLines, type Results } from '@bfe/eval';
import { makeSplit } from '@bfe/split';
import { ArtifactStore, type ArtifactResult } from '../cache/store.js';
import type { ArtifactSpec } from '../cache/key.js';
import { runScore } from '../score-pipeline.js';
import { buildScoreOutputs, type SplitMeta } from '../score-outputs.js';
import { codeVersion } from './code-version.js';
import type { Experiment } from './config.js';

/** One stage as a run saw it. */
export interface StageRecord {
  /** `dataset`, `encode`, `split@42`, `adapt@42`, `score@42`, `report`. */
  readonly name: string;
  readonly key: string;
  readonly cached: boolean;
  readonly seconds: number;
}

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
  /** The first seed's results (written as `results.json`). */
  readonly results: Results;
  /** Every seed's results, in seed order. */
  readonly perSeed: ReadonlyArray<{ readonly seed: number | null; readonly results: Results }>;
  readonly seconds: number;
  /** The terminal rendering of the report. */
  readonly terminal: string;
}

/**
 * Runs an experiment (dataset → encode → split → adapt → score → report) through the
 * content-addressed cache: each stage's key is the hash of its inputs' keys, its own config
 * and its code version, so a rerun computes only what changed. The run folder gets
 * `results.json`, `per-query.jsonl`, `k-sweep.json`, per-seed folders, `report.md`,
 * `report.html` and `receipt.json`.
 */
export async function runExperiment(options: RunExperimentOptions): Promise<RunOutcome> {
  const started = performance.now();
  const e = options.experiment;
  const log = options.log ?? (() => {});
  const progress = options.progress ?? (() => {});
  const store = await ArtifactStore.open({ root: options.cacheDir });
  const stages: StageRecord[] = [];
  const stage = async (
    name: string,
    spec: ArtifactSpec,
    compute: (dir: string) => Promise<Record<string, unknown> | undefined>,
  ): Promise<ArtifactResult> => {
    log(`stage ${name}: …`);
    // Test failpoint: BFE_FAULT_STAGE_DELAY=<stage>:<ms> (e.g. `score:5000`; the stage kind or
    // its full name, `score@42`) sleeps that long inside the compute, before it computes, so a
    // test can interrupt a run mid-stage. An awaited timer, so signals are handled meanwhile.
    const fault = /^(.+):(\d+)$/.exec(process.env.BFE_FAULT_STAGE_DELAY ?? '');
    const faultMs =
      fault !== null && (fault[1] === name || fault[1] === spec.stage) ? +fault[2]! : 0;
    const result = await store.getOrCreate(spec, async (dir) => {
      log(`stage ${name}: computing`);
      if (faultMs > 0) await new Promise((wake) => setTimeout(wake, faultMs));
      return (await compute(dir)) as never;
    });
    stages.push({ name, key: result.key, cached: result.cached, seconds: result.seconds });
    log(
      `stage ${name}: ${result.cached ? 'cached' : 'computed'} ${result.key.slice(0, 12)} (${result.seconds.toFixed(1)} s)`,
    );
    return result;
  };

  // --- dataset: identity from the source files; the parse happens only when a stage needs it.
  const datasetName = e.dataset.name.startsWith('lmeb:')
    ? `lmeb:${resolve(options.configPath, '..', e.dataset.name.slice('lmeb:'.length))}`
    : e.dataset.name;
  const location = dataLocationFromEnv();
  const sources = await datasetSources(datasetName, location);
  let loaded: Promise<LoadedDataset> | undefined;
  const dataset = (): Promise<LoadedDataset> => {
    loaded ??= loadDataset(datasetName, { location, options: e.dataset.options });
    return loaded;
  };
  const datasetStage = await stage(
    'dataset',
    {
      stage: 'dataset',
      version: await codeVersion(['@bfe/core', '@bfe/datasets']),
      config: { name: e.dataset.name, options: e.dataset.options },
      inputs: Object.fromEntries(sources.map((s) => [`file:${s.name}`, s.sha256])),
    },
    async (dir) => {
      const { benchmark, labels, report } = await dataset();
      const summary = {
        name: benchmark.name,
        benchmarkHash: benchmarkHash(benchmark),
        memories: benchmark.memories.length,
        queries: benchmark.queries.length,
        qrels: labels.pairCount,
        subtasks: benchmark.subtasks,
        sources,
        report: report.toJSON(),
      };
      await writeFile(join(dir, 'dataset.json'), `${JSON.stringify(summary, null, 2)}\n`);
      return { benchmarkHash: summary.benchmarkHash };
    },
  );
  const expectedHash = String(datasetStage.manifest.meta.benchmarkHash);
  const benchmarkFor = async (): Promise<LoadedDataset> => {
    const d = await dataset();
    const hash = benchmarkHash(d.benchmark);
    if (hash !== expectedHash) {
      throw new DataError(
        `the dataset loads as benchmark ${hash.slice(0, 12)}…, but its cached stage says ${expectedHash.slice(0, 12)}…`,
        {
          suggestion:
            'The loader is not deterministic, or the cache is stale: run `bfe cache verify`.',
        },
      );
    }
    return d;
  };

  // --- encode: one frozen pass over memories and queries (labels never reach it).
  const modelDir = e.model.dir === undefined ? resolveModelDir(e.model.name) : resolve(e.model.dir);
  const modelManifest = await loadModelManifest(modelDir);
  const encodeStage = await stage(
    'encode',
    {
      stage: 'encode',
      version: await codeVersion(['@bfe/core', '@bfe/encoder']),
      config: {
        model: modelManifest.name,
        maxLength: e.model.maxLength ?? modelManifest.maxLength,
        dtype: e.model.dtype,
        executionProvider: e.model.executionProvider,
      },
      inputs: { dataset: datasetStage.key, model: modelManifest.modelSha256 },
    },
    async (dir) => {
      const { benchmark } = await benchmarkFor();
      const encoder = await openEncoder(modelDir, modelManifest, {
        executionProvider: e.model.executionProvider,
        ...(e.model.maxLength === undefined ? {} : { maxLength: e.model.maxLength }),
        ...(e.model.threads === undefined ? {} : { threads: e.model.threads }),
      });
      try {
        const manifest = await encodeBenchmark(benchmark, encoder, join(dir, 'bank'), {
          dtype: e.model.dtype,
          executionProvider: e.model.executionProvider,
          onProgress: (role, done, total, tokens) =>
            progress(`encode ${role}`, done, total, `${tokens} tokens`),
        });
        return {
          memoryTokens: manifest.memories.tokens,
          queryTokens: manifest.queries.tokens,
          truncated: manifest.memories.truncated + manifest.queries.truncated,
        };
      } finally {
        await encoder.dispose();
      }
    },
  );
  const bankDir = join(encodeStage.dir, 'bank');
  let bankPromise: Promise<OpenedBank> | undefined;
  const bank = (): Promise<OpenedBank> => {
    bankPromise ??= openBank(bankDir);
    return bankPromise;
  };
  const bankManifestSha256 = await fileSha256(join(bankDir, BANK_MANIFEST_FILE));

  const seeds = e.split.policy === 'none' ? [null] : e.split.seeds;
  const perSeed: Array<{
    seed: number | null;
    splitHash: string | null;
    score: ArtifactResult;
    adapt: ArtifactResult | undefined;
  }> = [];
  for (const seed of seeds) {
    const tag = seed === null ? '' : `@${seed}`;
    // --- split: seeded, label-free; its hash goes into every later key.
    let splitStage: ArtifactResult | undefined;
    if (seed !== null) {
      splitStage = await stage(
        `split${tag}`,
        {
          stage: 'split',
          version: await codeVersion(['@bfe/core', '@bfe/split']),
          config: { policy: e.split.policy, seed, ratios: e.split.ratios },
          inputs: { dataset: datasetStage.key },
        },
        async (dir) => {
          const { benchmark } = await benchmarkFor();
          const split = makeSplit(benchmark, {
            policy: e.split.policy as Split['policy'],
            seed,
            ratios: e.split.ratios,
          });
          await writeFile(join(dir, 'split.json'), `${JSON.stringify(split, null, 2)}\n`);
          return { splitHash: split.hash };
        },
      );
    }
    const split = splitStage === undefined ? undefined : await readSplit(splitStage.dir);

    // --- adapt: train on train labels, select epoch × α on validation labels only.
    let adaptStage: ArtifactResult | undefined;
    if (e.adapter.enabled && split !== undefined && seed !== null) {
      const { adaptStageSpec, computeAdapt } = await import('./adapt.js');
      adaptStage = await stage(
        `adapt${tag}`,
        await adaptStageSpec(e, seed, { encode: encodeStage.key, split: splitStage!.key }),
        async (dir) =>
          computeAdapt({
            dir,
            experiment: e,
            seed,
            split,
            bank: await bank(),
            dataset: await benchmarkFor(),
            progress,
          }),
      );
    }

    // --- score: every system on the evaluated part, the adapted one too when trained.
    const scoreStage = await stage(
      `score${tag}`,
      {
        stage: 'score',
        version: await codeVersion(
          ['@bfe/core', '@bfe/scorer', '@bfe/eval', '@bfe/adapter'],
          ['score-pipeline.ts', 'score-outputs.ts', 'k-sweep.ts', 'experiment/adapt.ts'],
        ),
        config: {
          part: e.split.policy === 'none' ? 'all' : e.split.evaluate,
          k: e.scorer.k,
          alpha: e.scorer.alpha,
          kSweep: e.scorer.kSweep,
          backend: e.scorer.backend,
          executionProvider: e.scorer.executionProvider,
          eval: e.eval,
        },
        inputs: {
          encode: encodeStage.key,
          ...(splitStage === undefined ? {} : { split: splitStage.key }),
          ...(adaptStage === undefined ? {} : { adapt: adaptStage.key }),
        },
      },
      async (dir) => {
        const opened = await bank();
        const { benchmark, labels } = await benchmarkFor();
        const part = e.split.evaluate;
        const queryIds = split === undefined ? undefined : new Set(split.queries[part]);
        let adapted: { queryTokens: Float32Array; alpha: number } | undefined;
        let adapterMeta: Record<string, unknown> | undefined;
        if (adaptStage !== undefined) {
          const { loadSelectedAdapter } = await import('./adapt.js');
          const selected = await loadSelectedAdapter(adaptStage.dir, opened);
          adapted = { queryTokens: selected.queryTokens, alpha: selected.alpha };
          adapterMeta = selected.meta;
        }
        const run = await runScore({
          bank: opened,
          benchmark,
          labels,
          queryIds,
          k: e.scorer.k,
          alpha: e.scorer.alpha,
          ks: e.eval.ks,
          kSweep: e.scorer.kSweep,
          executionProvider: e.scorer.executionProvider,
          backend: e.scorer.backend,
          ...(e.scorer.threads === undefined ? {} : { threads: e.scorer.threads }),
          ...(adapted === undefined ? {} : { adapted }),
          onProgress: (done, total) => progress('score candidate groups', done, total),
        });
        const { results, sweep } = buildScoreOutputs({
          run,
          benchmark,
          bank: opened,
          splitName: split === undefined ? 'all' : part,
          split: split === undefined ? undefined : splitMetaOf(split),
          k: e.scorer.k,
          alpha: e.scorer.alpha,
          executionProvider: e.scorer.executionProvider,
          resamples: e.eval.resamples,
          seed: e.eval.seed,
          ...(adapterMeta === undefined ? {} : { extraMeta: { adapter: adapterMeta } }),
        });
        await writeFile(join(dir, 'results.json'), `${JSON.stringify(results, null, 2)}\n`);
        await writeFile(join(dir, 'k-sweep.json'), `${JSON.stringify(sweep, null, 2)}\n`);
        await writePerQueryJsonl(
          join(dir, 'per-query.jsonl'),
          (function* () {
            for (const s of run.systems) yield* perQueryLines(s.name, s.evaluation);
          })(),
        );
        return { queries: run.stats.queries, scoringSeconds: run.stats.seconds.scoring };
      },
    );
    perSeed.push({ seed, splitHash: split?.hash ?? null, score: scoreStage, adapt: adaptStage });
  }

  // --- the run folder: copies of the artifacts people read, and the receipt.
  const runsDir = resolve(options.runsDir ?? 'runs');
  const baseId = `${new Date()
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d+Z$/, 'Z')}-${contentHash(stages.map((s) => s.key)).slice(0, 8)}`;
  // Two runs of one experiment on one cache can finish in the same second with the same stage
  // keys: the run id is reserved by creating its (empty) folder, so the second takes `-2`.
  await mkdir(join(runsDir, e.name), { recursive: true });
  let runId = baseId;
  for (let n = 2; ; n++) {
    try {
      await mkdir(join(runsDir, e.name, runId));
      break;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      runId = `${baseId}-${n}`;
    }
  }
  const runDir = join(runsDir, e.name, runId);
  const tmpDir = `${runDir}.tmp-${process.pid}`;
  await rm(tmpDir, { recursive: true, force: true });
  await mkdir(tmpDir, { recursive: true });
  const first = perSeed[0]!;
  for (const f of ['results.json', 'per-query.jsonl', 'k-sweep.json']) {
    await copyFile(join(first.score.dir, f), join(tmpDir, f));
  }
  for (const p of perSeed) {
    if (p.seed === null) continue;
    const seedDir = join(tmpDir, 'seeds', String(p.seed));
    await mkdir(seedDir, { recursive: true });
    for (const f of ['results.json', 'per-query.jsonl', 'k-sweep.json']) {
      await copyFile(join(p.score.dir, f), join(seedDir, f));
    }
    if (p.adapt !== undefined) {
      for (const f of ['adapter.json', 'training.json']) {
        await copyFile(join(p.adapt.dir, f), join(seedDir, f));
      }
    }
  }
  const { buildReceipt } = await import('./receipt.js');
  const seconds = (performance.now() - started) / 1000;
  const receipt = await buildReceipt({
    experiment: e,
    configPath: options.configPath,
    argv: options.argv,
    sources,
    modelManifest,
    bankManifestSha256,
    splits: perSeed.map((p) => ({ seed: p.seed, hash: p.splitHash })),
    stages,
    cacheRoot: store.root,
    seconds,
  });
  await writeFile(join(tmpDir, 'receipt.json'), `${JSON.stringify(receipt, null, 2)}\n`);
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
  const { writeRunReport } = await import('./report-stage.js');
  const terminal = await writeRunReport({
    dir: tmpDir,
    experiment: e,
    runId,
    perSeed: withResults,
    receipt,
  });
  // The finished folder replaces the empty reserved one in one rename (POSIX); Windows refuses
  // to rename onto a directory, so there it is removed first.
  await rename(tmpDir, runDir).catch(async (error: unknown) => {
    if ((error as NodeJS.ErrnoException).code !== 'EPERM') throw error;
    await rmdir(runDir);
    await rename(tmpDir, runDir);
  });
  // Written aside and renamed, so runs finishing together never interleave their bytes.
  const latest = join(runsDir, e.name, 'latest.json');
  await writeFileAtomic(latest, `${JSON.stringify({ runId, runDir }, null, 2)}\n`);
  return {
    runDir,
    runId,
    stages,
    results: withResults[0]!.results,
    perSeed: withResults.map((p) => ({ seed: p.seed, results: p.results })),
    seconds,
    terminal,
  };
}

async function readSplit(dir: string): Promise<Split> {
  const parsed = splitSchema.safeParse(JSON.parse(await readFile(join(dir, 'split.json'), 'utf8')));
  if (!parsed.success) throw new DataError(`${dir}/split.json is not a split file`);
  return parsed.data;
}

function splitMetaOf(split: Split): SplitMeta {
  return {
    splitHash: split.hash,
    splitPolicy: split.policy,
    splitSeed: split.seed,
    diagnosticOnly: split.diagnosticOnly,
    promotionEligible: split.promotionEligible,
    marks: split.marks,
  };
}
