import { mkdtemp, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, RelevanceLabels, type Split } from '@bfe/core';
import { suiteTmpDir } from '@bfe/core/testing';
import { parseResults } from '@bfe/eval';
import { installTinyModel, repoRoot, runIn } from './testing/tiny-model.js';
import { parseExperiment, type Experiment } from './config.js';
import { ArtifactStore } from '../cache/store.js';
import {
  checkSelectionSplit,
  pickHybridWeights,
  selectHybridWeights,
} from '../score/hybrid-select.js';
import { stageContext } from './stage.js';
import { runDatasetStage } from './stages/dataset.js';
import { runEncodeStage } from './stages/encode.js';
import { runSplitStage } from './stages/split.js';

// The hybrid systems (METHOD.md §8) end to end on the tiny encoder and the shared-bank LMEB
// fixture (12 labelled queries over 3 candidate lists of 10 memories): hybrid-selected's
// weights are chosen on validation labels only (a test label read throws; changed test labels
// leave the selection identical; changed validation labels move it), and results.json carries
// both systems with their comparisons.

const sharedTask = join(repoRoot, 'tests/fixtures/run/lmeb-shared');
const suiteRoot = suiteTmpDir('bfe-run-hybrid-');
let root = '';
let modelDir = '';
beforeAll(async () => {
  root = suiteRoot();
  modelDir = await installTinyModel(root);
});

const HYBRID = { weights: { pooled: 1, sparse: 1, bm25: 1 }, grid: 0.5 };

function experiment(raw: Record<string, unknown> = {}): Experiment {
  return parseExperiment({
    name: 'tiny-hybrid',
    dataset: { name: `lmeb:${sharedTask}` },
    split: { policy: 'query-disjoint-shared-bank' },
    model: { name: 'tiny', dir: modelDir },
    scorer: { k: 4, kSweep: [] },
    eval: { resamples: 50 },
    ...raw,
  });
}

/** Labels whose every read of a test query's relevance throws. */
class TrappedLabels extends RelevanceLabels {
  constructor(
    from: RelevanceLabels,
    private readonly trapped: ReadonlySet<string>,
  ) {
    super();
    for (const [q, m, g] of from.toRows()) this.add(q, m, g);
  }
  override relevant(queryId: string): ReadonlyMap<string, number> {
    if (this.trapped.has(queryId)) throw new Error(`test label read: ${queryId}`);
    return super.relevant(queryId);
  }
}

describe('hybrid-selected: weights chosen on validation labels only', () => {
  it('never reads a test label; changed test labels leave it identical, changed validation labels move it', async () => {
    const e = experiment();
    const dir = await mkdtemp(join(root, 'select-'));
    const store = await ArtifactStore.open({ root: join(dir, 'cache') });
    const ctx = stageContext(
      store,
      () => {},
      () => {},
    );
    const dataset = await runDatasetStage(ctx, e, join(dir, 'experiment.yaml'));
    const encode = await runEncodeStage(ctx, e, dataset);
    const { split } = await runSplitStage(ctx, e, 42, dataset);
    const { benchmark, labels } = await dataset.load();
    const bank = await encode.fileBank();
    const select = (l: RelevanceLabels, s: Split = split) =>
      selectHybridWeights({ bank, benchmark, labels: l, split: s, k: 4, step: 0.5, ks: e.eval.ks });

    const test = new Set(split.queries.test);
    expect(test.size).toBeGreaterThanOrEqual(2);
    const reference = await select(labels);
    expect(reference.grid).toHaveLength(6);
    expect(reference.validationQueries).toBe(split.queries.validation.length);
    // A read of any test label throws: none happens.
    expect(await select(new TrappedLabels(labels, test))).toEqual(reference);
    // The trap works: trapping a validation query's labels does throw.
    await expect(
      select(new TrappedLabels(labels, new Set(split.queries.validation.slice(0, 1)))),
    ).rejects.toThrow(/test label read/);
    // Every test query's relevant memories dropped: the same selection.
    const noTest = labels.restrictTo(labels.queryIds().filter((q) => !test.has(q)));
    expect(await select(noTest)).toEqual(reference);
    // The comparison can fail: dropping the validation labels instead changes the figures.
    const validation = new Set(split.queries.validation);
    const keepOne = [...validation][0]!;
    const fewer = labels.restrictTo(
      labels.queryIds().filter((q) => !validation.has(q) || q === keepOne),
    );
    expect((await select(fewer)).grid).not.toEqual(reference.grid);

    // A split whose validation part holds a test query is refused before anything runs.
    const leaky = {
      ...split,
      queries: {
        ...split.queries,
        validation: [...split.queries.validation, split.queries.test[0]!],
      },
    };
    await expect(select(labels, leaky)).rejects.toThrow(ConfigError);
    expect(() =>
      checkSelectionSplit({ ...split, queries: { ...split.queries, validation: [] } }),
    ).toThrow(/no validation queries/);
    // Rankings of a test query are refused by the pick itself.
    const q = split.queries.test[0]!;
    expect(() =>
      pickHybridWeights({
        step: 1,
        grid: [{ pooled: 1, sparse: 0, bm25: 0 }],
        rankings: [new Map([[q, []]])],
        labels,
        split,
        candidates: new Map([[q, new Set<string>()]]),
        subtaskOf: new Map([[q, benchmark.subtasks[0]!]]),
        subtasks: benchmark.subtasks,
        ks: e.eval.ks,
        keepTop: 50,
      }),
    ).toThrow(/not a validation query/);
  }, 120_000);
});

