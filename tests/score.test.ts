import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { suiteTmpDir } from '@bfe/core/testing';
import { bankContentHash, type BankManifest } from '@bfe/encoder';
import { readPerQueryJsonl, resultsSchema } from '@bfe/eval';
import type { Results } from '@bfe/eval';
import { repoRoot, runBfe } from './helpers.ts';
import { writeTinyModelSource } from '@bfe/encoder/testing';

const SYSTEMS = [
  'pooled',
  'maxsim',
  'bm25',
  'sparse-fusion',
  'zero-floor',
  'no-fusion',
  'maxsim-fusion',
];
const documentTask = `lmeb:${join(repoRoot, 'packages/datasets/fixtures/lmeb-document')}`;
const dialogueTask = `lmeb:${join(repoRoot, 'packages/datasets/fixtures/lmeb-dialogue')}`;

// One tiny model and one bank for the whole file: encoding is the slow part, scoring is not.
const suiteRoot = suiteTmpDir('bfe-score-');
let root: string;
let env: Record<string, string>;
let bank: string;

beforeAll(async () => {
  root = suiteRoot();
  const modelDir = join(root, 'tiny-model');
  writeTinyModelSource(modelDir);
  env = { BFE_MODEL_DIR: join(root, 'models'), BFE_DATA_DIR: join(root, 'data') };
  const imported = await runBfe(
    ['model', 'fetch', 'tiny', '--model-dir', modelDir, '--pooling', 'mean', '--max-length', '16'],
    env,
  );
  expect(imported.code, imported.stderr).toBe(0);
  bank = join(root, 'bank');
  const encoded = await runBfe(
    ['encode', '--dataset', documentTask, '--model', 'tiny', '--out', bank, '--quiet'],
    env,
  );
  expect(encoded.code, encoded.stderr).toBe(0);
}, 120_000);

function readResults(dir: string): Results {
  return resultsSchema.parse(JSON.parse(readFileSync(join(dir, 'results.json'), 'utf8')));
}

