// Fault injection on `bfe run` with the tiny model: same-size corruption of every artifact kind
// in the cache, kill -9 at ten points of a run, four concurrent runs on one cache, and
// `bfe cache gc` while a run reads the cache. No wall-clock assertions: failpoints
// (BFE_FAULT_KILL, BFE_FAULT_STAGE_WAIT; apps/runner/src/experiment/faults.ts) place each fault.
import {
  existsSync,
  readFileSync,
  readdirSync,
  statSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { join, relative } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  freshDir,
  readJsonFile,
  runJson,
  sharedTask,
  spawnBfe,
  useTinyModel,
  writeExperiment,
  type RunJson,
} from './fixtures/run/setup.ts';
import { runBfe } from './helpers.ts';

const tiny = useTinyModel();
// Locks of killed runs go stale after 2 s (the least proper-lockfile allows), not 30 s.
const env = (): Record<string, string | undefined> => ({
  ...tiny.env(),
  BFE_CACHE_STALE_MS: '2000',
});

const NAME = 'tiny-faults';
/** Every stage kind: dataset, encode, split@42, adapt@42, score@42. */
const experiment = {
  name: NAME,
  dataset: { name: `lmeb:${sharedTask}` },
  seeds: [42],
  split: { policy: 'query-disjoint-shared-bank', seed: 42, ratios: [0.6, 0.2, 0.2] },
  model: { name: 'tiny' },
  scorer: { k: 4, alpha: 0.5, kSweep: [2, 4] },
  adapter: { enabled: true, rank: 2, epochs: 1, batchSize: 4, lr: 0.01 },
  eval: { resamples: 200 },
};
const STAGES = ['dataset', 'encode', 'split@42', 'adapt@42', 'score@42'];
/** The files of a run folder whose bytes do not depend on time or the machine. */
const STABLE_FILES = [
  'results.json',
  'per-query.jsonl',
  'k-sweep.json',
  'seeds/42/results.json',
  'seeds/42/training.json',
  'seeds/42/adapter.json',
  'seeds/42/adapter-zero-floor.json',
];

let reference: Record<string, Buffer>;
beforeAll(async () => {
  const dir = freshDir(tiny.root(), 'reference');
  const file = writeExperiment(dir, 'faults.json', experiment);
  const { out } = await runJson(
    file,
    { cache: join(dir, 'cache'), runs: join(dir, 'runs') },
    env(),
  );
  reference = stableBytes(out.runDir);
}, 120_000);

function stableBytes(runDir: string): Record<string, Buffer> {
  return Object.fromEntries(STABLE_FILES.map((f) => [f, readFileSync(join(runDir, f))]));
}

function expectIdenticalToReference(runDir: string): void {
  const got = stableBytes(runDir);
  for (const f of STABLE_FILES) expect(got[f]!.equals(reference[f]!), f).toBe(true);
}

/** Nothing left in the cache's scratch space, and only complete run folders under runs/. */
function expectNoLeftovers(cache: string, runs: string): void {
  for (const d of ['tmp', 'locks', 'quarantine']) {
    expect(existsSync(join(cache, d)) ? readdirSync(join(cache, d)) : [], d).toEqual([]);
  }
  expect(readdirSync(join(cache, 'leases')), 'leases').toEqual([]);
  const base = join(runs, NAME);
  for (const name of readdirSync(base)) {
    if (name === 'latest.json') continue;
    expect(name).not.toContain('.tmp-');
    expect(existsSync(join(base, name, 'receipt.json')), name).toBe(true);
  }
}

/** Every artifact directory of the cache with its files (artifact.json included), sorted. */
function artifactFiles(cache: string): Array<{ stage: string; dir: string; files: string[] }> {
  const out = [];
  for (const stage of readdirSync(join(cache, 'objects')).sort()) {
    for (const key of readdirSync(join(cache, 'objects', stage)).sort()) {
      const dir = join(cache, 'objects', stage, key);
      const files: string[] = [];
      const walk = (d: string): void => {
        for (const e of readdirSync(d, { withFileTypes: true })) {
          if (e.isDirectory()) walk(join(d, e.name));
          else files.push(relative(dir, join(d, e.name)));
        }
      };
      walk(dir);
      out.push({ stage, dir, files: files.sort() });
    }
  }
  return out;
}

