import { describe, expect, it } from 'vitest';
import { contentHash } from '@bfe/core';
import { artifactKey, type ArtifactSpec } from './key.js';
import { resolveCacheRoot } from './types.js';

const base: ArtifactSpec = {
  stage: 'encode',
  version: '1',
  config: { model: 'all-minilm-l6-v2', dtype: 'float32', maxLength: 256 },
  inputs: { data: 'a'.repeat(64), split: 'b'.repeat(64) },
};

describe('artifactKey', () => {
  it('is the content hash of { stage, version, config, inputs }: 64 hex characters', () => {
    const key = artifactKey(base);
    expect(key).toMatch(/^[0-9a-f]{64}$/);
    expect(key).toBe(
      contentHash({
        stage: base.stage,
        version: base.version,
        config: base.config,
        inputs: base.inputs,
      }),
    );
  });

  it('does not depend on key order in config or inputs', () => {
    const reordered: ArtifactSpec = {
      inputs: { split: 'b'.repeat(64), data: 'a'.repeat(64) },
      config: { maxLength: 256, dtype: 'float32', model: 'all-minilm-l6-v2' },
      version: '1',
      stage: 'encode',
    };
    expect(artifactKey(reordered)).toBe(artifactKey(base));
  });

  it('changes with the stage, the version, any config value, any input key or input name', () => {
    const variants: ArtifactSpec[] = [
      { ...base, stage: 'score' },
      { ...base, version: '2' },
      { ...base, config: { ...(base.config as object), dtype: 'float16' } },
      { ...base, config: { ...(base.config as object), maxLength: 257 } },
      { ...base, config: { ...(base.config as object), extra: null } },
      { ...base, inputs: { ...base.inputs, data: 'c'.repeat(64) } },
      { ...base, inputs: { corpus: 'a'.repeat(64), split: 'b'.repeat(64) } },
      { ...base, inputs: { data: 'a'.repeat(64) } },
    ];
    const keys = new Set([artifactKey(base), ...variants.map(artifactKey)]);
    expect(keys.size).toBe(variants.length + 1);
  });

  it('rejects a stage name that is not one safe path segment', () => {
    for (const stage of ['', '../x', 'Encode', 'a/b', '.hidden']) {
      expect(() => artifactKey({ ...base, stage })).toThrow(/Invalid artifact spec/);
    }
  });

  it('rejects a config JSON cannot hold', () => {
    expect(() => artifactKey({ ...base, config: { n: 1n } })).toThrow();
    expect(() => artifactKey({ ...base, config: undefined })).toThrow(/no JSON form/);
  });
});

describe('resolveCacheRoot', () => {
  it('prefers an explicit root, then BFE_CACHE_DIR, then ./.bfe-cache', () => {
    const env = { BFE_CACHE_DIR: 'from-env' };
    expect(resolveCacheRoot({ root: '/x/cache', env, cwd: '/w' })).toBe('/x/cache');
    expect(resolveCacheRoot({ env, cwd: '/w' })).toBe('/w/from-env');
    expect(resolveCacheRoot({ env: {}, cwd: '/w' })).toBe('/w/.bfe-cache');
    expect(resolveCacheRoot({ root: '', env: { BFE_CACHE_DIR: '' }, cwd: '/w' })).toBe(
      '/w/.bfe-cache',
    );
  });
});