describe('systems.hybrid in a run', () => {
  it('adds hybrid and hybrid-selected to results.json, compared with pooled, sparse fusion and BM25; the other systems unchanged', async () => {
    const plain = await runIn(await mkdtemp(join(root, 'plain-')), experiment());
    const withHybrid = await runIn(
      await mkdtemp(join(root, 'hybrid-')),
      experiment({ systems: { hybrid: HYBRID } }),
    );
    const seedDir = (o: { runDir: string }) => join(o.runDir, 'seeds', '42');
    const results = parseResults(
      JSON.parse(await readFile(join(seedDir(withHybrid), 'results.json'), 'utf8')),
      'results.json',
    );
    const names = results.systems.map((s) => s.name);
    expect(names.slice(-2)).toEqual(['hybrid', 'hybrid-selected']);
    expect(names.slice(0, -2)).toEqual(plain.results.systems.map((s) => s.name));
    for (const s of plain.results.systems) {
      expect(results.systems.find((x) => x.name === s.name)?.metrics, s.name).toEqual(s.metrics);
    }
    const hybrid = results.systems.find((s) => s.name === 'hybrid')!;
    expect(Object.keys(hybrid.comparisons ?? {}).sort()).toEqual([
      'bm25',
      'pooled',
      'sparse-fusion',
    ]);
    const meta = results.meta as unknown as {
      hybrid: {
        weights: Record<string, number>;
        selected: { selected: Record<string, number>; grid: unknown[]; step: number };
      };
    };
    expect(meta.hybrid.weights).toEqual({ pooled: 1 / 3, sparse: 1 / 3, bm25: 1 / 3 });
    expect(meta.hybrid.selected.step).toBe(0.5);
    expect(meta.hybrid.selected.grid).toHaveLength(6);
    const perQuery = await readFile(join(seedDir(withHybrid), 'per-query.jsonl'), 'utf8');
    expect(perQuery).toContain('"system":"hybrid-selected"');
    // Without the section: the plain run's per-query lines are the hybrid run's others.
    const plainLines = (await readFile(join(seedDir(plain), 'per-query.jsonl'), 'utf8')).trim();
    const otherLines = perQuery
      .trim()
      .split('\n')
      .filter((l) => !/"system":"hybrid(-selected)?"/.test(l));
    expect(otherLines.join('\n')).toBe(plainLines);
  }, 120_000);

  it('refuses a grid without a split, and a grid whose inverse is not an integer', () => {
    expect(() => experiment({ split: { policy: 'none' }, systems: { hybrid: HYBRID } })).toThrow(
      /split.policy is 'none'/,
    );
    expect(() => experiment({ systems: { hybrid: { ...HYBRID, grid: 0.3 } } })).toThrow(
      /1\/grid must be an integer/,
    );
    expect(() =>
      experiment({ systems: { hybrid: { weights: { pooled: 0, sparse: 0, bm25: 0 } } } }),
    ).toThrow(/must not all be 0/);
    expect(
      experiment({ split: { policy: 'none' }, systems: { hybrid: { weights: HYBRID.weights } } })
        .systems?.hybrid?.grid,
    ).toBeUndefined();
  });
});