/**
 * Changes one byte of `path`, keeping its size (and its mtime, so nothing but the content
 * tells). In artifact.json a digit of `seconds`: still a valid manifest, caught by its own hash.
 */
function corruptSameSize(path: string): void {
  const { atime, mtime, size } = statSync(path);
  const bytes = readFileSync(path);
  let at = Math.floor(size / 2);
  if (path.endsWith('artifact.json')) {
    const text = bytes.toString('latin1');
    at = text.indexOf('"seconds": ') + '"seconds": '.length;
  }
  const c = bytes[at]!;
  // A digit stays a digit, anything else flips its lowest bit.
  bytes[at] = c >= 0x30 && c <= 0x39 ? 0x30 + ((c - 0x30 + 1) % 10) : c ^ 1;
  writeFileSync(path, bytes);
  utimesSync(path, atime, mtime);
  expect(statSync(path).size).toBe(size);
}

describe('same-size corruption of every artifact file in the cache', () => {
  it('is detected on the next run, named, quarantined and recomputed; results byte-identical', async () => {
    const dir = freshDir(tiny.root(), 'corrupt');
    const dirs = { cache: join(dir, 'cache'), runs: join(dir, 'runs') };
    const file = writeExperiment(dir, 'faults.json', experiment);
    await runJson(file, dirs, env());
    const artifacts = artifactFiles(dirs.cache);
    expect(artifacts.map((a) => a.stage)).toEqual(['adapt', 'dataset', 'encode', 'score', 'split']);
    const kinds = new Set(artifacts.flatMap((a) => a.files.map((f) => f.split('/').at(-1))));
    for (const f of ['dataset.json', 'bank.json', 'split.json', 'adapter.json', 'training.json']) {
      expect(kinds).toContain(f);
    }
    for (const f of ['results.json', 'per-query.jsonl', 'k-sweep.json', 'artifact.json']) {
      expect(kinds).toContain(f);
    }
    expect([...kinds].some((f) => f?.endsWith('.arrow'))).toBe(true);
    // Round r corrupts the r-th file of every artifact at once: every file is hit once.
    const rounds = Math.max(...artifacts.map((a) => a.files.length));
    for (let r = 0; r < rounds; r++) {
      const hit = artifacts.filter((a) => r < a.files.length);
      for (const a of hit) corruptSameSize(join(a.dir, a.files[r]!));
      const { result, out } = await runJson(file, dirs, env());
      for (const a of hit) {
        const path = join(a.dir, a.files[r]!);
        expect(result.stderr, `round ${r}: ${path}`).toContain(path);
      }
      const corrupted = new Set(hit.map((a) => a.stage));
      for (const s of out.stages) {
        expect(s.cached, `round ${r}: ${s.name}`).toBe(!corrupted.has(s.name.split('@')[0]!));
      }
      expect(result.stderr).toMatch(/^warning: Corrupt \w+ artifact: /m);
      expectIdenticalToReference(out.runDir);
      // Quarantined, not deleted; and every artifact is sound again.
      expect(readdirSync(join(dirs.cache, 'quarantine'))).toHaveLength(hit.length);
      const gc = await runBfe(
        ['cache', 'gc', '--cache-dir', dirs.cache, '--runs-dir', dirs.runs],
        {},
      );
      expect(gc.code, gc.stderr).toBe(0);
    }
    const verify = await runBfe(['cache', 'verify', '--cache-dir', dirs.cache], {});
    expect(verify.code, verify.stdout).toBe(0);
  }, 300_000);
});

