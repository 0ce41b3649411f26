import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { basename, dirname, join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  cachedByStage,
  dialogueTask,
  documentTask,
  freshDir,
  keyByStage,
  readJsonFile,
  runJson,
  sha256Of,
  sharedTask,
  useTinyModel,
  writeExperiment,
} from './fixtures/run/setup.ts';
import { parseRunResults } from '@bfe/runner';
import { runBfe } from './helpers.ts';

const tiny = useTinyModel();

/** The tiny training-free experiment: every query of the LMEB document fixture, k 4. */
function documentExperiment(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    name: 'tiny-document',
    dataset: { name: `lmeb:${documentTask}` },
    split: { policy: 'none' },
    model: { name: 'tiny' },
    // 64 is more bank tokens than any candidate set of the fixture holds: clamped, not an error.
    scorer: { k: 4, alpha: 0.5, kSweep: [2, 4, 64] },
    eval: { resamples: 200 },
    ...overrides,
  };
}

/** The adapter experiment on the shared-bank fixture (12 labelled queries, 30 memories). */
function adapterExperiment(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    name: 'tiny-adapter',
    dataset: { name: `lmeb:${sharedTask}` },
    seeds: [42],
    split: { policy: 'query-disjoint-shared-bank', seed: 42, ratios: [0.6, 0.2, 0.2] },
    model: { name: 'tiny' },
    scorer: { k: 4, alpha: 0.5, kSweep: [2, 4] },
    adapter: { enabled: true, rank: 2, epochs: 2, batchSize: 4, lr: 0.01 },
    eval: { resamples: 200 },
    ...overrides,
  };
}

const RUN_FILES = [
  'k-sweep.json',
  'per-query.jsonl',
  'receipt.json',
  'report.html',
  'report.md',
  'results.json',
];