describe('bfe score and bfe eval on a tiny LMEB task with the tiny ONNX model', () => {
  it('writes a valid results.json, per-query.jsonl for every system and k-sweep.json', async () => {
    const out = join(root, 'run-all');
    const r = await runBfe(
      ['score', '--bank', bank, '--dataset', documentTask, '--out', out, '--quiet', '--json'],
      env,
    );
    expect(r.code, r.stderr).toBe(0);
    const results = readResults(out);
    expect(results.dataset).toBe('lmeb:lmeb-document');
    expect(results.split).toBe('all');
    // The default cut-offs, memory budgets K = 4, 8, 10, 16 included.
    expect(results.ks).toEqual([1, 4, 5, 8, 10, 16, 25, 50]);
    expect(results.systems.map((s) => s.name)).toEqual(SYSTEMS);
    expect(results.meta).toMatchObject({
      k: 64,
      alpha: 0.5,
      model: { name: 'tiny' },
      // An lmeb: folder declares no language: no stop words, no stemming; IDF per candidate set.
      bm25: { k1: 1.2, b: 0.75, k: 1, language: 'none', stopWords: 'none', stemming: 'none' },
      // Every qrel of the fixture is grade 1: binary NDCG.
      gains: 'binary',
    });
    expect((results.meta?.bm25 as { idf: string }).idf).toMatch(/^candidates/);
    const manifest = JSON.parse(readFileSync(join(bank, 'bank.json'), 'utf8')) as BankManifest;
    // The bank's content identity: bank.json without its timing fields.
    expect((results.meta?.bank as { contentHash: string }).contentHash).toBe(
      bankContentHash(manifest),
    );
    expect(bankContentHash({ ...manifest, createdAt: 'another day', seconds: 99 })).toBe(
      bankContentHash(manifest),
    );
    for (const s of results.systems) {
      expect(s.nQueries).toBe(results.systems[0]?.nQueries);
      if (s.name !== 'pooled') expect(s.comparisons?.pooled?.['ndcg@10']).toBeDefined();
    }
    // stdout --json carries the same results, and per-subtask comparisons for the table.
    const printed = JSON.parse(r.stdout) as { results: unknown; subtaskComparisons: object };
    expect(printed.results).toEqual(results);
    writeFileSync(
      join(out, 'subtask-comparisons.json'),
      JSON.stringify(printed.subtaskComparisons),
    );

    const lines = await readPerQueryJsonl(join(out, 'per-query.jsonl'));
    const perSystem = results.systems[0]!.nQueries + results.systems[0]!.dropped.noRelevant;
    expect(lines.length).toBe(SYSTEMS.length * perSystem);
    expect([...new Set(lines.map((l) => l.system))]).toEqual(SYSTEMS);
    expect(lines.every((l) => l.grades === undefined)).toBe(true);

    const sweep = JSON.parse(readFileSync(join(out, 'k-sweep.json'), 'utf8')) as {
      mainK: number;
      points: Array<{ k: number; systems: Array<{ name: string; metrics: object }> }>;
    };
    expect(sweep.mainK).toBe(64);
    expect(sweep.points.map((p) => p.k)).toEqual([16, 32, 64, 128]);
    const at64 = sweep.points.find((p) => p.k === 64)!.systems[0]!;
    expect(at64.name).toBe('sparse-fusion');
    expect(at64.metrics).toEqual(results.systems.find((s) => s.name === 'sparse-fusion')!.metrics);
  });

  it('bfe eval recomputes every figure from per-query.jsonl alone', async () => {
    const out = join(root, 'run-all');
    const results = readResults(out);
    const alone = await runBfe(
      ['eval', '--per-query', join(out, 'per-query.jsonl'), '--json'],
      env,
    );
    expect(alone.code, alone.stderr).toBe(0);
    const printed = JSON.parse(alone.stdout) as { results: unknown; subtaskComparisons: object };
    const recomputed = resultsSchema.parse(printed.results);
    expect(recomputed.systems).toEqual(results.systems);
    expect(recomputed.meta?.gains).toBe('binary');
    expect(printed.subtaskComparisons).toEqual(
      JSON.parse(readFileSync(join(out, 'subtask-comparisons.json'), 'utf8')),
    );
    expect(Object.keys(printed.subtaskComparisons)).toEqual(results.subtasks);

    const checked = await runBfe(
      ['eval', '--per-query', join(out, 'per-query.jsonl'), '--results', join(out, 'results.json')],
      env,
    );
    expect(checked.code, checked.stderr).toBe(0);
    expect(checked.stdout).toContain('every figure equals');
    for (const name of SYSTEMS) expect(checked.stdout).toContain(name);
    expect(checked.stdout).toContain('at memory budget K');
    expect(checked.stdout).toMatch(/Recall@4 +Recall@8 +Recall@10 +Recall@16 +NDCG@4/);
  });

  it('keeps LMEB grades above 1: graded NDCG, the same recall, recorded and recomputable', async () => {
    // The document task with one qrel raised to grade 3; its own bank, since the benchmark
    // hash covers the source files.
    const task = join(root, 'graded', 'lmeb-document');
    mkdirSync(task, { recursive: true });
    const fixture = join(repoRoot, 'packages/datasets/fixtures/lmeb-document');
    for (const f of ['candidates.jsonl', 'corpus.jsonl', 'queries.jsonl']) {
      copyFileSync(join(fixture, f), join(task, f));
    }
    const qrels = readFileSync(join(fixture, 'qrels.tsv'), 'utf8');
    expect(qrels).toContain('4\tp5\t1\n');
    writeFileSync(join(task, 'qrels.tsv'), qrels.replace('4\tp5\t1\n', '4\tp5\t3\n'));
    const gradedBank = join(root, 'graded-bank');
    const encoded = await runBfe(
      ['encode', '--dataset', `lmeb:${task}`, '--model', 'tiny', '--out', gradedBank, '--quiet'],
      env,
    );
    expect(encoded.code, encoded.stderr).toBe(0);
    const out = join(root, 'run-graded');
    const r = await runBfe(
      ['score', '--bank', gradedBank, '--dataset', `lmeb:${task}`, '--out', out],
      env,
    );
    expect(r.code, r.stderr).toBe(0);
    const graded = readResults(out);
    const binary = readResults(join(root, 'run-all'));
    expect(graded.meta?.gains).toBe('graded');
    expect(r.stdout).toContain('NDCG with graded gains (gain = grade)');
    const lines = await readPerQueryJsonl(join(out, 'per-query.jsonl'));
    const withGrades = lines.filter((l) => l.grades !== undefined);
    expect(withGrades.length).toBe(SYSTEMS.length);
    expect(withGrades.every((l) => l.queryId === '4' && l.grades?.join() === '1,3')).toBe(true);
    // Query 4's two candidates are both relevant (p4 grade 1, p5 grade 3): binary NDCG@1 is 1
    // either way; graded NDCG@1 is 1 with p5 first and 1/3 with p4 first. Recall never moves.
    for (const s of graded.systems) {
      const b = binary.systems.find((x) => x.name === s.name)!;
      for (const k of graded.ks) expect(s.metrics[`recall@${k}`]).toBe(b.metrics[`recall@${k}`]);
      const first = withGrades.find((l) => l.system === s.name)?.ranked[0];
      expect(['p4', 'p5']).toContain(first);
      const changed = s.metrics['ndcg@1'] !== b.metrics['ndcg@1'];
      expect(changed, `${s.name} ranks ${first} first`).toBe(first === 'p4');
    }
    const checked = await runBfe(
      ['eval', '--per-query', join(out, 'per-query.jsonl'), '--results', join(out, 'results.json')],
      env,
    );
    expect(checked.code, checked.stderr).toBe(0);
    expect(checked.stdout).toContain('every figure equals');
  });

  it('bfe eval refuses a per-query file that does not reproduce the results', async () => {
    const out = join(root, 'run-all');
    const lines = readFileSync(join(out, 'per-query.jsonl'), 'utf8').trim().split('\n');
    // Reverse the first ranking whose first and last ids differ in relevance (so the reversal
    // must change its figures).
    const at = lines.findIndex((l) => {
      const p = JSON.parse(l) as { ranked: string[]; relevant: string[] };
      const relevant = (id: string | undefined) => p.relevant.includes(id ?? '');
      return p.ranked.length > 1 && relevant(p.ranked[0]) !== relevant(p.ranked.at(-1));
    });
    expect(at).toBeGreaterThanOrEqual(0);
    const edited = JSON.parse(lines[at]!) as { ranked: string[] };
    edited.ranked.reverse();
    lines[at] = JSON.stringify(edited);
    const file = join(root, 'edited.jsonl');
    writeFileSync(file, `${lines.join('\n')}\n`);
    const r = await runBfe(
      ['eval', '--per-query', file, '--results', join(out, 'results.json')],
      env,
    );
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('DATA_INVALID');
    expect(r.stderr).toContain('does not reproduce');
  });

  it('scores one part of a split file', async () => {
    const splitFile = join(root, 'split.json');
    const split = await runBfe(
      [
        'data',
        'split',
        documentTask,
        '--policy',
        'query-disjoint-shared-bank',
        '--ratios',
        '1,1,2',
        '--out',
        splitFile,
      ],
      env,
    );
    expect(split.code, split.stderr).toBe(0);
    const testIds = (JSON.parse(readFileSync(splitFile, 'utf8')) as { queries: { test: string[] } })
      .queries.test;
    const out = join(root, 'run-test');
    const r = await runBfe(
      ['score', '--bank', bank, '--dataset', documentTask, '--split', splitFile, '--out', out],
      env,
    );
    expect(r.code, r.stderr).toBe(0);
    const results = readResults(out);
    expect(results.split).toBe('test');
    expect(results.meta).toMatchObject({ diagnosticOnly: true, queries: testIds.length });
    const lines = await readPerQueryJsonl(join(out, 'per-query.jsonl'));
    expect(new Set(lines.map((l) => l.queryId))).toEqual(new Set(testIds));
  });

  it('refuses a bank encoded from another dataset, naming both', async () => {
    const r = await runBfe(['score', '--bank', bank, '--dataset', dialogueTask], env);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('DATA_INVALID');
    expect(r.stderr).toContain("encoded from 'lmeb:lmeb-document'");
    expect(r.stderr).toContain('benchmark hash');
    // Other loader options make another benchmark too.
    const options = await runBfe(
      ['score', '--bank', bank, '--dataset', documentTask, '--set', 'missingScene=drop'],
      env,
    );
    expect(options.code).toBe(2);
    expect(options.stderr).toContain('not the same memories and queries');
  });

  it('takes BM25’s language and IDF from --bm25-language and --bm25-idf, and records them', async () => {
    const out = join(root, 'run-bm25');
    const flags = ['--bm25-language', 'english', '--bm25-idf', 'corpus'];
    const r = await runBfe(
      ['score', '--bank', bank, '--dataset', documentTask, '--out', out, '--quiet', ...flags],
      env,
    );
    expect(r.code, r.stderr).toBe(0);
    const bm25 = readResults(out).meta?.bm25 as Record<string, string>;
    expect(bm25).toMatchObject({ language: 'english', stemming: 'Porter2 (wink-nlp-utils@2.1.0)' });
    expect(bm25.idf).toMatch(/^corpus/);
    const bad = await runBfe(
      ['score', '--bank', bank, '--dataset', documentTask, '--bm25-idf', 'global'],
      env,
    );
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('bm25Idf');
  });

  it('refuses cut-offs without the headline k = 10', async () => {
    const r = await runBfe(
      ['score', '--bank', bank, '--dataset', documentTask, '--ks', '1,5'],
      env,
    );
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('CONFIG_INVALID');
    expect(r.stderr).toContain('k = 10');
  });
});