describe('kill -9 at ten points of a run', () => {
  const POINTS = [
    'start:dataset',
    'compute:encode',
    'before-publish:encode',
    'start:split',
    'compute:adapt',
    'after-publish:adapt',
    'compute:score',
    'run-folder',
    'run-folder-publish',
    'latest',
  ];
  it.each(POINTS)(
    '%s: the rerun resumes, byte-identical, with no leftovers',
    async (point) => {
      const dir = freshDir(tiny.root(), `kill-${point.replace(/[:@]/g, '-')}`);
      const dirs = { cache: join(dir, 'cache'), runs: join(dir, 'runs') };
      const file = writeExperiment(dir, 'faults.json', experiment);
      const killed = spawnBfe(
        ['run', file, '--cache-dir', dirs.cache, '--runs-dir', dirs.runs, '--json'],
        { ...env(), BFE_FAULT_KILL: point },
      );
      const ended = await killed.done;
      expect(ended.signal, ended.stderr).toBe('SIGKILL');
      expect(ended.stderr).toContain(`fault: killed at ${point}`);

      if (point === 'run-folder') {
        // The reserved run folder is empty and its temporary sibling half full: gc removes
        // both (the next run would too).
        const base = join(dirs.runs, NAME);
        expect(readdirSync(base).some((n) => n.includes('.tmp-'))).toBe(true);
        const gc = await runBfe(
          ['cache', 'gc', '--cache-dir', dirs.cache, '--runs-dir', dirs.runs, '--json'],
          {},
        );
        expect(gc.code, gc.stderr).toBe(0);
        const removed = (JSON.parse(gc.stdout) as { removed: { kind: string }[] }).removed;
        expect(removed.filter((r) => r.kind === 'run')).toHaveLength(2);
        expect(readdirSync(base)).toEqual([]);
      }

      const { out } = await runJson(file, dirs, env());
      expect(out.stages.map((s) => s.name)).toEqual(STAGES);
      expectIdenticalToReference(out.runDir);
      expectNoLeftovers(dirs.cache, dirs.runs);
      expect(readJsonFile<{ runDir: string }>(join(dirs.runs, NAME, 'latest.json')).runDir).toBe(
        out.runDir,
      );
    },
    120_000,
  );
});

