import { mkdtemp, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { ConfigError } from '@bfe/core';
import { suiteTmpDir } from '@bfe/core/testing';
import { installTinyModel, runIn, tinyExperiment } from './testing/tiny-model.js';

// `systems.chunkedPooled` through runExperiment on the tiny encoder (mean pooling, max length
// 16) and the LMEB document fixture: the chunks@N stages, the rows and what results.json records.

const suiteRoot = suiteTmpDir('bfe-chunks-run-');
let root = '';
let modelDir = '';
beforeAll(async () => {
  root = suiteRoot();
  modelDir = await installTinyModel(root);
});

interface SystemRow {
  name: string;
  nQueries: number;
  comparisons?: Record<string, unknown>;
}

describe('systems.chunkedPooled in a run', () => {
  it('adds chunks@N stages (cached on a second run) and chunked-pooled@N rows compared with pooled and sparse fusion', async () => {
    const dir = await mkdtemp(join(root, 'run-'));
    const e = tinyExperiment(modelDir, { systems: { chunkedPooled: { sizes: [16, 6] } } });
    const first = await runIn(dir, e);
    const names = first.stages.map((s) => s.name);
    expect(names).toEqual(expect.arrayContaining(['chunks@16', 'chunks@6']));
    interface Sizes {
      size: number;
      memories: number;
      cutMemories: number;
      windows: number;
    }
    const file = JSON.parse(await readFile(join(first.runDir, 'results.json'), 'utf8')) as {
      runs: Array<{
        results: { systems: SystemRow[]; meta: { chunkedPooled: { sizes: Sizes[] } } };
      }>;
    };
    const results = file.runs[0]!.results;
    const by = new Map(results.systems.map((s) => [s.name, s]));
    const pooled = by.get('pooled')!;
    for (const name of ['chunked-pooled@16', 'chunked-pooled@6']) {
      const row = by.get(name);
      expect(row, name).toBeDefined();
      expect(row!.nQueries).toBe(pooled.nQueries);
      expect(Object.keys(row!.comparisons ?? {}).sort()).toEqual(['pooled', 'sparse-fusion']);
    }
    const sizes = results.meta.chunkedPooled.sizes;
    expect(sizes.map((s) => s.size)).toEqual([16, 6]);
    // Windows of 6 tokens (4 content tokens) cut more memories into more windows than 16.
    expect(sizes[1]!.cutMemories).toBeGreaterThan(0);
    expect(sizes[1]!.cutMemories).toBeGreaterThanOrEqual(sizes[0]!.cutMemories);
    expect(sizes[1]!.windows).toBeGreaterThan(sizes[0]!.windows);
    expect(sizes[0]!.windows).toBeGreaterThanOrEqual(sizes[0]!.memories);
    const lines = (await readFile(join(first.runDir, 'per-query.jsonl'), 'utf8'))
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { system: string });
    const count = (s: string) => lines.filter((l) => l.system === s).length;
    expect(count('chunked-pooled@6')).toBe(count('pooled'));

    const second = await runIn(dir, e);
    for (const s of second.stages.filter((x) => x.name.startsWith('chunks@'))) {
      expect(s.cached, s.name).toBe(true);
    }
    expect(await readFile(join(second.runDir, 'per-query.jsonl'), 'utf8')).toBe(
      await readFile(join(first.runDir, 'per-query.jsonl'), 'utf8'),
    );
  }, 120_000);

  it('refuses a size above the bank’s maxLength before encoding any window', async () => {
    const dir = await mkdtemp(join(root, 'refuse-'));
    const e = tinyExperiment(modelDir, { systems: { chunkedPooled: { sizes: [8, 32] } } });
    await expect(runIn(dir, e)).rejects.toThrow(ConfigError);
  }, 60_000);
});