describe('bfe run on the tiny model: cached stages, run folder, receipt', () => {
  it('computes every stage once, serves them all from the cache the second time, and reruns only what a change touches', async () => {
    const dir = freshDir(tiny.root(), 'document');
    const dirs = { cache: join(dir, 'cache'), runs: join(dir, 'runs') };
    const file = writeExperiment(dir, 'tiny.yaml', documentExperiment());

    const first = await runJson(file, dirs, tiny.env());
    expect(first.out.stages.map((s) => s.name)).toEqual(['dataset', 'encode', 'score']);
    expect(first.out.stages.every((s) => !s.cached)).toBe(true);

    const second = await runJson(file, dirs, tiny.env());
    expect(second.out.stages.every((s) => s.cached)).toBe(true);
    expect(keyByStage(second.out)).toEqual(keyByStage(first.out));
    expect(second.out.runDir).not.toBe(first.out.runDir);
    const resultsBytes = readFileSync(join(first.out.runDir, 'results.json'));
    expect(readFileSync(join(second.out.runDir, 'results.json')).equals(resultsBytes)).toBe(true);

    // The run folder, under <runs>/<name>/<runId>, with latest.json beside it.
    const runDir = second.out.runDir;
    expect(dirname(runDir)).toBe(join(dirs.runs, 'tiny-document'));
    expect(basename(runDir)).toBe(second.out.runId);
    expect(readdirSync(runDir).sort()).toEqual(RUN_FILES);
    expect(readJsonFile(join(dirs.runs, 'tiny-document', 'latest.json'))).toEqual({
      runId: second.out.runId,
      runDir,
    });
    expect(readdirSync(join(dirs.runs, 'tiny-document')).sort()).toEqual(
      [basename(first.out.runDir), basename(second.out.runDir), 'latest.json'].sort(),
    );
    // Without a split: one run (seed null), plain figures (no standard deviation).
    const summary = parseRunResults(readJsonFile(join(runDir, 'results.json')), 'results.json');
    expect(summary).toMatchObject({ dataset: 'lmeb:lmeb-document', split: 'all', seeds: [null] });
    expect(summary.splitSeed).toBeNull();
    expect(summary.selectionData).toBe(false);
    for (const s of summary.systems) expect(s.metrics['ndcg@10']?.std).toBeNull();
    const results = summary.runs[0]!.results;
    expect(results.dataset).toBe('lmeb:lmeb-document');
    expect(results.split).toBe('all');
    expect(results.meta).toMatchObject({ k: 4, alpha: 0.5 });
    expect(results.systems.map((s) => s.name)).toContain('sparse-fusion');
    expect(results.systems.every((s) => s.nQueries === 4)).toBe(true);
    expect(summary.systems.map((s) => s.name)).toEqual(results.systems.map((s) => s.name));
    const sweep = readJsonFile<{ points: { k: number; clampedGroups: number }[] }>(
      join(runDir, 'k-sweep.json'),
    );
    expect(sweep.points.map((p) => p.k)).toEqual([2, 4, 64]);
    expect(sweep.points.find((p) => p.k === 4)?.clampedGroups).toBe(0);
    expect(sweep.points.find((p) => p.k === 64)?.clampedGroups).toBeGreaterThan(0);
    const perQuery = readFileSync(join(runDir, 'per-query.jsonl'), 'utf8').trim().split('\n');
    expect(perQuery).toHaveLength(4 * results.systems.length);
    expect(readFileSync(join(runDir, 'report.md'), 'utf8')).toContain('tiny-document');
    expect(readFileSync(join(runDir, 'report.html'), 'utf8')).toContain('<html');

    const receipt = readJsonFile<{
      command: string[];
      config: { name: string; scorer: { k: number; kSweep: number[] }; eval: { ks: number[] } };
      source: { commit: string | null; dirty: boolean | null };
      dataset: { name: string; files: { name: string; sha256: string }[] };
      model: { name: string };
      stages: { name: string; key: string; cached: boolean; seconds: number }[];
      cacheRoot: string;
      peakRssBytes: number;
    }>(join(runDir, 'receipt.json'));
    expect(receipt.command).toEqual([
      'bfe',
      'run',
      file,
      '--cache-dir',
      dirs.cache,
      '--runs-dir',
      dirs.runs,
      '--json',
    ]);
    // The resolved config: what was written plus every default.
    expect(receipt.config.name).toBe('tiny-document');
    expect(receipt.config.scorer).toMatchObject({ k: 4, kSweep: [2, 4, 64] });
    expect(receipt.config.eval.ks).toEqual([1, 4, 5, 8, 10, 16, 25, 50]);
    expect(receipt.source.commit).toMatch(/^[0-9a-f]{40}$/);
    expect(receipt.model.name).toBe('tiny');
    expect(receipt.dataset.files.map((f) => f.name)).toEqual([
      'candidates.jsonl',
      'corpus.jsonl',
      'qrels.tsv',
      'queries.jsonl',
    ]);
    for (const f of receipt.dataset.files)
      expect(f.sha256).toBe(sha256Of(join(documentTask, f.name)));
    expect(receipt.stages.map((s) => [s.name, s.key, s.cached])).toEqual(
      second.out.stages.map((s) => [s.name, s.key, true]),
    );
    expect(
      readJsonFile<{ stages: { cached: boolean }[] }>(
        join(first.out.runDir, 'receipt.json'),
      ).stages.map((s) => s.cached),
    ).toEqual([false, false, false]);
    expect(receipt.cacheRoot).toBe(dirs.cache);
    expect(receipt.peakRssBytes).toBeGreaterThan(1 << 20);

    // Only the fusion weight changes: only the score stage runs again.
    const alpha = writeExperiment(
      dir,
      'tiny-alpha.yaml',
      documentExperiment({ scorer: { k: 4, alpha: 0.25, kSweep: [2, 4, 64] } }),
    );
    const third = await runJson(alpha, dirs, tiny.env());
    expect(cachedByStage(third.out)).toEqual({ dataset: true, encode: true, score: false });
    expect(keyByStage(third.out).encode).toBe(keyByStage(first.out).encode);
    expect(keyByStage(third.out).score).not.toBe(keyByStage(first.out).score);
    expect(
      parseRunResults(readJsonFile(join(third.out.runDir, 'results.json')), 'results.json').runs[0]!
        .results.meta?.alpha,
    ).toBe(0.25);

    // Another dataset: every stage after it runs again.
    const other = writeExperiment(
      dir,
      'tiny-dialogue.yaml',
      documentExperiment({ dataset: { name: `lmeb:${dialogueTask}` } }),
    );
    const fourth = await runJson(other, dirs, tiny.env());
    expect(cachedByStage(fourth.out)).toEqual({ dataset: false, encode: false, score: false });
    for (const s of fourth.out.stages) expect(s.key).not.toBe(keyByStage(first.out)[s.name]);
    expect(
      parseRunResults(readJsonFile(join(fourth.out.runDir, 'results.json')), 'results.json')
        .dataset,
    ).toBe('lmeb:lmeb-dialogue');
    // Nothing left over in the cache's scratch space.
    expect(readdirSync(join(dirs.cache, 'tmp'))).toEqual([]);
    expect(readdirSync(join(dirs.cache, 'locks'))).toEqual([]);
    expect(readdirSync(join(dirs.cache, 'objects')).sort()).toEqual(['dataset', 'encode', 'score']);
    expect(readdirSync(join(dirs.cache, 'objects', 'score'))).toHaveLength(3);
  }, 120_000);

  it('trains the adapter on a shared-bank split: an adapted system, seed files, diagnostic marks', async () => {
    const dir = freshDir(tiny.root(), 'adapter');
    const dirs = { cache: join(dir, 'cache'), runs: join(dir, 'runs') };
    // JSON this time, with the dataset relative to the experiment file.
    const file = writeExperiment(
      dir,
      'adapter.json',
      adapterExperiment({ dataset: { name: `lmeb:${relative(dir, sharedTask)}` } }),
    );
    const first = await runJson(file, dirs, tiny.env());
    expect(first.out.stages.map((s) => [s.name, s.cached])).toEqual([
      ['dataset', false],
      ['encode', false],
      ['split@42', false],
      ['adapt@42', false],
      ['score@42', false],
    ]);
    const bankFiles = (): Record<string, string> => {
      const bank = join(dirs.cache, 'objects', 'encode', keyByStage(first.out).encode!, 'bank');
      return Object.fromEntries(readdirSync(bank).map((f) => [f, sha256Of(join(bank, f))]));
    };
    const bankAfterFirstTraining = bankFiles();
    const runDir = first.out.runDir;
    expect(readdirSync(runDir).sort()).toEqual([...RUN_FILES, 'seeds'].sort());
    const seedDir = join(runDir, 'seeds', '42');
    expect(readdirSync(seedDir).sort()).toEqual([
      'adapter-zero-floor.json',
      'adapter.json',
      'k-sweep.json',
      'per-query.jsonl',
      'results.json',
      'training.json',
    ]);
    // results.json holds the seed's results (one seed: plain figures, std null).
    const summary = parseRunResults(readJsonFile(join(runDir, 'results.json')), 'results.json');
    expect(summary.seeds).toEqual([42]);
    expect(summary.runs[0]!.results).toEqual(readJsonFile(join(seedDir, 'results.json')));

    const results = readJsonFile<{
      split: string;
      systems: { name: string; nQueries: number }[];
      meta: Record<string, unknown> & { adapter: Record<string, unknown> };
    }>(join(seedDir, 'results.json'));
    expect(results.split).toBe('test');
    expect(results.systems.map((s) => s.name)).toContain('adapted');
    const adapted = results.systems.find((s) => s.name === 'adapted')!;
    expect(adapted.nQueries).toBe(results.systems[0]!.nQueries);
    expect(adapted.nQueries).toBeGreaterThan(0);
    expect(results.meta).toMatchObject({
      splitPolicy: 'query-disjoint-shared-bank',
      splitSeed: 42,
      diagnosticOnly: true,
      promotionEligible: false,
      marks: ['shared-unlabelled-memory'],
    });
    expect(results.meta.adapter).toMatchObject({ seed: 42, rank: 2 });

    const training = readJsonFile<{
      seed: number;
      trainQueries: number;
      validationQueries: number;
      steps: number[];
      epochs: { epoch: number }[];
      selected: { epoch: number; alpha: number; zeroFloor: { epoch: number; alpha: number } };
    }>(join(seedDir, 'training.json'));
    expect(training.seed).toBe(42);
    expect(training.trainQueries).toBeGreaterThan(0);
    expect(training.validationQueries).toBeGreaterThan(0);
    expect(training.epochs.map((e) => e.epoch)).toEqual([0, 1, 2]);
    expect(training.steps.length).toBeGreaterThan(0);
    expect([0.25, 0.5, 0.75]).toContain(training.selected.alpha);
    // The scored adapter is the one training.json selected.
    const zeroFloor = training.selected.zeroFloor;
    expect([0.25, 0.5, 0.75]).toContain(zeroFloor.alpha);
    expect(results.meta.adapter).toMatchObject({
      selectedEpoch: training.selected.epoch,
      selectedAlpha: training.selected.alpha,
      identity: training.selected.epoch === 0,
      // adapted-zero-floor's own selection, recorded beside adapted's.
      zeroFloor: { selectedEpoch: zeroFloor.epoch, selectedAlpha: zeroFloor.alpha },
    });
    expect(summary.adapter?.seeds).toEqual([
      {
        seed: 42,
        selectedEpoch: training.selected.epoch,
        selectedAlpha: training.selected.alpha,
        identity: training.selected.epoch === 0,
        zeroFloor: { selectedEpoch: zeroFloor.epoch, selectedAlpha: zeroFloor.alpha },
      },
    ]);
    expect(readJsonFile(join(seedDir, 'adapter-zero-floor.json'))).toMatchObject({ rank: 2 });
    expect(readJsonFile(join(seedDir, 'adapter.json'))).toMatchObject({ rank: 2 });
    // After training on the bank in memory, the score stage read the memory tokens from the file.
    const scoreManifest = readJsonFile<{ meta: Record<string, unknown> }>(
      join(dirs.cache, 'objects', 'score', keyByStage(first.out)['score@42']!, 'artifact.json'),
    );
    expect(scoreManifest.meta).toMatchObject({
      memoryTokens: 'file',
      memoryTokenFileReads: { bytes: expect.any(Number), reads: expect.any(Number) },
    });
    expect((scoreManifest.meta.memoryTokenFileReads as { bytes: number }).bytes).toBeGreaterThan(0);
    const report = readFileSync(join(runDir, 'report.md'), 'utf8');
    expect(report).toContain('adapted');
    expect(report).toContain('shared-unlabelled-memory');

    // The fusion weight only: split and adapter come from the cache.
    const alpha = writeExperiment(
      dir,
      'alpha.json',
      adapterExperiment({
        dataset: { name: `lmeb:${relative(dir, sharedTask)}` },
        scorer: { k: 4, alpha: 0.75, kSweep: [2, 4] },
      }),
    );
    const second = await runJson(alpha, dirs, tiny.env());
    expect(cachedByStage(second.out)).toEqual({
      dataset: true,
      encode: true,
      'split@42': true,
      'adapt@42': true,
      'score@42': false,
    });
    // An adapter setting: the split stays, the adapter and the scores are made again.
    const epochs = writeExperiment(
      dir,
      'epochs.json',
      adapterExperiment({
        dataset: { name: `lmeb:${relative(dir, sharedTask)}` },
        adapter: { enabled: true, rank: 2, epochs: 1, batchSize: 4, lr: 0.01 },
      }),
    );
    const third = await runJson(epochs, dirs, tiny.env());
    expect(cachedByStage(third.out)).toEqual({
      dataset: true,
      encode: true,
      'split@42': true,
      'adapt@42': false,
      'score@42': false,
    });
    expect(
      readJsonFile<{ epochs: unknown[] }>(join(third.out.runDir, 'seeds', '42', 'training.json'))
        .epochs,
    ).toHaveLength(2);

    // Training never touches the memory bank: after three trainings every bank file is
    // byte-identical, and each Arrow file still has the SHA-256 bank.json recorded when encoding.
    const bankNow = bankFiles();
    expect(bankNow).toEqual(bankAfterFirstTraining);
    const manifest = readJsonFile<{ files: { path: string; sha256: string }[] }>(
      join(dirs.cache, 'objects', 'encode', keyByStage(first.out).encode!, 'bank', 'bank.json'),
    );
    expect(manifest.files.length).toBeGreaterThanOrEqual(4);
    for (const f of manifest.files) expect(bankNow[basename(f.path)]).toBe(f.sha256);
  }, 120_000);
});

