import { mkdir, mkdtemp, readFile, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { suiteTmpDir } from '@bfe/core/testing';
import { MANIFEST_FILE } from '../cache/key.js';
import { installTinyModel, runIn, tinyExperiment } from './testing/tiny-model.js';
import type { RunOutcome } from './run-experiment.js';

// The index stage is reproducible: built twice from cold caches (two cache folders), an HNSW
// index gives the same files byte for byte and the run the same results.json. A synthetic LMEB
// task of 300 memories (about 3,000 tokens of the tiny encoder) in three candidate sets, so
// each graph holds about a thousand tokens: enough for a parallel build to reorder its nodes.

const WORDS = ['hello', 'world', 'the', 'cat', 'sat', 'on', 'mat', 'mats', 'a', 'dog', '.'];
const SETS = 3;
const PER_SET = 100;

/** Writes the synthetic task (seeded, so the same bytes every time) into `dir`. */
async function writeTask(dir: string): Promise<void> {
  await mkdir(dir, { recursive: true });
  // A fixed linear congruential sequence (Numerical Recipes' constants): the same task every run.
  let state = 7;
  const below = (n: number): number => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return Math.floor((state / 2 ** 32) * n);
  };
  const text = (words: number): string =>
    Array.from({ length: words }, () => WORDS[below(WORDS.length)]).join(' ');
  const corpus: string[] = [];
  const queries: string[] = [];
  const candidates: string[] = [];
  const qrels = ['query-id\tcorpus-id\tscore'];
  for (let s = 0; s < SETS; s++) {
    const ids = Array.from({ length: PER_SET }, (_, i) => `m${s}-${i}`);
    for (const id of ids) corpus.push(JSON.stringify({ id, title: '', text: text(10) }));
    for (let q = 0; q < 2; q++) {
      const id = `q${s}-${q}`;
      queries.push(JSON.stringify({ id, text: text(3) }));
      candidates.push(JSON.stringify({ scene_id: id, candidate_doc_ids: ids }));
      qrels.push(`${id}\t${ids[below(PER_SET)]}\t1`);
    }
  }
  const lines = (xs: string[]): string => `${xs.join('\n')}\n`;
  await writeFile(join(dir, 'corpus.jsonl'), lines(corpus));
  await writeFile(join(dir, 'queries.jsonl'), lines(queries));
  await writeFile(join(dir, 'candidates.jsonl'), lines(candidates));
  await writeFile(join(dir, 'qrels.tsv'), lines(qrels));
}

const suiteRoot = suiteTmpDir('bfe-index-determinism-');
let root = '';
let modelDir = '';
let task = '';
beforeAll(async () => {
  root = suiteRoot();
  modelDir = await installTinyModel(root);
  task = join(root, 'task');
  await writeTask(task);
});

const experiment = (index: Record<string, unknown>) =>
  tinyExperiment(modelDir, { dataset: { name: `lmeb:${task}` }, index });

/** The index artifact's files (every one but the manifest, whose timings vary), by name. */
async function indexFiles(dir: string, run: RunOutcome): Promise<Map<string, Buffer>> {
  const key = run.stages.find((s) => s.name === 'index')!.key;
  const artifact = join(dir, 'cache', 'objects', 'index', key);
  const names = (await readdir(artifact, { recursive: true, withFileTypes: true }))
    .filter((e) => e.isFile() && e.name !== MANIFEST_FILE)
    .map((e) => join(e.parentPath, e.name).slice(artifact.length + 1))
    .sort();
  const out = new Map<string, Buffer>();
  for (const name of names) out.set(name, await readFile(join(artifact, name)));
  return out;
}

