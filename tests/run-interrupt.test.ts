import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  documentTask,
  freshDir,
  readJsonFile,
  runJson,
  sharedTask,
  spawnBfe,
  useTinyModel,
  writeExperiment,
  type RunJson,
} from './fixtures/run/setup.ts';

const tiny = useTinyModel();

const documentExperiment = {
  name: 'tiny-interrupted',
  dataset: { name: `lmeb:${documentTask}` },
  split: { policy: 'none' },
  model: { name: 'tiny' },
  scorer: { k: 4, kSweep: [2, 4] },
  eval: { resamples: 200 },
};

describe('bfe run interrupted and resumed', () => {
  it('SIGINT mid-stage exits 130 leaving no partial artifact or lock; the rerun resumes from the cache', async () => {
    const dir = freshDir(tiny.root(), 'interrupt');
    const cache = join(dir, 'cache');
    const runs = join(dir, 'runs');
    const file = writeExperiment(dir, 'tiny.yaml', documentExperiment);

    const run = spawnBfe(['run', file, '--cache-dir', cache, '--runs-dir', runs], {
      ...tiny.env(),
      BFE_FAULT_STAGE_DELAY: 'score:30000',
    });
    await run.waitForStderr(/^stage score: computing$/m);
    // The score stage's temporary directory exists now: the compute is in flight.
    expect(readdirSync(join(cache, 'tmp'))).toHaveLength(1);
    expect(readdirSync(join(cache, 'locks')).map((n) => n.slice(65))).toEqual(['lock', 'owner']);
    run.child.kill('SIGINT');
    const ended = await run.done;
    expect(ended.code, ended.stderr).toBe(130);
    expect(ended.stderr).not.toContain('stage score: computed');

    expect(readdirSync(join(cache, 'objects')).sort()).toEqual(['dataset', 'encode']);
    expect(existsSync(join(cache, 'objects', 'score'))).toBe(false);
    expect(readdirSync(join(cache, 'tmp'))).toEqual([]);
    expect(readdirSync(join(cache, 'locks'))).toEqual([]);
    expect(existsSync(runs)).toBe(false);

    const resumed = await runJson(file, { cache, runs }, tiny.env());
    expect(resumed.out.stages.map((s) => [s.name, s.cached])).toEqual([
      ['dataset', true],
      ['encode', true],
      ['score', false],
    ]);

    // The same experiment, never interrupted, on a clean cache.
    const referenceCache = join(dir, 'reference-cache');
    const reference = await runJson(
      file,
      { cache: referenceCache, runs: join(dir, 'reference-runs') },
      tiny.env(),
    );
    expect(reference.out.stages.map((s) => s.key)).toEqual(resumed.out.stages.map((s) => s.key));
    // Byte-identical across caches: results record the bank's content hash, not bank.json's bytes.
    expect(readFileSync(join(resumed.out.runDir, 'results.json'), 'utf8')).toBe(
      readFileSync(join(reference.out.runDir, 'results.json'), 'utf8'),
    );
    for (const f of ['per-query.jsonl', 'k-sweep.json']) {
      expect(
        readFileSync(join(resumed.out.runDir, f)).equals(
          readFileSync(join(reference.out.runDir, f)),
        ),
      ).toBe(true);
    }
  }, 120_000);

  it('the failpoint delays the stage it names, and SIGTERM mid-stage exits 143 cleanly', async () => {
    const dir = freshDir(tiny.root(), 'failpoint');
    const file = writeExperiment(dir, 'tiny.yaml', documentExperiment);
    const run = spawnBfe(
      ['run', file, '--cache-dir', join(dir, 'cache'), '--runs-dir', join(dir, 'runs')],
      { ...tiny.env(), BFE_FAULT_STAGE_DELAY: 'encode:30000' },
    );
    await run.waitForStderr(/^stage encode: computing$/m);
    // Still waiting in encode 300 ms later: the delay holds, no later stage started.
    await new Promise((wake) => setTimeout(wake, 300));
    expect(run.stderr()).not.toContain('stage encode: computed');
    expect(run.stderr()).not.toContain('stage score');
    run.child.kill('SIGTERM');
    const ended = await run.done;
    expect(ended.code).toBe(143);
    expect(readdirSync(join(dir, 'cache', 'locks'))).toEqual([]);
    expect(readdirSync(join(dir, 'cache', 'tmp'))).toEqual([]);
  }, 60_000);
});

describe('bfe run twice at once on one cache', () => {
  it('computes each stage exactly once across both runs, and both get the same results', async () => {
    const dir = freshDir(tiny.root(), 'concurrent');
    const cache = join(dir, 'cache');
    const runs = join(dir, 'runs');
    // Two seeds, each on its own strict split, with the adapter: eight stages to contend for.
    const file = writeExperiment(dir, 'tiny.json', {
      name: 'tiny-concurrent',
      dataset: { name: `lmeb:${sharedTask}` },
      seeds: [42, 43],
      split: { policy: 'connected-bank', seed: 'per-seed', ratios: [1, 1, 1] },
      model: { name: 'tiny' },
      scorer: { k: 4, kSweep: [2, 4] },
      adapter: { enabled: true, rank: 2, epochs: 1, batchSize: 4, lr: 0.01 },
      eval: { resamples: 200 },
    });
    const [a, b] = await Promise.all([
      runJson(file, { cache, runs }, tiny.env()),
      runJson(file, { cache, runs }, tiny.env()),
    ]);
    const names = [
      'dataset',
      'encode',
      'split@42',
      'adapt@42',
      'score@42',
      'split@43',
      'adapt@43',
      'score@43',
    ];
    for (const out of [a.out, b.out]) expect(out.stages.map((s) => s.name)).toEqual(names);
    const computed = (out: RunJson, name: string): number =>
      out.stages.some((s) => s.name === name && !s.cached) ? 1 : 0;
    for (const name of names) {
      expect(computed(a.out, name) + computed(b.out, name), name).toBe(1);
    }
    expect(a.out.stages.map((s) => s.key)).toEqual(b.out.stages.map((s) => s.key));

    // Two run folders (even when both finish in the same second), each complete.
    expect(a.out.runDir).not.toBe(b.out.runDir);
    const resultsA = readFileSync(join(a.out.runDir, 'results.json'));
    expect(readFileSync(join(b.out.runDir, 'results.json')).equals(resultsA)).toBe(true);
    for (const out of [a.out, b.out]) {
      expect(existsSync(join(out.runDir, 'receipt.json'))).toBe(true);
      expect(existsSync(join(out.runDir, 'seeds', '43', 'training.json'))).toBe(true);
    }
    expect(readdirSync(join(runs, 'tiny-concurrent')).filter((f) => f.includes('.tmp-'))).toEqual(
      [],
    );
    expect([a.out.runDir, b.out.runDir]).toContain(
      readJsonFile<{ runDir: string }>(join(runs, 'tiny-concurrent', 'latest.json')).runDir,
    );
    // A strict split: not diagnostic, no marks.
    const summary = JSON.parse(resultsA.toString()) as {
      splitSeed: string;
      runs: { results: { meta: Record<string, unknown> } }[];
    };
    expect(summary.splitSeed).toBe('per-seed');
    for (const run of summary.runs) {
      expect(run.results.meta).toMatchObject({
        splitPolicy: 'connected-bank',
        diagnosticOnly: false,
        marks: [],
      });
    }
    expect(readdirSync(join(cache, 'locks'))).toEqual([]);
    expect(readdirSync(join(cache, 'tmp'))).toEqual([]);
  }, 120_000);
});
