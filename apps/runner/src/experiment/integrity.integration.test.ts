import { mkdir, mkdtemp, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import type { Benchmark, RelevanceLabels } from '@bfe/core';
import { suiteTmpDir } from '@bfe/core/testing';
import type { Results } from '@bfe/eval';
import { installTinyModel, repoRoot, runIn } from './testing/tiny-model.js';
import { parseExperiment, type Experiment } from './config.js';
import type { RunOutcome } from './run-experiment.js';
import { parseRunResults } from './run-results.js';
import { ArtifactStore } from '../cache/store.js';
import { scoreAndWrite } from '../score/write.js';
import { stageContext } from './stage.js';
import { computeAdapt, readTrainingRecord, trainingRecordSchema } from './stages/adapt.js';
import { runDatasetStage } from './stages/dataset.js';
import { runEncodeStage } from './stages/encode.js';
import { runSplitStage } from './stages/split.js';

// Test labels cannot reach training or selection (shown: every test label changed, the adapter
// artifact byte-identical), training seeds and the split seed, seed means in results.json and the report, selection-data
// marks: runExperiment in process on the tiny encoder graph and the shared-bank LMEB fixture
// (12 labelled queries over 3 candidate lists of 10 memories).

const sharedTask = join(repoRoot, 'tests/fixtures/run/lmeb-shared');

const suiteRoot = suiteTmpDir('bfe-run-seeds-');
let root = '';
let modelDir = '';
beforeAll(async () => {
  root = suiteRoot();
  modelDir = await installTinyModel(root);
});

/** The shared-bank fixture, split 60/20/20, the adapter on (rank 2, two epochs). */
function experiment(raw: Record<string, unknown> = {}): Experiment {
  return parseExperiment({
    name: 'tiny-seeds',
    dataset: { name: `lmeb:${sharedTask}` },
    split: { policy: 'query-disjoint-shared-bank' },
    model: { name: 'tiny', dir: modelDir },
    scorer: { k: 4, kSweep: [2, 4] },
    adapter: { enabled: true, rank: 2, epochs: 2, batchSize: 4, lr: 0.01 },
    eval: { resamples: 50 },
    ...raw,
  });
}

async function run(e: Experiment, dir?: string): Promise<RunOutcome> {
  return runIn(dir ?? (await mkdtemp(join(root, 'run-'))), e);
}

const readJson = async <T>(path: string): Promise<T> =>
  JSON.parse(await readFile(path, 'utf8')) as T;

interface ReceiptJson {
  splits: { seed: number; splitSeed: number; hash: string }[];
  selectionData: boolean;
}

describe('training seeds on one split', () => {
  it('draws one split for seeds 42/43/44; results.json is their mean ± std with each seed beside it', async () => {
    const outcome = await run(experiment({ seeds: [42, 43, 44] }));
    expect(outcome.stages.map((s) => s.name)).toEqual([
      'dataset',
      'encode',
      'split@42',
      'adapt@42',
      'score@42',
      'adapt@43',
      'score@43',
      'adapt@44',
      'score@44',
    ]);
    const receipt = await readJson<ReceiptJson>(join(outcome.runDir, 'receipt.json'));
    expect(receipt.splits.map((s) => [s.seed, s.splitSeed])).toEqual([
      [42, 42],
      [43, 42],
      [44, 42],
    ]);
    expect(new Set(receipt.splits.map((s) => s.hash)).size).toBe(1);
    const trainings = await Promise.all(
      [42, 43, 44].map(async (seed) =>
        trainingRecordSchema.parse(
          await readJson(join(outcome.runDir, 'seeds', String(seed), 'training.json')),
        ),
      ),
    );
    expect(trainings.map((t) => t.seed)).toEqual([42, 43, 44]);
    expect(trainings.map((t) => t.splitHash)).toEqual(receipt.splits.map((s) => s.hash));

    const summary = parseRunResults(
      await readJson(join(outcome.runDir, 'results.json')),
      'results.json',
    );
    expect(summary).toEqual(outcome.summary);
    expect(summary.seeds).toEqual([42, 43, 44]);
    expect(summary.splitSeed).toBe(42);
    expect(summary.selectionData).toBe(false);
    const perSeed = await Promise.all(
      [42, 43, 44].map((seed) =>
        readJson<Results>(join(outcome.runDir, 'seeds', String(seed), 'results.json')),
      ),
    );
    expect(summary.runs.map((r) => r.results)).toEqual(perSeed);
    for (const sys of summary.systems) {
      for (const [metric, m] of Object.entries(sys.metrics)) {
        const values = perSeed.map(
          (r) => r.systems.find((s) => s.name === sys.name)!.metrics[metric as 'ndcg@10']!,
        );
        expect(m.perSeed).toEqual(values);
        const mean = (values[0]! + values[1]! + values[2]!) / 3;
        expect(m.mean).toBeCloseTo(mean, 12);
        const variance = values.reduce((acc, v) => acc + (v - mean) ** 2, 0) / 2;
        expect(m.std).toBeCloseTo(Math.sqrt(variance), 12);
      }
      // One split: nothing of a training-free system depends on the training seed.
      if (sys.name !== 'adapted' && sys.name !== 'adapted-zero-floor') {
        expect(sys.identicalAcrossSeeds).toBe(true);
      }
    }
    // The adapted row is identical across seeds exactly when its figures are.
    const adapted = summary.systems.find((s) => s.name === 'adapted')!;
    const allEqual = Object.values(adapted.metrics).every((m) =>
      m.perSeed.every((v) => v === m.perSeed[0]),
    );
    expect(adapted.identicalAcrossSeeds).toBe(allEqual);
    expect(summary.adapter?.seeds).toEqual(
      trainings.map((t) => ({
        seed: t.seed,
        selectedEpoch: t.selected.epoch,
        selectedAlpha: t.selected.alpha,
        identity: t.selected.epoch === 0,
        zeroFloor: {
          selectedEpoch: t.selected.zeroFloor.epoch,
          selectedAlpha: t.selected.zeroFloor.alpha,
        },
      })),
    );

    const report = await readFile(join(outcome.runDir, 'report.md'), 'utf8');
    // Each adapter system's own selection is shown beside the other's, per seed.
    for (const t of trainings) {
      const zf = t.selected.zeroFloor;
      expect(report).toContain(
        `seed ${t.seed} adapted epoch ${t.selected.epoch}, α = ${t.selected.alpha}; ` +
          `adapted-zero-floor epoch ${zf.epoch}, α = ${zf.alpha}`,
      );
    }
    expect(report).toContain('Mean over 3 training seeds');
    expect(report).toContain('training seeds 42, 43, 44; one split (split seed 42) shared by all');
    expect(report).toContain('Seed 42: paired differences');
    expect(outcome.terminal).toContain('NDCG@10 mean ± std');
    expect(outcome.terminal).toContain('NDCG@10 seeds 42 / 43 / 44');
    const pooled = summary.systems.find((s) => s.name === 'pooled')!.metrics['ndcg@10']!;
    expect(outcome.terminal).toContain(`${pooled.mean.toFixed(4)} (every seed)`);
    // Epoch 0 selected: the row says it is the identity adapter with a re-selected α.
    const identitySeeds = trainings.filter((t) => t.selected.epoch === 0).map((t) => t.seed);
    if (identitySeeds.length === 3) {
      expect(outcome.terminal).toContain('adapted (epoch 0 = identity, α re-selected)');
    } else if (identitySeeds.length > 0) {
      expect(outcome.terminal).toContain(
        `α re-selected in seed${identitySeeds.length > 1 ? 's' : ''} ${identitySeeds.join(', ')})`,
      );
    } else {
      expect(outcome.terminal).not.toContain('epoch 0 = identity');
    }
  }, 120_000);

  it('reports identical test metrics across seeds as such, not as replicates', async () => {
    // No adapter: nothing depends on the training seed, and score@43 is score@42 from the cache.
    const outcome = await run(experiment({ seeds: [42, 43], adapter: { enabled: false } }));
    expect(outcome.stages.map((s) => [s.name, s.cached])).toEqual([
      ['dataset', false],
      ['encode', false],
      ['split@42', false],
      ['score@42', false],
      ['score@43', true],
    ]);
    expect(outcome.summary.identicalAcrossSeeds).toBe(true);
    for (const sys of outcome.summary.systems) {
      expect(sys.identicalAcrossSeeds).toBe(true);
      for (const m of Object.values(sys.metrics)) expect(m.std).toBe(0);
    }
    const note = 'identical in seeds 42, 43: the seeds are not independent replicates';
    expect(await readFile(join(outcome.runDir, 'report.md'), 'utf8')).toContain(note);
    expect(outcome.terminal).toContain(note);
  }, 120_000);

  it('split.seed: per-seed draws a new split for each training seed', async () => {
    const outcome = await run(
      experiment({
        seeds: [42, 43],
        split: { policy: 'query-disjoint-shared-bank', seed: 'per-seed' },
        adapter: { enabled: false },
      }),
    );
    expect(outcome.stages.map((s) => s.name)).toEqual([
      'dataset',
      'encode',
      'split@42',
      'score@42',
      'split@43',
      'score@43',
    ]);
    const receipt = await readJson<ReceiptJson>(join(outcome.runDir, 'receipt.json'));
    expect(receipt.splits.map((s) => [s.seed, s.splitSeed])).toEqual([
      [42, 42],
      [43, 43],
    ]);
    expect(receipt.splits[0]!.hash).not.toBe(receipt.splits[1]!.hash);
    expect(outcome.summary.splitSeed).toBe('per-seed');
    expect(outcome.summary.runs.map((r) => r.splitHash)).toEqual(receipt.splits.map((s) => s.hash));
    expect(await readFile(join(outcome.runDir, 'report.md'), 'utf8')).toContain(
      'each on its own split (split.seed: per-seed)',
    );
  }, 120_000);

  it('a single seed shows plain figures: std null, no seed-mean table', async () => {
    const outcome = await run(experiment({ adapter: { enabled: false } }));
    expect(outcome.summary.seeds).toEqual([42]);
    expect(outcome.summary.identicalAcrossSeeds).toBe(false);
    for (const sys of outcome.summary.systems) {
      for (const m of Object.values(sys.metrics)) expect(m.std).toBeNull();
    }
    expect(outcome.terminal).not.toContain('mean ± std');
    expect(await readFile(join(outcome.runDir, 'report.md'), 'utf8')).not.toContain('Mean over');
  }, 120_000);
});

describe('selection data', () => {
  it.each([
    ['validation', true],
    ['train', true],
    ['test', false],
  ] as const)(
    'split.evaluate: %s marks every output selectionData: %s',
    async (part, marked) => {
      const outcome = await run(
        experiment({ split: { policy: 'query-disjoint-shared-bank', evaluate: part } }),
      );
      const summary = await readJson<{ selectionData: boolean; split: string }>(
        join(outcome.runDir, 'results.json'),
      );
      expect(summary).toMatchObject({ selectionData: marked, split: part });
      const seedResults = await readJson<Results>(
        join(outcome.runDir, 'seeds', '42', 'results.json'),
      );
      expect(seedResults.meta?.selectionData).toBe(marked);
      const receipt = await readJson<ReceiptJson>(join(outcome.runDir, 'receipt.json'));
      expect(receipt.selectionData).toBe(marked);
      const banner = `SELECTION DATA: these numbers are on the ${part} part`;
      const report = await readFile(join(outcome.runDir, 'report.md'), 'utf8');
      const html = await readFile(join(outcome.runDir, 'report.html'), 'utf8');
      for (const text of [report, html, outcome.terminal]) {
        if (marked) expect(text).toContain(banner);
        else expect(text).not.toContain('SELECTION DATA');
      }
    },
    120_000,
  );
});

/** A copy of `labels` with every listed query's relevant set replaced by `relevant(q)`. */
function relabel(
  labels: RelevanceLabels,
  queries: readonly string[],
  relevant: (q: string, before: string[], i: number) => string[],
): RelevanceLabels {
  const out = labels.restrictTo(labels.queryIds());
  queries.forEach((q, i) => {
    const next = relevant(q, [...labels.relevant(q).keys()], i);
    out.delete(q);
    for (const m of next) out.add(q, m);
  });
  return out;
}

const sameSet = (a: Iterable<string>, b: Iterable<string>): boolean => {
  const x = [...a].sort();
  const y = [...b].sort();
  return x.length === y.length && x.every((v, i) => v === y[i]);
};

describe('test labels cannot reach training or selection', () => {
  it('changing every test label (drop, add, move, swap) leaves adapter.json, training.json and the selection byte-identical', async () => {
    const e = experiment();
    const dir = await mkdtemp(join(root, 'labels-'));
    const store = await ArtifactStore.open({ root: join(dir, 'cache') });
    const ctx = stageContext(
      store,
      () => {},
      () => {},
    );
    const dataset = await runDatasetStage(ctx, e, join(dir, 'experiment.yaml'));
    const encode = await runEncodeStage(ctx, e, dataset);
    const { split } = await runSplitStage(ctx, e, 42, dataset);
    const loaded = await dataset.load();
    const bank = await encode.bank();
    const benchmark: Benchmark = loaded.benchmark;
    const candidates = new Map(benchmark.queries.map((q) => [q.id, q.candidateIds ?? []]));
    const adaptWith = async (labels: RelevanceLabels, name: string) => {
      const out = join(dir, name);
      await mkdir(out);
      await computeAdapt({
        dir: out,
        experiment: e,
        seed: 42,
        split,
        banks: encode,
        dataset: { ...loaded, labels },
        progress: () => {},
      });
      return {
        adapter: await readFile(join(out, 'adapter.json'), 'utf8'),
        zeroFloorAdapter: await readFile(join(out, 'adapter-zero-floor.json'), 'utf8'),
        training: await readFile(join(out, 'training.json'), 'utf8'),
        record: await readTrainingRecord(out),
      };
    };
    const scoreTest = async (labels: RelevanceLabels) =>
      (
        await scoreAndWrite({
          out: undefined,
          bank,
          benchmark,
          labels,
          queryIds: new Set(split.queries.test),
          k: e.scorer.k,
          alpha: e.scorer.alpha,
          ks: e.eval.ks,
          kSweep: [],
          backend: e.scorer.backend,
          splitName: 'test',
          resamples: 50,
          seed: 42,
        })
      ).results.systems;

    const test = [...split.queries.test].sort();
    expect(test.length).toBeGreaterThanOrEqual(2);
    const reference = await adaptWith(loaded.labels, 'reference');
    const other = (q: string, before: string[]) =>
      candidates.get(q)!.filter((m) => !before.includes(m));
    const variants: Record<string, RelevanceLabels> = {
      // Every relevant memory moved to a candidate that was not relevant.
      move: relabel(loaded.labels, test, (q, before) => other(q, before).slice(0, before.length)),
      // One more relevant memory per query.
      add: relabel(loaded.labels, test, (q, before) => [...before, other(q, before)[0]!]),
      // Every relevance dropped (the benchmark keeps the query; evaluation would drop it).
      drop: relabel(loaded.labels, test, () => []),
      // Each test query takes the next one's relevant memories (moved among test queries).
      swap: relabel(loaded.labels, test, (_q, _before, i) => [
        ...loaded.labels.relevant(test[(i + 1) % test.length]!).keys(),
      ]),
    };
    for (const [name, labels] of Object.entries(variants)) {
      // Every test query's labels changed; every train and validation label is untouched.
      for (const q of test) {
        expect(
          sameSet(labels.relevant(q).keys(), loaded.labels.relevant(q).keys()),
          `${name} ${q}`,
        ).toBe(false);
      }
      for (const q of [...split.queries.train, ...split.queries.validation]) {
        expect(sameSet(labels.relevant(q).keys(), loaded.labels.relevant(q).keys())).toBe(true);
      }
      const perturbed = await adaptWith(labels, name);
      expect(perturbed.adapter, name).toBe(reference.adapter);
      expect(perturbed.training, name).toBe(reference.training);
      expect(perturbed.record.selected).toEqual(reference.record.selected);
      // adapted-zero-floor's own selection and snapshot do not move either.
      expect(perturbed.zeroFloorAdapter, name).toBe(reference.zeroFloorAdapter);
      expect(perturbed.record.selected.zeroFloor).toEqual(reference.record.selected.zeroFloor);
      expect(perturbed.record.epochs.map((ep) => ep.validationZeroFloor)).toEqual(
        reference.record.epochs.map((ep) => ep.validationZeroFloor),
      );
    }
    // The changed labels do reach evaluation: the test figures move.
    expect(await scoreTest(variants.move!)).not.toEqual(await scoreTest(loaded.labels));

    // The comparison can fail: the same change to the validation labels changes training.json
    // (validation loss and NDCG@10 per epoch × α are computed from them).
    const validation = [...split.queries.validation].sort();
    const moved = await adaptWith(
      relabel(loaded.labels, validation, (q, before) => other(q, before).slice(0, before.length)),
      'validation-moved',
    );
    expect(moved.training).not.toBe(reference.training);
    expect(moved.record.epochs).not.toEqual(reference.record.epochs);
    expect(moved.record.epochs.map((ep) => ep.validationZeroFloor)).not.toEqual(
      reference.record.epochs.map((ep) => ep.validationZeroFloor),
    );
  }, 120_000);

  it('lists validation queries with no relevant memory among their candidates in training.json', async () => {
    const e = experiment();
    const dir = await mkdtemp(join(root, 'no-positive-'));
    const store = await ArtifactStore.open({ root: join(dir, 'cache') });
    const ctx = stageContext(
      store,
      () => {},
      () => {},
    );
    const dataset = await runDatasetStage(ctx, e, join(dir, 'experiment.yaml'));
    const encode = await runEncodeStage(ctx, e, dataset);
    const { split } = await runSplitStage(ctx, e, 42, dataset);
    const loaded = await dataset.load();
    const q = [...split.queries.validation].sort()[0]!;
    const own = new Set(loaded.benchmark.queries.find((x) => x.id === q)!.candidateIds);
    // Relevant: a memory of another candidate list, which q cannot rank.
    const outside = loaded.benchmark.memories.find((m) => !own.has(m.id))!.id;
    const adapt = async (labels: RelevanceLabels, name: string) => {
      const out = join(dir, name);
      await mkdir(out);
      await computeAdapt({
        dir: out,
        experiment: e,
        seed: 42,
        split,
        banks: encode,
        dataset: { ...loaded, labels },
        progress: () => {},
      });
      return readTrainingRecord(out);
    };
    const before = await adapt(loaded.labels, 'before');
    expect(before.skipped.validationNoPositive).toEqual([]);
    const after = await adapt(
      relabel(loaded.labels, [q], () => [outside]),
      'after',
    );
    expect(after.skipped.validationNoPositive).toEqual([q]);
    expect(after.validationQueries).toBe(before.validationQueries - 1);
    expect(after.skipped.trainNoPositive).toEqual(before.skipped.trainNoPositive);
  }, 120_000);
});