describe('bfe run scorer backends', () => {
  it('the plain JavaScript kernel ranks exactly as onnxruntime (scorer.backend: js)', async () => {
    const dir = freshDir(tiny.root(), 'backend');
    const outs = [];
    for (const backend of ['onnxruntime', 'js']) {
      const file = writeExperiment(
        dir,
        `${backend}.yaml`,
        documentExperiment({ scorer: { k: 4, alpha: 0.5, kSweep: [2, 4], backend } }),
      );
      outs.push(
        (
          await runJson(
            file,
            { cache: join(dir, `cache-${backend}`), runs: join(dir, 'runs') },
            tiny.env(),
          )
        ).out,
      );
    }
    const [ort, js] = outs;
    expect(keyByStage(js!)['score']).not.toBe(keyByStage(ort!)['score']);
    for (const f of ['per-query.jsonl', 'results.json', 'k-sweep.json']) {
      expect(readFileSync(join(js!.runDir, f), 'utf8')).toBe(
        readFileSync(join(ort!.runDir, f), 'utf8'),
      );
    }
  }, 120_000);
});

describe('bfe run output modes', () => {
  it('--quiet prints nothing on stderr; --json prints exactly one JSON object on stdout', async () => {
    const dir = freshDir(tiny.root(), 'modes');
    const file = writeExperiment(dir, 'tiny.yaml', documentExperiment());
    const args = ['run', file, '--cache-dir', join(dir, 'cache'), '--runs-dir', join(dir, 'runs')];

    // Human output: progress and stage lines on stderr, the table and run folder on stdout.
    const human = await runBfe(args, tiny.env());
    expect(human.code, human.stderr).toBe(0);
    expect(human.stderr).toMatch(/^stage dataset: …$/m);
    expect(human.stderr).toMatch(/^stage score: computed [0-9a-f]{12} /m);
    expect(human.stdout).toContain('sparse-fusion');
    expect(human.stdout).toMatch(/^run {8}\S+tiny-document\/\S+$/m);

    const quiet = await runBfe([...args, '--quiet'], tiny.env());
    expect(quiet.code).toBe(0);
    expect(quiet.stderr).toBe('');
    expect(quiet.stdout).toContain('sparse-fusion');

    const json = await runBfe([...args, '--json', '--quiet'], tiny.env());
    expect(json.code).toBe(0);
    expect(json.stderr).toBe('');
    // The whole of stdout is one JSON value: an object, nothing before or after it.
    const out = JSON.parse(json.stdout) as Record<string, unknown>;
    expect(out).toBeTypeOf('object');
    expect(Array.isArray(out)).toBe(false);
    expect(existsSync(out.runDir as string)).toBe(true);
    const stages = out.stages as { name: string; cached: boolean; seconds: number }[];
    expect(stages.map((s) => s.name)).toEqual(['dataset', 'encode', 'score']);
    for (const s of stages) {
      expect(s.cached).toBe(true);
      expect(s.seconds).toBeTypeOf('number');
      expect(s.seconds).toBeGreaterThanOrEqual(0);
    }

    // --json without --quiet: the progress stays on stderr, stdout is still one object.
    const loud = await runBfe([...args, '--json'], tiny.env());
    expect(loud.code).toBe(0);
    expect(loud.stderr).toContain('stage score: cached');
    expect((JSON.parse(loud.stdout) as { runDir: string }).runDir).not.toBe(out.runDir);
  }, 120_000);
});
