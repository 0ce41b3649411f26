import { mkdir, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { tmpDir } from '@bfe/core/testing';
import { ConfigError } from '@bfe/core';
import { BUDGET_KS, DEFAULT_KS } from '@bfe/eval';
import { codecNameSchema } from '@bfe/index';
import { experimentSchema, isSelectionData, parseExperiment, readExperiment } from './config.js';
import { ivfSearch } from './stages/index-ivf.js';

/** The ConfigError a call throws (fails the test when it does not throw one). */
function configError(call: () => unknown): ConfigError {
  try {
    call();
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return error as ConfigError;
  }
  throw new Error('expected a ConfigError');
}

describe('parseExperiment', () => {
  it('fills every default of a minimal experiment', () => {
    const e = parseExperiment({ name: 'locomo-minilm', dataset: { name: 'locomo' } });
    expect(e).toEqual({
      name: 'locomo-minilm',
      description: '',
      dataset: { name: 'locomo', options: {} },
      seeds: [42],
      split: { policy: 'connected-bank', seed: 42, ratios: [0.6, 0.2, 0.2], evaluate: 'test' },
      model: { name: 'all-minilm-l6-v2', dtype: 'float32', executionProvider: 'cpu' },
      scorer: {
        k: 64,
        alpha: 0.5,
        kSweep: [16, 32, 64, 128],
        backend: 'onnxruntime',
        executionProvider: 'cpu',
      },
      adapter: {
        enabled: false,
        rank: 32,
        epochs: 2,
        batchSize: 16,
        lr: 1e-4,
        weightDecay: 1e-4,
        clip: 1,
        temperature: 0.07,
        alphaGrid: [0.25, 0.5, 0.75],
        workers: 2,
        kernel: 'onnxruntime',
      },
      eval: { ks: [1, 4, 5, 8, 10, 16, 25, 50], resamples: 10_000, seed: 42 },
    });
    // The evaluator's own default, memory budgets K ∈ {4, 8, 10, 16} included.
    expect(e.eval.ks).toEqual([...DEFAULT_KS]);
    for (const k of BUDGET_KS) expect(e.eval.ks).toContain(k);
  });

  it('fills the defaults of a partly written section', () => {
    const e = parseExperiment({
      name: 'x',
      dataset: { name: 'locomo' },
      scorer: { k: 8 },
      adapter: { enabled: true },
      eval: { ks: [10, 1, 10] },
    });
    expect(e.scorer).toEqual({
      k: 8,
      alpha: 0.5,
      kSweep: [16, 32, 64, 128],
      backend: 'onnxruntime',
      executionProvider: 'cpu',
    });
    expect(e.adapter.enabled).toBe(true);
    expect(e.adapter.rank).toBe(32);
    expect(e.adapter.kernel).toBe('onnxruntime');
    // ks are deduplicated and sorted.
    expect(e.eval.ks).toEqual([1, 10]);
    expect(e.eval.resamples).toBe(10_000);
  });

  it.each([
    [{ name: 'x', dataset: { name: 'locomo' }, scorer: { kk: 3 } }, '"kk"', 'scorer'],
    [
      { name: 'x', dataset: { name: 'locomo' }, adapter: { enabeld: true } },
      '"enabeld"',
      'adapter',
    ],
    [{ name: 'x', dataset: { name: 'locomo', option: {} } }, '"option"', 'dataset'],
    [{ name: 'x', dataset: { name: 'locomo' }, sccorer: {} }, '"sccorer"', ''],
  ])('refuses the unknown key in %j, naming it and its path', (raw, key, path) => {
    const error = configError(() => parseExperiment(raw, 'exp.yaml'));
    expect(error.code).toBe('CONFIG_INVALID');
    expect(error.message).toContain('exp.yaml: invalid experiment');
    expect(error.message).toContain(`Unrecognized key: ${key}`);
    if (path !== '') expect(error.message).toContain(`→ at ${path}`);
  });

  it.each([
    [{ scorer: { alpha: 2 } }, 'scorer.alpha'],
    [{ scorer: { k: 0 } }, 'scorer.k'],
    [{ split: { policy: 'random' } }, 'split.policy'],
    [{ seeds: [-1] }, 'seeds[0]'],
    [{ seeds: [] }, 'seeds'],
    [{ seeds: [42, 42] }, 'seeds'],
    [{ split: { seed: 'each' } }, 'split.seed'],
    [{ eval: { ks: [1, 5] } }, 'eval.ks'],
    [{ model: { dtype: 'int8' } }, 'model.dtype'],
    [{ adapter: { kernel: 'gpu' } }, 'adapter.kernel'],
    [{ adapter: { epochs: 0 } }, 'adapter.epochs'],
  ])('refuses the mistyped value %j at %s', (part, path) => {
    const error = configError(() =>
      parseExperiment({ name: 'x', dataset: { name: 'locomo' }, ...part }),
    );
    expect(error.message).toContain(`→ at ${path}`);
  });

  it('refuses adapter.epochs 0 with what to do instead (the report had no step to show)', () => {
    const error = configError(() =>
      parseExperiment({ name: 'x', dataset: { name: 'locomo' }, adapter: { epochs: 0 } }),
    );
    expect(error.message).toContain('adapter.epochs must be at least 1');
    expect(error.message).toContain('adapter.enabled: false');
    expect(
      parseExperiment({ name: 'x', dataset: { name: 'locomo' }, adapter: { epochs: 1 } }).adapter
        .epochs,
    ).toBe(1);
  });

  it('refuses a name that is not a folder name, and a missing dataset', () => {
    expect(
      configError(() => parseExperiment({ name: 'My Run', dataset: { name: 'locomo' } })).message,
    ).toContain('→ at name');
    expect(configError(() => parseExperiment({ name: 'x' })).message).toContain('→ at dataset');
  });

  it('refuses an adapter without a split, and accepts it with one', () => {
    const error = configError(() =>
      parseExperiment({
        name: 'x',
        dataset: { name: 'locomo' },
        split: { policy: 'none' },
        adapter: { enabled: true },
      }),
    );
    expect(error.message).toContain('adapter.enabled');
    expect(error.message).toContain("split.policy is 'none'");
    for (const policy of ['connected-bank', 'query-disjoint-shared-bank'] as const) {
      const e = parseExperiment({
        name: 'x',
        dataset: { name: 'locomo' },
        split: { policy },
        adapter: { enabled: true },
      });
      expect(e.adapter.enabled).toBe(true);
    }
    // split: none without the adapter is fine.
    expect(
      parseExperiment({ name: 'x', dataset: { name: 'locomo' }, split: { policy: 'none' } }).split
        .policy,
    ).toBe('none');
  });
});

describe('the index section', () => {
  const base = { name: 'x', dataset: { name: 'locomo' } };
  it('is absent unless written (exact float32, nothing else changes)', () => {
    expect(parseExperiment(base).index).toBeUndefined();
    expect(parseExperiment({ ...base, index: {} }).index).toEqual({
      backend: 'exact',
      codec: 'fp32',
      M: 16,
      efConstruction: 128,
      efSearch: 128,
      seed: 42,
    });
    expect(
      parseExperiment({ ...base, index: { backend: 'hnsw', codec: 'rp128+sq4', efSearch: 64 } })
        .index,
    ).toMatchObject({ backend: 'hnsw', codec: 'rp128+sq4', M: 16, efSearch: 64 });
  });

  it('graph, overFetch and margin stay absent unless written (the codec decides the graph kind)', () => {
    const hnsw = parseExperiment({ ...base, index: { backend: 'hnsw' } }).index!;
    expect(hnsw).not.toHaveProperty('graph');
    expect(hnsw).not.toHaveProperty('overFetch');
    expect(hnsw).not.toHaveProperty('margin');
    expect(parseExperiment({ ...base, index: { backend: 'hnsw', margin: 1 } }).index).toMatchObject(
      { margin: 1 },
    );
    expect(
      parseExperiment({ ...base, index: { backend: 'hnsw', graph: 'i8', overFetch: 2 } }).index,
    ).toMatchObject({ backend: 'hnsw', codec: 'fp32', graph: 'i8', overFetch: 2 });
  });

  it("lists @bfe/index's codecs and refuses unknown keys, backends and codecs", () => {
    const codecs = experimentSchema.shape.index.unwrap().shape.codec.unwrap().options;
    expect([...codecs]).toEqual([...codecNameSchema.options]);
    for (const index of [
      { codec: 'pq8' },
      { backend: 'warp' },
      { ef: 10 },
      { backend: 'ivf', residualBits: 3 },
      { backend: 'ivf', nprobe: 0 },
      { backend: 'ivf', centroids: 1.5 },
      { backend: 'ivf', searchThreads: 0 },
      { backend: 'ivf', searchThreads: 65 },
      { backend: 'ivf', floor: 'estimate' },
      { backend: 'hnsw', floor: 'warp' }, // the estimate is the clustered index's own
      { backend: 'ivf', centroidProduct: 'int4' },
      { backend: 'exact', centroidProduct: 'int8' },
      { M: 0 },
      { graph: 'i4' },
      { overFetch: 0.5 },
      { margin: 0 },
      { margin: 2.5 },
    ]) {
      expect(configError(() => parseExperiment({ ...base, index })).message).toMatch(/index/);
    }
    const ivf = {
      backend: 'ivf',
      centroids: 1024,
      nprobe: 8,
      residualBits: 2,
      searchThreads: 2,
      floor: 'warp',
      centroidProduct: 'int8',
    };
    expect(parseExperiment({ ...base, index: ivf }).index).toMatchObject(ivf);
    // In the search options (a result, so a key) only when asked: fp32's keys stay as they were.
    const parsed = (index: object) => parseExperiment({ ...base, index }).index!;
    expect(ivfSearch(parsed(ivf))).toEqual({ nprobe: 8, floor: 'warp', centroidProduct: 'int8' });
    expect(ivfSearch(parsed({ backend: 'ivf', centroidProduct: 'fp32' }))).toEqual({ nprobe: 16 });
    expect(
      ivfSearch(parsed({ backend: 'ivf', nprobe: 4, probeSlack: 0.15, maxProbe: 32 })),
    ).toEqual({ nprobe: 4, probeSlack: 0.15, maxProbe: 32 });
    for (const index of [
      { backend: 'hnsw', probeSlack: 0.1 },
      { backend: 'ivf', probeSlack: -0.1 },
      { backend: 'ivf', maxProbe: 32 },
      { backend: 'ivf', nprobe: 16, probeSlack: 0.1, maxProbe: 8 },
    ]) {
      expect(configError(() => parseExperiment({ ...base, index })).message).toMatch(
        /probeSlack|maxProbe/,
      );
    }
  });
});

describe('seeds and the split seed', () => {
  it('keeps one split seed (default 42) apart from the training seeds', () => {
    const e = parseExperiment({ name: 'x', dataset: { name: 'locomo' }, seeds: [42, 43, 44] });
    expect(e.seeds).toEqual([42, 43, 44]);
    expect(e.split.seed).toBe(42);
    const own = parseExperiment({
      name: 'x',
      dataset: { name: 'locomo' },
      seeds: [1, 2],
      split: { seed: 7 },
    });
    expect(own.split.seed).toBe(7);
    const perSeed = parseExperiment({
      name: 'x',
      dataset: { name: 'locomo' },
      seeds: [1, 2],
      split: { seed: 'per-seed' },
    });
    expect(perSeed.split.seed).toBe('per-seed');
  });

  it('refuses the old split.seeds key, saying where the seeds moved', () => {
    const error = configError(() =>
      parseExperiment({ name: 'x', dataset: { name: 'locomo' }, split: { seeds: [42, 43] } }),
    );
    expect(error.code).toBe('CONFIG_INVALID');
    expect(error.message).toContain('split.seeds is no longer a key');
    expect(error.message).toContain('top-level `seeds`');
    expect(error.message).toContain('`split.seed`');
    expect(error.suggestion).toContain('seeds: [42,43]');
    expect(error.suggestion).toContain('split.seed: per-seed');
  });

  it('refuses several training seeds with split.policy none (nothing depends on them)', () => {
    const error = configError(() =>
      parseExperiment({
        name: 'x',
        dataset: { name: 'locomo' },
        seeds: [42, 43],
        split: { policy: 'none' },
      }),
    );
    expect(error.message).toContain("split.policy is 'none'");
    expect(
      parseExperiment({ name: 'x', dataset: { name: 'locomo' }, split: { policy: 'none' } }).seeds,
    ).toEqual([42]);
  });

  it('marks train and validation evaluation as selection data, test and no split not', () => {
    const at = (split: Record<string, unknown>) =>
      isSelectionData(parseExperiment({ name: 'x', dataset: { name: 'locomo' }, split }));
    expect(at({ evaluate: 'validation' })).toBe(true);
    expect(at({ evaluate: 'train' })).toBe(true);
    expect(at({ evaluate: 'test' })).toBe(false);
    expect(at({ policy: 'none' })).toBe(false);
  });

  it('reads every preset in configs/experiments; the reproduction shares split 42 across 42/43/44', async () => {
    const dir = fileURLToPath(new URL('../../../../configs/experiments/', import.meta.url));
    const files = (await readdir(dir)).filter((f) => f.endsWith('.yaml')).sort();
    expect(files).toEqual([
      'covidqa-minilm-hybrid-crossfit.yaml',
      'covidqa-minilm-hybrid-split.yaml',
      'covidqa-minilm-hybrid.yaml',
      'covidqa-minilm-windowed.yaml',
      'covidqa-minilm.yaml',
      'locomo-e5.yaml',
      'locomo-minilm-3seeds-hybrid.yaml',
      'locomo-minilm-3seeds.yaml',
      'locomo-minilm-crossfit.yaml',
      'locomo-minilm-smoke.yaml',
      'locomo-minilm.yaml',
      'longmemeval-s-crossfit.yaml',
      'longmemeval-s-e5.yaml',
      'longmemeval-s-hybrid.yaml',
      'longmemeval-s-paper.yaml',
      'longmemeval-s-relevance.yaml',
      'longmemeval-s-reproduction-hybrid.yaml',
      'longmemeval-s-reproduction.yaml',
      'longmemeval-s-windowed.yaml',
    ]);
    const presets = new Map(
      await Promise.all(files.map(async (f) => [f, await readExperiment(join(dir, f))] as const)),
    );
    const repro = presets.get('longmemeval-s-reproduction.yaml')!;
    expect([repro.seeds, repro.split.seed]).toEqual([[42, 43, 44], 42]);
    const main = presets.get('locomo-minilm.yaml')!;
    const three = presets.get('locomo-minilm-3seeds.yaml')!;
    expect([main.seeds, main.split.seed, main.split.policy]).toEqual([[42], 42, 'connected-bank']);
    expect([three.seeds, three.split.seed]).toEqual([[42, 43, 44], 42]);
    // The team-cache test's smoke run: the main job's split and model, every stage (adapter on).
    const smoke = presets.get('locomo-minilm-smoke.yaml')!;
    expect([smoke.split, smoke.model.name, smoke.adapter.enabled]).toEqual([
      main.split,
      main.model.name,
      true,
    ]);
    // The same job as the main one but for its name, description and training seeds.
    expect({ ...three, name: main.name, description: main.description, seeds: main.seeds }).toEqual(
      main,
    );
    // The cross-fitted headline: the 3-seed job but for its split (folds instead of ratios) and
    // the k sweep (not pooled across folds).
    const crossfit = presets.get('locomo-minilm-crossfit.yaml')!;
    expect(crossfit.split).toEqual({ ...three.split, folds: 5 });
    expect({
      ...crossfit,
      name: three.name,
      description: three.description,
      split: three.split,
      scorer: { ...crossfit.scorer, kSweep: three.scorer.kSweep },
    }).toEqual(three);
    // The second family: the main job but for the model (and its name and description).
    const e5 = presets.get('locomo-e5.yaml')!;
    expect(e5.model.name).toBe('multilingual-e5-small-q4');
    expect({ ...e5, name: main.name, description: main.description, model: main.model }).toEqual(
      main,
    );
    const lme = presets.get('longmemeval-s-e5.yaml')!;
    const table5 = await readExperiment(join(dir, 'table5', 'longmemeval-s.yaml'));
    // The hybrid presets: their base job but for the name, description and systems.hybrid
    // (predeclared equal weights; a grid wherever there is a validation part).
    const thirds = { pooled: 1, sparse: 1, bm25: 1 };
    for (const [file, base, grid] of [
      ['covidqa-minilm-hybrid.yaml', presets.get('covidqa-minilm.yaml')!, undefined],
      ['locomo-minilm-3seeds-hybrid.yaml', three, 0.1],
      ['longmemeval-s-hybrid.yaml', table5, undefined],
      ['longmemeval-s-reproduction-hybrid.yaml', repro, 0.1],
    ] as const) {
      const h = presets.get(file)!;
      expect(h.systems?.hybrid, file).toEqual({
        weights: thirds,
        ...(grid === undefined ? {} : { grid }),
      });
      const same = { ...h, name: base.name, description: base.description, systems: undefined };
      expect(same, file).toEqual(base);
    }
    expect(presets.get('covidqa-minilm-hybrid-split.yaml')!.systems?.hybrid?.grid).toBe(0.1);
    // The paper's LongMemEval protocol (issue 29): the hybrid job but for the dataset protocol.
    const paper = presets.get('longmemeval-s-paper.yaml')!;
    const ownProtocol = presets.get('longmemeval-s-hybrid.yaml')!;
    expect(paper.dataset).toEqual({ name: 'longmemeval-s', options: { protocol: 'paper' } });
    expect({
      ...paper,
      name: ownProtocol.name,
      description: ownProtocol.description,
      dataset: ownProtocol.dataset,
    }).toEqual(ownProtocol);
    expect({
      ...lme,
      name: table5.name,
      description: table5.description,
      model: table5.model,
    }).toEqual(table5);
    // The windowed presets: their truncated twins plus model.window (issue 16), nothing else.
    for (const [windowed, truncated] of [
      [presets.get('longmemeval-s-windowed.yaml')!, table5],
      [presets.get('covidqa-minilm-windowed.yaml')!, presets.get('covidqa-minilm.yaml')!],
    ] as const) {
      expect(windowed.model.window).toEqual({ size: 256, stride: 192 });
      expect(truncated.model.window).toBeUndefined();
      expect({
        ...windowed,
        name: truncated.name,
        description: truncated.description,
        model: truncated.model,
      }).toEqual(truncated);
      expect({ ...windowed.model, window: undefined }).toEqual({
        ...truncated.model,
        window: undefined,
      });
    }
  });
});

describe('model.window', () => {
  it('is absent unless written, and takes a size and a stride below it', () => {
    const base = { name: 'w', dataset: { name: 'locomo' } };
    expect('window' in parseExperiment(base).model).toBe(false);
    const e = parseExperiment({ ...base, model: { window: { size: 256, stride: 192 } } });
    expect(e.model.window).toEqual({ size: 256, stride: 192 });
    const same = configError(() =>
      parseExperiment({ ...base, model: { window: { size: 128, stride: 128 } } }),
    );
    expect(same.message).toContain('window.stride must be below window.size');
    const unknown = configError(() =>
      parseExperiment({ ...base, model: { window: { size: 128, stride: 64, overlap: 1 } } }),
    );
    expect(unknown.message).toContain('overlap');
  });
});

describe('readExperiment', () => {
  const yamlText = [
    '# a comment',
    'name: tiny',
    'dataset:',
    '  name: lmeb:data',
    '  options:',
    '    layout: document',
    'seeds: [42, 43]',
    'split:',
    '  policy: query-disjoint-shared-bank',
    '  seed: per-seed',
    'scorer:',
    '  k: 4',
    '  kSweep: [2, 4]',
    '',
  ].join('\n');
  const asObject = {
    name: 'tiny',
    dataset: { name: 'lmeb:data', options: { layout: 'document' } },
    seeds: [42, 43],
    split: { policy: 'query-disjoint-shared-bank', seed: 'per-seed' },
    scorer: { k: 4, kSweep: [2, 4] },
  };

  it('reads YAML (.yaml, .yml) and JSON to the same experiment, defaults filled', async () => {
    const dir = tmpDir('bfe-experiment-config-');
    await mkdir(join(dir, 'data'));
    await writeFile(join(dir, 'a.yaml'), yamlText);
    await writeFile(join(dir, 'a.yml'), yamlText);
    await writeFile(join(dir, 'a.json'), JSON.stringify(asObject));
    const fromYaml = await readExperiment(join(dir, 'a.yaml'));
    expect(fromYaml).toEqual(experimentSchema.parse(asObject));
    expect(fromYaml.split.ratios).toEqual([0.6, 0.2, 0.2]);
    expect(fromYaml.scorer.alpha).toBe(0.5);
    expect(await readExperiment(join(dir, 'a.yml'))).toEqual(fromYaml);
    expect(await readExperiment(join(dir, 'a.json'))).toEqual(fromYaml);
  });

  it('names the file and the key path of an invalid experiment', async () => {
    const dir = tmpDir('bfe-experiment-config-');
    const path = join(dir, 'bad.yaml');
    await writeFile(path, `${yamlText}adapter:\n  enabled: true\n  ranks: 8\n`);
    const error = await readExperiment(path).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).message).toContain(path);
    expect((error as ConfigError).message).toContain('Unrecognized key: "ranks"');
    expect((error as ConfigError).message).toContain('→ at adapter');
  });

  it('refuses unreadable files and bad syntax with a ConfigError naming the file', async () => {
    const dir = tmpDir('bfe-experiment-config-');
    const missing = await readExperiment(join(dir, 'none.yaml')).catch((e: unknown) => e);
    expect(missing).toBeInstanceOf(ConfigError);
    expect((missing as ConfigError).message).toContain('cannot read experiment file');
    await writeFile(join(dir, 'bad.json'), '{"name": "x",');
    const json = await readExperiment(join(dir, 'bad.json')).catch((e: unknown) => e);
    expect((json as ConfigError).message).toContain('not valid JSON');
    await writeFile(join(dir, 'bad.yaml'), 'name: [unclosed\n');
    const yaml = await readExperiment(join(dir, 'bad.yaml')).catch((e: unknown) => e);
    expect((yaml as ConfigError).message).toContain('not valid YAML');
    expect(await readdir(dir)).toHaveLength(2);
  });
});

