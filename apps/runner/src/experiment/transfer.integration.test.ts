import { cp, mkdtemp, readFile, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { ConfigError } from '@bfe/core';
import { suiteTmpDir } from '@bfe/core/testing';
import { dataLocationFromEnv, loadDataset } from '@bfe/datasets';
import { openBank } from '@bfe/encoder';
import { scoreAndWrite } from '../score/write.js';
import { loadSelectedAdapter, readTrainingRecord } from './stages/adapt.js';
import {
  documentTask,
  installTinyModel,
  repoRoot,
  runIn,
  tinyExperiment,
} from './testing/tiny-model.js';
import type { RunOutcome } from './run-experiment.js';

// adapter.from in process, on the tiny encoder graph: the source (the shared-bank LMEB fixture,
// query-disjoint split, adapter on) trains and selects the adapter; the target (the LMEB
// document fixture, every query) is scored with it.

const sharedTask = join(repoRoot, 'tests/fixtures/run/lmeb-shared');

const suiteRoot = suiteTmpDir('bfe-transfer-');
let root = '';
let modelDir = '';
beforeAll(async () => {
  root = suiteRoot();
  modelDir = await installTinyModel(root);
});

/** Writes the source experiment as `source.json` in `dir`; `raw` overrides sections. */
async function writeSource(dir: string, raw: Record<string, unknown> = {}): Promise<void> {
  const source = {
    name: 'tiny-source',
    dataset: { name: `lmeb:${sharedTask}` },
    split: { policy: 'query-disjoint-shared-bank' },
    model: { name: 'tiny', dir: modelDir },
    scorer: { k: 4, kSweep: [2, 4] },
    adapter: { enabled: true, rank: 2, epochs: 2, batchSize: 4, lr: 0.01 },
    eval: { resamples: 50 },
    ...raw,
  };
  await writeFile(join(dir, 'source.json'), JSON.stringify(source));
}

/** The target: `task` (default the document fixture), every query, the adapter of source.json. */
const target = (raw: Record<string, unknown> = {}) =>
  tinyExperiment(modelDir, { name: 'tiny-target', adapter: { from: 'source.json' }, ...raw });

const keyOf = (outcome: RunOutcome, stage: string): string => {
  const record = outcome.stages.find((s) => s.name === stage);
  if (record === undefined)
    throw new Error(`no stage ${stage} in ${outcome.stages.map((s) => s.name).join(', ')}`);
  return record.key;
};

async function rejection(run: Promise<unknown>): Promise<ConfigError> {
  const error = await run.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ConfigError);
  return error as ConfigError;
}