describe('concurrent runs and gc on one cache', () => {
  it('four runs at once compute each stage exactly once and all match the reference', async () => {
    const dir = freshDir(tiny.root(), 'four');
    const dirs = { cache: join(dir, 'cache'), runs: join(dir, 'runs') };
    const file = writeExperiment(dir, 'faults.json', experiment);
    const outs = (await Promise.all([1, 2, 3, 4].map(() => runJson(file, dirs, env())))).map(
      (r) => r.out,
    );
    for (const name of STAGES) {
      const computed = outs.filter((o) => o.stages.some((s) => s.name === name && !s.cached));
      expect(computed, name).toHaveLength(1);
    }
    expect(new Set(outs.map((o) => o.runDir)).size).toBe(4);
    for (const o of outs) expectIdenticalToReference(o.runDir);
    expectNoLeftovers(dirs.cache, dirs.runs);
  }, 180_000);

  it("a run waiting for another's lock says whose it is, and the receipt books the wait apart", async () => {
    const dir = freshDir(tiny.root(), 'wait');
    const dirs = { cache: join(dir, 'cache'), runs: join(dir, 'runs') };
    const file = writeExperiment(dir, 'faults.json', experiment);
    const go = join(dir, 'go');
    // The holder stops inside its score compute (holding score@42's lock) until told to go.
    const holder = spawnBfe(
      ['run', file, '--cache-dir', dirs.cache, '--runs-dir', dirs.runs, '--json'],
      { ...env(), BFE_FAULT_STAGE_WAIT: `score:${go}` },
    );
    await holder.waitForStderr(/^stage score@42: computing$/m);
    const waiter = spawnBfe(
      ['run', file, '--cache-dir', dirs.cache, '--runs-dir', dirs.runs, '--json'],
      env(),
    );
    await waiter.waitForStderr(/^waiting for score [0-9a-f]{12} held by pid \d+/m);
    expect(waiter.stderr()).toContain(`held by pid ${holder.child.pid}, stale in ~`);
    writeFileSync(go, '');
    const [h, w] = await Promise.all([holder.done, waiter.done]);
    expect(h.code, h.stderr).toBe(0);
    expect(w.code, w.stderr).toBe(0);
    expect(w.stderr).toMatch(
      /^stage score@42: cached [0-9a-f]{12} \(\d+\.\d s, waited \d+\.\d s for a lock\)$/m,
    );
    const receipt = readJsonFile<{
      stages: { name: string; cached: boolean; seconds: number; waitSeconds: number }[];
    }>(join((JSON.parse(w.stdout) as RunJson).runDir, 'receipt.json'));
    const score = receipt.stages.find((s) => s.name === 'score@42')!;
    expect(score.cached).toBe(true);
    expect(score.waitSeconds).toBeGreaterThan(0);
    expect(score.waitSeconds).toBeLessThanOrEqual(score.seconds);
    for (const s of receipt.stages.filter((x) => x.name !== 'score@42')) {
      expect(s.waitSeconds, s.name).toBe(0);
    }
    expectIdenticalToReference((JSON.parse(w.stdout) as RunJson).runDir);
  }, 120_000);

  it('gc --keep-days while a run reads the cache removes nothing the run holds', async () => {
    const dir = freshDir(tiny.root(), 'gc-reading');
    const dirs = { cache: join(dir, 'cache'), runs: join(dir, 'runs') };
    const file = writeExperiment(dir, 'faults.json', experiment);
    const first = (await runJson(file, dirs, env())).out;
    const keyOf = (name: string): string => first.stages.find((s) => s.name === name)!.key;
    // Another α: the run reads dataset, encode, split and adapt from the cache, then holds in
    // its score stage until the test lets it go.
    const alpha = writeExperiment(dir, 'alpha.json', {
      ...experiment,
      scorer: { ...experiment.scorer, alpha: 0.75 },
    });
    const go = join(dir, 'go');
    const reading = spawnBfe(
      ['run', alpha, '--cache-dir', dirs.cache, '--runs-dir', dirs.runs, '--json'],
      { ...env(), BFE_FAULT_STAGE_WAIT: `score:${go}` },
    );
    await reading.waitForStderr(/^stage score@42: computing$/m);
    // Every artifact unused for ten days, as far as gc can tell.
    const old = new Date(Date.now() - 10 * 86_400_000);
    for (const a of artifactFiles(dirs.cache)) utimesSync(join(a.dir, 'artifact.json'), old, old);
    const gc = await runBfe(
      [
        'cache',
        'gc',
        '--cache-dir',
        dirs.cache,
        '--runs-dir',
        dirs.runs,
        '--keep-days',
        '1',
        '--json',
      ],
      {},
    );
    expect(gc.code, gc.stderr).toBe(0);
    const report = JSON.parse(gc.stdout) as {
      removed: { kind: string; path: string }[];
      busy: string[];
    };
    const held = ['dataset', 'encode', 'split@42', 'adapt@42'].map((n) => keyOf(n));
    for (const key of held) {
      expect(
        report.busy.some((b) => b.endsWith(key)),
        key,
      ).toBe(true);
    }
    // The first run's score artifact is read by no one: gone.
    expect(report.removed.filter((r) => r.kind === 'artifact').map((r) => r.path)).toEqual([
      join(dirs.cache, 'objects', 'score', keyOf('score@42')),
    ]);
    writeFileSync(go, '');
    const ended = await reading.done;
    expect(ended.code, ended.stderr).toBe(0);
    const out = JSON.parse(ended.stdout) as RunJson;
    expect(out.stages.map((s) => [s.name, s.cached])).toEqual([
      ['dataset', true],
      ['encode', true],
      ['split@42', true],
      ['adapt@42', true],
      ['score@42', false],
    ]);
    expect(existsSync(join(out.runDir, 'results.json'))).toBe(true);
  }, 120_000);
});
