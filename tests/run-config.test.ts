import { existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { tmpDir } from '@bfe/core/testing';
import { writeExperiment } from './fixtures/run/setup.ts';
import { runBfe } from './helpers.ts';

const tmp = (): string => tmpDir('bfe-run-config-');

/** `bfe run` with a scratch cache, runs folder and model folder, and no data mirror. */
async function run(file: string, dir: string, env: Record<string, string | undefined> = {}) {
  const r = await runBfe(
    ['run', file, '--cache-dir', join(dir, 'cache'), '--runs-dir', join(dir, 'runs')],
    { BFE_MODEL_DIR: join(dir, 'models'), BFE_DATA_MIRROR: undefined, ...env },
  );
  // A refused experiment writes no run folder.
  if (r.code !== 0) expect(existsSync(join(dir, 'runs'))).toBe(false);
  return r;
}

describe('bfe run refuses a bad experiment file before any work (exit 2)', () => {
  it.each(['bad.yaml', 'bad.json'])('names a mistyped key with its path (%s)', async (file) => {
    const dir = tmp();
    const path = writeExperiment(dir, file, {
      name: 'bad',
      dataset: { name: 'locomo' },
      scorer: { k: 8, alhpa: 0.3 },
    });
    const r = await run(path, dir);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('CONFIG_INVALID');
    expect(r.stderr).toContain(path);
    expect(r.stderr).toContain('Unrecognized key: "alhpa"');
    expect(r.stderr).toContain('→ at scorer');
    expect(r.stdout).toBe('');
    // Nothing was created for it: not even the cache.
    expect(existsSync(join(dir, 'cache'))).toBe(false);
  });

  it('names a value of the wrong type with its path', async () => {
    const dir = tmp();
    const path = writeExperiment(dir, 'bad.yaml', {
      name: 'bad',
      dataset: { name: 'locomo' },
      seeds: [42, 'forty-three'],
    });
    const r = await run(path, dir);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('→ at seeds[1]');
  });

  it('refuses the old split.seeds key, saying where the seeds moved', async () => {
    const dir = tmp();
    const path = writeExperiment(dir, 'old.yaml', {
      name: 'old',
      dataset: { name: 'locomo' },
      split: { policy: 'connected-bank', seeds: [42, 43, 44] },
    });
    const r = await run(path, dir);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('CONFIG_INVALID');
    expect(r.stderr).toContain('split.seeds is no longer a key');
    expect(r.stderr).toContain('seeds: [42,43,44]');
  });

  it('refuses an adapter with split.policy none', async () => {
    const dir = tmp();
    const path = writeExperiment(dir, 'adapter.json', {
      name: 'bad',
      dataset: { name: 'locomo' },
      split: { policy: 'none' },
      adapter: { enabled: true },
    });
    const r = await run(path, dir);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('CONFIG_INVALID');
    expect(r.stderr).toContain('adapter.enabled needs a split');
  });

  it('refuses bad YAML syntax and a missing file, naming the file', async () => {
    const dir = tmp();
    writeFileSync(join(dir, 'syntax.yaml'), 'name: [bad\n');
    const syntax = await run(join(dir, 'syntax.yaml'), dir);
    expect(syntax.code).toBe(2);
    expect(syntax.stderr).toContain('not valid YAML');
    const missing = await run(join(dir, 'none.yaml'), dir);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain(`cannot read experiment file ${join(dir, 'none.yaml')}`);
  });
});

describe('bfe run refuses what it cannot run (exit 2)', () => {
  it('names `bfe data fetch` when a registered dataset is not on disk and there is no mirror', async () => {
    const dir = tmp();
    const dataDir = join(dir, 'data');
    mkdirSync(dataDir);
    const path = writeExperiment(dir, 'locomo.yaml', {
      name: 'locomo-missing',
      dataset: { name: 'locomo' },
    });
    const r = await run(path, dir, { BFE_DATA_DIR: dataDir });
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toContain('DATA_MISSING');
    expect(r.stderr).toContain('bfe data fetch locomo');
    expect(r.stderr).not.toContain('internal error');
    expect(readdirSync(dataDir)).toEqual([]);
  });

  it('reports CACHE_UNWRITABLE, naming the directory, when --cache-dir is a regular file', async () => {
    const dir = tmp();
    const file = join(dir, 'not-a-dir');
    writeFileSync(file, 'a file, not a cache\n');
    const path = writeExperiment(dir, 'e.yaml', {
      name: 'unwritable',
      // A dataset that passes the experiment checks; the cache fails before it is read.
      dataset: { name: 'locomo' },
    });
    const r = await runBfe(['run', path, '--cache-dir', file, '--runs-dir', join(dir, 'runs')], {
      BFE_MODEL_DIR: join(dir, 'models'),
    });
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toContain('CACHE_UNWRITABLE');
    expect(r.stderr).toContain(`Cache directory ${file} is not writable`);
    expect(r.stderr).toContain('BFE_CACHE_DIR');
    expect(readFileSync(file, 'utf8')).toBe('a file, not a cache\n');
    expect(existsSync(join(dir, 'runs'))).toBe(false);
  });
});