describe('the whole experiment file is checked before any stage runs', () => {
  async function refused(
    body: Record<string, unknown>,
  ): Promise<{ path: string; message: string }> {
    const dir = tmpDir('bfe-experiment-config-');
    const path = join(dir, 'x.json');
    await writeFile(path, JSON.stringify({ name: 'x', ...body }));
    const error = await readExperiment(path).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConfigError);
    return { path, message: (error as ConfigError).message };
  }

  it.each([
    [[0.5, 0.2, 0.2], 'sum to 0.9'],
    [[0, 0, 0], 'sum to zero'],
    [[60.5, 20, 20], 'sum to 100.5'],
  ])('refuses split.ratios %j, naming file and field', async (ratios, why) => {
    const { path, message } = await refused({ dataset: { name: 'locomo' }, split: { ratios } });
    expect(message).toContain(path);
    expect(message).toContain('→ at split.ratios');
    expect(message).toContain(why);
  });

  it('accepts fractions, percentages and integer counts', () => {
    for (const ratios of [
      [0.7, 0.2, 0.1],
      [60, 20, 20],
      [6, 2, 2],
    ]) {
      expect(
        parseExperiment({ name: 'x', dataset: { name: 'locomo' }, split: { ratios } }).split.ratios,
      ).toEqual(ratios);
    }
  });

  it("refuses a mistyped dataset option against the dataset's own schema", async () => {
    const { path, message } = await refused({
      dataset: { name: 'locomo', options: { granularty: 'session' } },
    });
    expect(message).toContain(path);
    expect(message).toContain('Unrecognized key: "granularty"');
    expect(message).toContain('→ at dataset.options');
    const bad = await refused({ dataset: { name: 'locomo', options: { granularity: 'word' } } });
    expect(bad.message).toContain('→ at dataset.options.granularity');
  });

  it('refuses an unknown dataset, a missing LMEB folder and an unknown model', async () => {
    const unknown = await refused({ dataset: { name: 'locomoo' } });
    expect(unknown.message).toContain(`${unknown.path}: dataset.name: unknown dataset 'locomoo'`);
    const lmeb = await refused({ dataset: { name: 'lmeb:nowhere' } });
    expect(lmeb.message).toContain('dataset.name: LMEB folder');
    const model = await refused({ dataset: { name: 'locomo' }, model: { name: 'no-such-model' } });
    expect(model.message).toContain(`${model.path}: model.name: unknown model 'no-such-model'`);
  });

  it('refuses repeated seeds, naming file and field', async () => {
    const { path, message } = await refused({ dataset: { name: 'locomo' }, seeds: [42, 42] });
    expect(message).toContain(path);
    expect(message).toContain('seeds must not repeat');
    expect(message).toContain('→ at seeds');
  });
});
