import { spawnSync } from 'node:child_process';
import { mkdtemp, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { ConfigError } from '@bfe/core';
import { suiteTmpDir } from '@bfe/core/testing';
import { readPerQueryJsonl, transitionsFromPerQuery } from '@bfe/eval';
import { parseExperiment, type Experiment } from '../config.js';
import { installTinyModel, repoRoot, runIn } from '../testing/tiny-model.js';

// A cross-fitted run (split.folds) end to end on the tiny encoder and the shared-bank LMEB
// fixture (every query its own unit): every query tested once, each fold's validation part the
// previous fold's test part, and pooled figures that are the folds' figures pooled.

const sharedTask = join(repoRoot, 'tests/fixtures/run/lmeb-shared');
const suiteRoot = suiteTmpDir('bfe-crossfit-');
let root = '';
let modelDir = '';
beforeAll(async () => {
  root = suiteRoot();
  modelDir = await installTinyModel(root);
});

function experiment(raw: Record<string, unknown> = {}): Experiment {
  return parseExperiment({
    name: 'tiny-crossfit',
    dataset: { name: `lmeb:${sharedTask}` },
    split: { policy: 'query-disjoint-shared-bank', folds: 3 },
    model: { name: 'tiny', dir: modelDir },
    scorer: { k: 4, kSweep: [] },
    adapter: { enabled: true, rank: 2, epochs: 1, batchSize: 4, lr: 0.01 },
    eval: { resamples: 50 },
    ...raw,
  });
}

interface PerFold {
  fold: number;
  testUnits: string[];
  validationUnits: string[];
  nTestQueries: number;
  metrics: Record<string, Record<string, number>>;
  adapter?: { selectedEpoch: number; selectedAlpha: number };
}
interface SystemJson {
  name: string;
  comparisons?: Record<string, unknown>;
  metrics: Record<string, number>;
  nQueries: number;
  subtasks: Record<string, { metrics: Record<string, number>; nQueries: number }>;
}
interface ResultsJson {
  systems: SystemJson[];
  meta: { crossFit: { folds: number; perFold: PerFold[] }; splitPolicy: string };
}

describe('cross-fitting', () => {
  it('tests every query once and pools the folds', async () => {
    const dir = await mkdtemp(join(root, 'run-'));
    const outcome = await runIn(dir, experiment());
    const names = outcome.stages.map((s) => s.name);
    for (const f of [0, 1, 2]) {
      expect(names).toContain(`split@42/fold${f}`);
      expect(names).toContain(`adapt@42/fold${f}`);
      expect(names).toContain(`score@42/fold${f}`);
    }
    expect(names).toContain('crossfit@42');

    const queries = (await readFile(join(sharedTask, 'queries.jsonl'), 'utf8'))
      .split('\n')
      .filter((l) => l.trim() !== '')
      .map((l) => (JSON.parse(l) as { id: string }).id)
      .sort();
    const lines = await readPerQueryJsonl(join(outcome.runDir, 'per-query.jsonl'));
    const pooledIds = lines.filter((l) => l.system === 'pooled').map((l) => l.queryId);
    expect([...pooledIds].sort()).toEqual(queries);

    const results = outcome.summary.runs[0]!.results as unknown as ResultsJson;
    const perFold = results.meta.crossFit.perFold;
    expect(perFold.map((p) => p.fold)).toEqual([0, 1, 2]);
    expect(perFold.flatMap((p) => p.testUnits).sort()).toEqual(queries);
    perFold.forEach((p, f) => {
      // The predeclared rule: validation is the previous fold's test part, never its own.
      expect(p.validationUnits).toEqual(perFold[(f + 2) % 3]!.testUnits);
      expect(p.validationUnits.some((u) => p.testUnits.includes(u))).toBe(false);
      expect(p.adapter).toBeDefined();
    });
    expect(results.meta.splitPolicy).toBe('query-disjoint-shared-bank');
    // Transitions recounted over every pooled query, not one fold's.
    const transitions = outcome.summary.runs[0]!.results.transitions ?? [];
    expect(transitions.map((t) => `${t.from}>${t.to}`)).toEqual([
      'pooled>sparse-fusion',
      'pooled>adapted',
      'sparse-fusion>adapted',
    ]);
    for (const t of transitions) {
      expect(t.overall.nQueries).toBe(results.systems[0]!.nQueries);
      expect(t).toEqual(transitionsFromPerQuery(lines, t.from, t.to));
    }
    const report = await readFile(join(outcome.runDir, 'report.md'), 'utf8');
    expect(report).toContain('**cross-fitting:** cross-fitted: 3 folds of queries');
    expect(report).toContain('## Folds');
    expect(outcome.terminal).toContain('every query tested once');

    // `bfe eval --results` recomputes every pooled comparison (with pooled and with sparse fusion,
    // as beside an adapter) from the pooled per-query file alone.
    const evalRun = spawnSync(
      process.execPath,
      [
        '--conditions=@bfe/source',
        '--import',
        'tsx',
        join(repoRoot, 'apps/runner/src/bin.ts'),
        'eval',
        '--per-query',
        join(outcome.runDir, 'per-query.jsonl'),
        '--results',
        join(outcome.runDir, 'seeds', '42', 'results.json'),
      ],
      { cwd: repoRoot, encoding: 'utf8' },
    );
    expect(evalRun.stderr).toBe('');
    expect(evalRun.status).toBe(0);
    expect(evalRun.stdout).toContain('every figure equals');
    expect(
      Object.keys(results.systems.find((s) => s.name === 'adapted')!.comparisons ?? {}),
    ).toEqual(['pooled', 'sparse-fusion']);

    // One subtask: the pooled headline is the folds' headlines weighted by their queries.
    expect(outcome.results.subtasks).toHaveLength(1);
    for (const system of results.systems) {
      let n = 0;
      let recall = 0;
      for (const p of perFold) {
        const m = p.metrics[system.name]!;
        n += m.nQueries!;
        recall += m.nQueries! * m['recall@10']!;
      }
      expect(system.nQueries).toBe(n);
      expect(system.metrics['recall@10']).toBeCloseTo(recall / n, 12);
    }
  }, 120_000);

  it('refuses ratios, a k sweep, per-seed splits and a non-test part beside folds', () => {
    const refused = (split: Record<string, unknown>, scorer?: Record<string, unknown>) =>
      expect(() =>
        experiment({
          split: { policy: 'connected-bank', folds: 5, ...split },
          ...(scorer === undefined ? {} : { scorer: { k: 4, ...scorer } }),
        }),
      ).toThrow(ConfigError);
    refused({ ratios: [0.6, 0.2, 0.2] });
    refused({ evaluate: 'validation' });
    refused({ seed: 'per-seed' });
    refused({}, { kSweep: [2, 4] });
    expect(() => experiment({ split: { policy: 'connected-bank', folds: 2 } })).toThrow(
      ConfigError,
    );
  });
});
