import { readdir } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '@bfe/core';
import { parseExperiment, readExperiment } from '../config.js';
import { repoRoot } from '../testing/tiny-model.js';

// adapter.from (sections/adapter-from.ts): what it may be written with, and the transfer presets.

function configError(call: () => unknown): ConfigError {
  try {
    call();
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return error as ConfigError;
  }
  throw new Error('expected a ConfigError');
}

const base = { name: 't', dataset: { name: 'longmemeval-s' }, split: { policy: 'none' } };

describe('adapter.from', () => {
  it('takes an experiment file and needs no split of its own', () => {
    const e = parseExperiment({ ...base, adapter: { from: '../locomo-minilm.yaml' } });
    expect(e.adapter.from).toBe('../locomo-minilm.yaml');
    expect(e.adapter.enabled).toBe(false);
    expect(parseExperiment(base).adapter.from).toBeUndefined();
  });

  it('refuses a path that is not an experiment file', () => {
    const error = configError(() => parseExperiment({ ...base, adapter: { from: 'locomo' } }));
    expect(error.message).toContain('adapter.from');
  });

  it('refuses adapter keys beside it: the source experiment’s settings train the adapter', () => {
    const error = configError(() =>
      parseExperiment({ ...base, adapter: { from: 'a.yaml', enabled: true, epochs: 3 } }),
    );
    expect(error.message).toContain(
      'adapter.enabled, adapter.epochs cannot be given with adapter.from',
    );
  });

  it('refuses cross-fitted folds with it', () => {
    const error = configError(() =>
      parseExperiment({
        ...base,
        split: { policy: 'connected-bank', folds: 3 },
        scorer: { kSweep: [] },
        adapter: { from: 'a.yaml' },
      }),
    );
    expect(error.message).toContain('adapter.from cannot be combined with split.folds (3)');
  });

  it('still refuses adapter.enabled without a split, and points at adapter.from', () => {
    const error = configError(() => parseExperiment({ ...base, adapter: { enabled: true } }));
    expect(error.message).toContain("split.policy is 'none'");
    expect(error.suggestion).toContain('adapter.from');
  });
});

describe('transfer presets', () => {
  const dir = join(repoRoot, 'configs/experiments/transfer');

  it('parse, and each names a source that trains its own adapter on the same encoder', async () => {
    const files = (await readdir(dir)).filter((f) => f.endsWith('.yaml')).sort();
    expect(files).toEqual([
      'locomo-to-longmemeval-s.yaml',
      'longmemeval-s-source.yaml',
      'longmemeval-s-to-locomo.yaml',
    ]);
    const targets = new Map<string, string>();
    for (const file of files) {
      const path = join(dir, file);
      const e = await readExperiment(path);
      expect(e.name).toBe(file.replace(/\.yaml$/, ''));
      if (e.adapter.from === undefined) continue;
      const source = await readExperiment(resolve(path, '..', e.adapter.from));
      expect(source.adapter.enabled).toBe(true);
      expect(source.split.folds).toBeUndefined();
      expect(source.model.name).toBe(e.model.name);
      expect(source.model.maxLength).toBe(e.model.maxLength);
      expect(source.dataset.name).not.toBe(e.dataset.name);
      targets.set(file, `${source.name} → ${e.dataset.name} (${e.split.policy})`);
    }
    expect(Object.fromEntries(targets)).toEqual({
      'locomo-to-longmemeval-s.yaml': 'locomo-minilm → longmemeval-s (none)',
      'longmemeval-s-to-locomo.yaml': 'longmemeval-s-source → locomo (connected-bank)',
    });
  });
});
