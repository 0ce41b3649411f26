import { mkdtemp, readFile, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { suiteTmpDir } from '@bfe/core/testing';
import { dataLocationFromEnv, loadDataset } from '@bfe/datasets';
import { openBank } from '@bfe/encoder';
import { scoreAndWrite } from '../score/write.js';
import {
  documentTask,
  installTinyModel,
  repoRoot,
  runIn,
  tinyExperiment,
} from './testing/tiny-model.js';
import type { Experiment } from './config.js';

// runExperiment in process, on the tiny encoder graph and the LMEB fixtures: the run folder's
// naming, the log it reports through, and the test failpoint.

const sharedTask = join(repoRoot, 'tests/fixtures/run/lmeb-shared');

const suiteRoot = suiteTmpDir('bfe-run-experiment-');
let root = '';
let modelDir = '';
beforeAll(async () => {
  root = suiteRoot();
  modelDir = await installTinyModel(root);
});
afterEach(() => {
  vi.useRealTimers();
  delete process.env.BFE_FAULT_STAGE_DELAY;
});

const experiment = (raw: Record<string, unknown> = {}): Experiment => tinyExperiment(modelDir, raw);
const run = runIn;

describe('runExperiment', () => {
  it('gives two runs finishing in the same second with the same stages two run folders', async () => {
    const dir = await mkdtemp(join(root, 'same-second-'));
    vi.useFakeTimers({ toFake: ['Date'], now: new Date('2026-03-01T12:00:00.250Z') });
    const first = await run(dir, experiment());
    const second = await run(dir, experiment());
    expect(second.stages.every((s) => s.cached)).toBe(true);
    expect(first.runId).toMatch(/^20260301T120000Z-[0-9a-f]{8}$/);
    expect(second.runId).toBe(`${first.runId}-2`);
    const third = await run(dir, experiment());
    expect(third.runId).toBe(`${first.runId}-3`);
    for (const r of [first, second, third]) {
      expect((await readdir(r.runDir)).sort()).toEqual([
        'k-sweep.json',
        'per-query.jsonl',
        'receipt.json',
        'report.html',
        'report.md',
        'results.json',
      ]);
      expect(await readFile(join(r.runDir, 'report.md'), 'utf8')).toContain(r.runId);
    }
    expect((await readdir(join(dir, 'runs', 'tiny'))).sort()).toEqual([
      first.runId,
      second.runId,
      third.runId,
      'latest.json',
    ]);
    expect(JSON.parse(await readFile(join(dir, 'runs', 'tiny', 'latest.json'), 'utf8'))).toEqual({
      runId: third.runId,
      runDir: third.runDir,
    });
  }, 60_000);

  it('runs two calls at once in one process: one computes, the other reads the cache', async () => {
    const dir = await mkdtemp(join(root, 'concurrent-'));
    const [a, b] = await Promise.all([run(dir, experiment()), run(dir, experiment())]);
    expect(a.runDir).not.toBe(b.runDir);
    for (const i of [0, 1, 2]) {
      expect([a.stages[i]!.cached, b.stages[i]!.cached].sort()).toEqual([false, true]);
    }
    expect(await readFile(join(a.runDir, 'results.json'), 'utf8')).toBe(
      await readFile(join(b.runDir, 'results.json'), 'utf8'),
    );
    expect(a.results).toEqual(b.results);
  }, 60_000);

  it('reports each stage through log, and prints nothing itself', async () => {
    const dir = await mkdtemp(join(root, 'log-'));
    const stderr = vi.spyOn(process.stderr, 'write');
    const stdout = vi.spyOn(process.stdout, 'write');
    const lines: string[] = [];
    const outcome = await run(dir, experiment(), (line) => lines.push(line));
    expect(stderr).not.toHaveBeenCalled();
    expect(stdout).not.toHaveBeenCalled();
    for (const name of ['dataset', 'encode', 'score']) {
      expect(lines).toContain(`stage ${name}: …`);
      expect(lines).toContain(`stage ${name}: computing`);
      expect(lines.some((l) => l.startsWith(`stage ${name}: computed `))).toBe(true);
    }
    expect(outcome.terminal).toContain('sparse-fusion');
    expect(outcome.perSeed).toEqual([{ seed: null, results: outcome.results }]);
  }, 60_000);

  it('delays the stage BFE_FAULT_STAGE_DELAY names by its full name (test failpoint)', async () => {
    const dir = await mkdtemp(join(root, 'failpoint-'));
    process.env.BFE_FAULT_STAGE_DELAY = 'split@42:400';
    const outcome = await run(
      dir,
      experiment({
        dataset: { name: `lmeb:${sharedTask}` },
        seeds: [42],
        split: { policy: 'query-disjoint-shared-bank' },
      }),
    );
    const split = outcome.stages.find((s) => s.name === 'split@42');
    expect(split?.cached).toBe(false);
    // A lower bound only: the stage slept at least that long before computing.
    expect(split!.seconds).toBeGreaterThanOrEqual(0.4);
  }, 60_000);

  it('runs windowed memories (model.window) end to end and says what was cut or windowed', async () => {
    const dir = await mkdtemp(join(root, 'window-'));
    const model = { name: 'tiny', dir: modelDir, maxLength: 6 };
    const cut = await run(dir, experiment({ model }));
    const windowed = await run(
      dir,
      experiment({ model: { ...model, window: { size: 6, stride: 2 } } }),
    );
    type Encoding = {
      maxLength: number;
      memoriesTruncated: number;
      queriesTruncated: number;
      window?: { size: number; stride: number; windowedMemories: number; memoryWindows: number };
    };
    const encoding = async (r: { runDir: string }) =>
      (JSON.parse(await readFile(join(r.runDir, 'receipt.json'), 'utf8')) as { encoding: Encoding })
        .encoding;
    const [a, b] = [await encoding(cut), await encoding(windowed)];
    expect(a.window).toBeUndefined();
    expect(a.memoriesTruncated).toBeGreaterThan(0);
    // The memories cut at 6 tokens are exactly those encoded in windows of 6; queries are cut alike.
    expect(b).toMatchObject({
      maxLength: 6,
      memoriesTruncated: 0,
      queriesTruncated: a.queriesTruncated,
    });
    expect(b.window).toMatchObject({ size: 6, stride: 2, windowedMemories: a.memoriesTruncated });
    expect(b.window!.memoryWindows).toBeGreaterThan(b.window!.windowedMemories);
    const key = (r: typeof cut) => r.stages.find((s) => s.name === 'encode')!.key;
    expect(key(windowed)).not.toBe(key(cut));
    // Its bank refuses to open as a truncated one.
    const bankDir = join(dir, 'cache', 'objects', 'encode', key(windowed), 'bank');
    await expect(openBank(bankDir, { window: null })).rejects.toThrow('window size 6, stride 2');
    const bank = await openBank(bankDir, { window: { size: 6, stride: 2 } });
    expect(Math.max(...bank.memories.tokenPosition)).toBeGreaterThan(4);
  }, 60_000);

  it('scores through the memory token file: reads counted, the same files as the bank in memory', async () => {
    const dir = await mkdtemp(join(root, 'token-file-'));
    const e = experiment();
    const outcome = await run(dir, e);
    const key = (stage: string): string => outcome.stages.find((s) => s.name === stage)!.key;
    const scoreDir = join(dir, 'cache', 'objects', 'score', key('score'));
    const manifest = JSON.parse(await readFile(join(scoreDir, 'artifact.json'), 'utf8')) as {
      meta: { memoryTokens: string; memoryTokenFileReads: { bytes: number; reads: number } };
    };
    // The bank with every memory token vector in memory, scored the same way by hand.
    const bank = await openBank(join(dir, 'cache', 'objects', 'encode', key('encode'), 'bank'));
    const rowBytes = bank.dim * 4;
    expect(manifest.meta.memoryTokens).toBe('file');
    const reads = manifest.meta.memoryTokenFileReads;
    expect(reads.reads).toBeGreaterThan(0);
    expect(reads.bytes).toBeGreaterThanOrEqual(rowBytes);
    expect(reads.bytes % rowBytes).toBe(0);

    const { benchmark, labels } = await loadDataset(`lmeb:${documentTask}`, {
      location: dataLocationFromEnv(),
    });
    const out = await mkdtemp(join(root, 'in-memory-'));
    const { run: inMemory } = await scoreAndWrite({
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
      splitName: 'all',
      split: undefined,
      resamples: e.eval.resamples,
      seed: e.eval.seed,
      extraMeta: { selectionData: false },
    });
    expect(inMemory.stats.memoryTokenFile).toBeNull();
    for (const file of ['results.json', 'per-query.jsonl', 'k-sweep.json']) {
      expect(await readFile(join(scoreDir, file), 'utf8')).toBe(
        await readFile(join(out, file), 'utf8'),
      );
    }
  }, 60_000);
});