describe('a reproducible index stage', () => {
  it.each([
    ['fp32', 'f32'],
    ['sq8', 'i8'],
  ])(
    'hnsw over %s codes (%s graphs), built from two cold caches: the same index bytes and results.json',
    async (codec) => {
      const index = { backend: 'hnsw', codec };
      const a = await mkdtemp(join(root, `a-${codec}-`));
      const b = await mkdtemp(join(root, `b-${codec}-`));
      const first = await runIn(a, experiment(index));
      const second = await runIn(b, experiment(index));
      for (const r of [first, second]) {
        expect(r.stages.map((s) => [s.name, s.cached])).toEqual([
          ['dataset', false],
          ['encode', false],
          ['index', false],
          ['score', false],
        ]);
      }
      const key = (r: RunOutcome): string => r.stages.find((s) => s.name === 'index')!.key;
      expect(key(second)).toBe(key(first));
      const meta = first.results.meta as unknown as { index: Record<string, unknown> };
      expect(meta.index['graphs']).toMatchObject({ count: SETS });
      expect((meta.index['graphs'] as { tokens: number }).tokens).toBeGreaterThan(2000);
      expect(meta.index).not.toHaveProperty('deterministic');

      const filesA = await indexFiles(a, first);
      const filesB = await indexFiles(b, second);
      expect([...filesA.keys()]).toEqual([
        'codec.json',
        'codes.bin',
        'hnsw/layout.json',
        ...Array.from({ length: SETS }, (_, i) => `hnsw/set-${i}.usearch`),
      ]);
      expect([...filesB.keys()]).toEqual([...filesA.keys()]);
      for (const [name, bytes] of filesA) {
        expect(filesB.get(name)!.equals(bytes), `${name} differs between the builds`).toBe(true);
      }
      const results = (r: RunOutcome): Promise<string> =>
        readFile(join(r.runDir, 'results.json'), 'utf8');
      expect(await results(second)).toBe(await results(first));
    },
    120_000,
  );

  it('ivf over fp32 codes, built from two cold caches: the same ivf.bin and results.json', async () => {
    const index = { backend: 'ivf', codec: 'fp32', centroids: 32, nprobe: 4, residualBits: 2 };
    const a = await mkdtemp(join(root, 'a-ivf-'));
    const b = await mkdtemp(join(root, 'b-ivf-'));
    const first = await runIn(a, experiment(index));
    const second = await runIn(b, experiment(index));
    const filesA = await indexFiles(a, first);
    const filesB = await indexFiles(b, second);
    expect([...filesA.keys()]).toEqual(['codec.json', 'codes.bin', 'ivf.bin']);
    for (const [name, bytes] of filesA) {
      expect(filesB.get(name)!.equals(bytes), `${name} differs between the builds`).toBe(true);
    }
    const results = (r: RunOutcome): Promise<string> =>
      readFile(join(r.runDir, 'results.json'), 'utf8');
    expect(await results(second)).toBe(await results(first));
  }, 120_000);

  it('buildThreads > 1 is another artifact, marked deterministic: false; 1 written out keeps the key', async () => {
    const dir = await mkdtemp(join(root, 'threads-'));
    const plain = await runIn(dir, experiment({ backend: 'hnsw' }));
    const one = await runIn(dir, experiment({ backend: 'hnsw', buildThreads: 1 }));
    const four = await runIn(dir, experiment({ backend: 'hnsw', buildThreads: 4 }));
    const stage = (r: RunOutcome) => r.stages.find((s) => s.name === 'index')!;
    expect(stage(one).key).toBe(stage(plain).key);
    expect(stage(one).cached).toBe(true);
    expect(stage(four).key).not.toBe(stage(plain).key);
    expect(stage(four).cached).toBe(false);
    expect((four.results.meta as unknown as { index: unknown }).index).toMatchObject({
      buildThreads: 4,
      deterministic: false,
    });
    expect((one.results.meta as unknown as { index: object }).index).not.toHaveProperty(
      'deterministic',
    );
    const receipt = (r: RunOutcome) =>
      readFile(join(r.runDir, 'receipt.json'), 'utf8').then(
        (t) => JSON.parse(t) as Record<string, unknown>,
      );
    expect((await receipt(four))['deterministic']).toBe(false);
    expect(await receipt(plain)).not.toHaveProperty('deterministic');
  }, 120_000);
});