describe('adapter transfer (adapter.from)', () => {
  it('scores the target with the source’s selected adapter, reusing the source’s cached adapt artifact', async () => {
    const dir = await mkdtemp(join(root, 'apply-'));
    await writeSource(dir);
    const outcome = await runIn(dir, target());
    expect(outcome.stages.map((s) => s.name)).toEqual([
      'dataset',
      'source/dataset',
      'encode',
      'source/split@42',
      'source/encode',
      'source/adapt@42',
      'score',
    ]);
    // The source experiment run on its own: the same adapt key, served from the cache.
    const { parseExperiment } = await import('./config.js');
    const sourceRaw = JSON.parse(await readFile(join(dir, 'source.json'), 'utf8')) as unknown;
    const own = await runIn(dir, parseExperiment(sourceRaw));
    const adaptKey = keyOf(outcome, 'source/adapt@42');
    expect(keyOf(own, 'adapt@42')).toBe(adaptKey);
    expect(own.stages.find((s) => s.name === 'adapt@42')!.cached).toBe(true);

    // meta.adapter says where the adapter comes from, with the source's selection.
    const adaptDir = join(dir, 'cache', 'objects', 'adapt', adaptKey);
    const record = await readTrainingRecord(adaptDir);
    // adapted-zero-floor selected a trained epoch: the comparison below covers trained weights.
    expect(record.selected.zeroFloor.epoch).toBeGreaterThan(0);
    const meta = outcome.results.meta as { adapter: Record<string, unknown> };
    expect(meta.adapter).toMatchObject({
      transferredFrom: { experiment: 'tiny-source', dataset: `lmeb:${sharedTask}`, adaptKey },
      selectedEpoch: record.selected.epoch,
      selectedAlpha: record.selected.alpha,
      splitHash: record.splitHash,
    });
    expect(outcome.terminal).toContain(`adapted (transferred from lmeb:${sharedTask}`);
    expect(await readFile(join(outcome.runDir, 'report.md'), 'utf8')).toContain('transferred from');

    // The source's adapter applied by hand to the target's bank gives the same scores.
    const bank = await openBank(
      join(dir, 'cache', 'objects', 'encode', keyOf(outcome, 'encode'), 'bank'),
    );
    // Its meta rides along unread: scoreAndWrite takes the query tokens and α of both systems.
    const adapted = await loadSelectedAdapter(adaptDir, bank);
    const { benchmark, labels } = await loadDataset(`lmeb:${documentTask}`, {
      location: dataLocationFromEnv(),
    });
    const e = target();
    const out = await mkdtemp(join(root, 'by-hand-'));
    const { run } = await scoreAndWrite({
      out,
      bank,
      benchmark,
      labels,
      queryIds: undefined,
      k: e.scorer.k,
      alpha: e.scorer.alpha,
      ks: e.eval.ks,
      kSweep: e.scorer.kSweep,
      executionProvider: e.scorer.executionProvider,
      backend: e.scorer.backend,
      adapted,
      splitName: 'all',
      split: undefined,
      resamples: e.eval.resamples,
      seed: e.eval.seed,
      extraMeta: { selectionData: false },
    });
    expect(run.stats.queries).toBeGreaterThan(0);
    const scoreDir = join(dir, 'cache', 'objects', 'score', keyOf(outcome, 'score'));
    expect(await readFile(join(scoreDir, 'per-query.jsonl'), 'utf8')).toBe(
      await readFile(join(out, 'per-query.jsonl'), 'utf8'),
    );
    const byHand = JSON.parse(await readFile(join(out, 'results.json'), 'utf8')) as {
      systems: unknown;
    };
    expect(outcome.results.systems).toEqual(byHand.systems);
    expect(outcome.results.systems.map((s) => s.name)).toContain('adapted');
  }, 120_000);

  it('refuses a source whose query encoder differs, naming both files, before encoding', async () => {
    const dir = await mkdtemp(join(root, 'model-'));
    await writeSource(dir, { model: { name: 'tiny', dir: modelDir, maxLength: 6 } });
    const error = await rejection(runIn(dir, target()));
    expect(error.message).toContain('the query encoder differs');
    expect(error.message).toContain(join(dir, 'experiment.yaml'));
    expect(error.message).toContain(join(dir, 'source.json'));
    expect(error.message).toMatch(/maxLength \d+.*maxLength 6/);
    expect(await readdir(join(dir, 'cache', 'objects'))).not.toContain('encode');
  }, 60_000);

  it('refuses a source on the target’s dataset whose train/validation queries the target evaluates', async () => {
    const dir = await mkdtemp(join(root, 'leak-'));
    await writeSource(dir);
    const shared = { dataset: { name: `lmeb:${sharedTask}` } };
    const error = await rejection(runIn(dir, target(shared)));
    expect(error.message).toContain('test labels would train or select the adapter');
    expect(error.message).toContain(join(dir, 'source.json'));
    expect(await readdir(join(dir, 'cache', 'objects'))).not.toContain('adapt');
    // Another split seed of the same dataset: its test part holds source train queries.
    const other = { ...shared, split: { policy: 'query-disjoint-shared-bank', seed: 7 } };
    await rejection(runIn(dir, target(other)));
    // The source's own split, its test part: nothing the source trained or selected on.
    const same = { ...shared, split: { policy: 'query-disjoint-shared-bank' } };
    const outcome = await runIn(dir, target(same));
    expect(outcome.results.split).toBe('test');
    expect(keyOf(outcome, 'split@42')).toBe(keyOf(outcome, 'source/split@42'));
  }, 120_000);

  it('never reads the target’s labels: changed labels, the same adapter bytes', async () => {
    const adapters: Buffer[] = [];
    const perQuery: string[] = [];
    for (const relabel of [false, true]) {
      const dir = await mkdtemp(join(root, relabel ? 'relabelled-' : 'labels-'));
      const task = join(dir, 'task');
      await cp(documentTask, task, { recursive: true });
      if (relabel) {
        // Every relevant passage moved to another one of the fixture's.
        const qrels = await readFile(join(task, 'qrels.tsv'), 'utf8');
        await writeFile(
          join(task, 'qrels.tsv'),
          qrels.replace(/\tp(\d)\t/g, (_m, d: string) => `\tp${(Number(d) % 5) + 1}\t`),
        );
      }
      await writeSource(dir);
      const outcome = await runIn(dir, target({ dataset: { name: `lmeb:${task}` } }));
      const adaptDir = join(dir, 'cache', 'objects', 'adapt', keyOf(outcome, 'source/adapt@42'));
      adapters.push(await readFile(join(adaptDir, 'adapter.json')));
      adapters.push(await readFile(join(adaptDir, 'training.json')));
      perQuery.push(await readFile(join(outcome.runDir, 'per-query.jsonl'), 'utf8'));
    }
    expect(adapters[2]!.equals(adapters[0]!)).toBe(true);
    expect(adapters[3]!.equals(adapters[1]!)).toBe(true);
    // The relabelling reached the target's evaluation.
    expect(perQuery[1]).not.toBe(perQuery[0]);
  }, 120_000);
});
