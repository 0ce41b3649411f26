import { mkdtemp, readFile, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { suiteTmpDir } from '@bfe/core/testing';
import { installTinyModel, runIn, tinyExperiment } from './testing/tiny-model.js';
import type { Experiment } from './config.js';

// The experiment's `index` section, in process on the tiny encoder graph (dim 4) and the LMEB
// fixture: the default path unchanged, the index stage's artifact and cache, meta.index.

const suiteRoot = suiteTmpDir('bfe-index-stage-');
let root = '';
let modelDir = '';
beforeAll(async () => {
  root = suiteRoot();
  modelDir = await installTinyModel(root);
});

const experiment = (raw: Record<string, unknown> = {}): Experiment => tinyExperiment(modelDir, raw);
const run = runIn;

const text = (dir: string, file: string): Promise<string> => readFile(join(dir, file), 'utf8');

async function resultsWithoutIndex(dir: string): Promise<unknown> {
  const r = JSON.parse(await text(dir, 'results.json')) as {
    runs: Array<{ results: { meta: Record<string, unknown> } }>;
    [key: string]: unknown;
  };
  for (const run of r.runs) delete run.results.meta.index;
  return r;
}

describe('the index section', () => {
  it('exact fp32 written out: no index stage, the same per-query bytes and results as without', async () => {
    const dir = await mkdtemp(join(root, 'exact-'));
    const plain = await run(dir, experiment());
    const written = await run(dir, experiment({ index: { backend: 'exact', codec: 'fp32' } }));
    expect(plain.stages.map((s) => s.name)).toEqual(['dataset', 'encode', 'score']);
    expect(written.stages.map((s) => s.name)).toEqual(['dataset', 'encode', 'score']);
    expect(plain.results.meta).not.toHaveProperty('index');
    expect(written.results.meta).toMatchObject({
      index: { backend: 'exact', codec: 'fp32', params: {}, bytesPerToken: 16 },
    });
    for (const file of ['per-query.jsonl', 'k-sweep.json']) {
      expect(await text(written.runDir, file)).toBe(await text(plain.runDir, file));
    }
    expect(await resultsWithoutIndex(written.runDir)).toEqual(
      await resultsWithoutIndex(plain.runDir),
    );
  });

  it('ivf with every cluster probed and every token proposed ranks as the exact search', async () => {
    const dir = await mkdtemp(join(root, 'ivf-'));
    const plain = await run(dir, experiment());
    const section = { backend: 'ivf', codec: 'fp32', centroids: 4, nprobe: 4, margin: 1024 };
    const ivf = await run(dir, experiment({ index: section }));
    expect(ivf.stages.map((s) => s.name)).toEqual(['dataset', 'encode', 'index', 'score']);
    expect(await text(ivf.runDir, 'per-query.jsonl')).toBe(
      await text(plain.runDir, 'per-query.jsonl'),
    );
    const meta = ivf.results.meta as unknown as { index: Record<string, unknown> };
    expect(meta.index).toMatchObject({
      backend: 'ivf',
      codec: 'fp32',
      params: { centroids: 4, residualBits: 4, nprobe: 4, margin: 1024 },
    });
    const indexStage = ivf.stages.find((s) => s.name === 'index')!;
    const artifactDir = join(dir, 'cache', 'objects', 'index', indexStage.key);
    expect(await readdir(artifactDir)).toEqual(expect.arrayContaining(['ivf.bin', 'codes.bin']));
    // Another nprobe searches the same index: the index stage is a cache hit.
    const again = await run(dir, experiment({ index: { ...section, nprobe: 2 } }));
    expect(again.stages.find((s) => s.name === 'index')!.key).toBe(indexStage.key);
  });

  it('hnsw over fp32 codes on a tiny bank ranks as the exact search; sq8 writes its codes', async () => {
    const dir = await mkdtemp(join(root, 'hnsw-'));
    const plain = await run(dir, experiment());
    const hnsw = await run(dir, experiment({ index: { backend: 'hnsw', codec: 'fp32' } }));
    expect(hnsw.stages.map((s) => s.name)).toEqual(['dataset', 'encode', 'index', 'score']);
    expect(await text(hnsw.runDir, 'per-query.jsonl')).toBe(
      await text(plain.runDir, 'per-query.jsonl'),
    );
    const meta = hnsw.results.meta as unknown as { index: Record<string, unknown> };
    expect(meta.index).toMatchObject({
      backend: 'hnsw',
      codec: 'fp32',
      params: { M: 16, efConstruction: 128, efSearch: 128 },
      bytesPerToken: 16,
    });
    const indexStage = hnsw.stages.find((s) => s.name === 'index')!;
    const artifactDir = join(dir, 'cache', 'objects', 'index', indexStage.key);
    const files = await readdir(artifactDir, { recursive: true });
    expect(files).toEqual(expect.arrayContaining(['codec.json', 'codes.bin']));
    // One graph per distinct candidate set of the queries, recorded in hnsw/layout.json.
    const layout = JSON.parse(await text(join(artifactDir, 'hnsw'), 'layout.json')) as {
      candidateSets: number[][];
    };
    // The fixture's queries rank among memories {0,1}, {0..5}, {1,2} and {3,4} (overlapping).
    expect(layout.candidateSets).toEqual([
      [0, 1],
      [0, 1, 2, 3, 4, 5],
      [1, 2],
      [3, 4],
    ]);
    const graphs = files.filter((f) => String(f).endsWith('.usearch')).map(String);
    expect(graphs.sort()).toEqual([0, 1, 2, 3].map((i) => join('hnsw', `set-${i}.usearch`)));
    expect(meta.index['graphs']).toEqual({ count: 4, tokens: 23 + 56 + 17 + 18 });
    // efSearch changes the search, not the graph: the index stage is a hit, the score stage not.
    const ef = await run(
      dir,
      experiment({ index: { backend: 'hnsw', codec: 'fp32', efSearch: 64 } }),
    );
    expect(ef.stages.find((s) => s.name === 'index')!.cached).toBe(true);
    expect(ef.stages.find((s) => s.name === 'score')!.cached).toBe(false);

    const sq8 = await run(dir, experiment({ index: { codec: 'sq8' } }));
    expect(sq8.stages.find((s) => s.name === 'index')!.cached).toBe(false);
    expect(
      (sq8.results.meta as unknown as { index: { bytesPerToken: number } }).index.bytesPerToken,
    ).toBe(4);
    const again = await run(dir, experiment({ index: { codec: 'sq8' } }));
    expect(again.stages.every((s) => s.cached)).toBe(true);
  });

  it('graph: i8 over fp32 codes builds another graph, rescored exactly; overFetch and margin change only the search', async () => {
    const dir = await mkdtemp(join(root, 'graph-'));
    const plain = await run(dir, experiment());
    const f32 = await run(dir, experiment({ index: { backend: 'hnsw' } }));
    const written = await run(dir, experiment({ index: { backend: 'hnsw', graph: 'f32' } }));
    const i8 = await run(dir, experiment({ index: { backend: 'hnsw', graph: 'i8' } }));
    const key = (r: typeof f32): string => r.stages.find((s) => s.name === 'index')!.key;
    // The codec's own kind written out is the same graph: the same key, a cache hit.
    expect(key(written)).toBe(key(f32));
    expect(written.stages.find((s) => s.name === 'index')!.cached).toBe(true);
    expect(key(i8)).not.toBe(key(f32));
    const graphFile = join(dir, 'cache', 'objects', 'index', key(i8), 'hnsw');
    const files = (await readdir(graphFile)).filter((f) => f.endsWith('.usearch'));
    expect(files.length).toBeGreaterThan(0);
    // usearch's scalar kind code 23 (i8) at byte 14 of the header after the vectors.
    const bytes = await readFile(join(graphFile, files[0]!));
    expect(bytes[8 + bytes.readUInt32LE(0) * bytes.readUInt32LE(4) + 14]).toBe(23);
    // A tiny bank: every token is proposed, so the i8 graph ranks exactly as exact search.
    expect(await text(i8.runDir, 'per-query.jsonl')).toBe(
      await text(plain.runDir, 'per-query.jsonl'),
    );
    expect((i8.results.meta as unknown as { index: unknown }).index).toMatchObject({
      backend: 'hnsw',
      codec: 'fp32',
      graph: 'i8',
    });
    const over = await run(
      dir,
      experiment({ index: { backend: 'hnsw', graph: 'i8', overFetch: 2 } }),
    );
    expect(over.stages.find((s) => s.name === 'index')!.cached).toBe(true);
    expect(over.stages.find((s) => s.name === 'score')!.cached).toBe(false);
    expect((over.results.meta as unknown as { index: unknown }).index).toMatchObject({
      params: { overFetch: 2 },
      graph: 'i8',
    });
    // The margin, like over-fetch, changes only the search (and the score stage's key).
    const margin = await run(
      dir,
      experiment({ index: { backend: 'hnsw', graph: 'i8', margin: 4 } }),
    );
    expect(margin.stages.find((s) => s.name === 'index')!.cached).toBe(true);
    expect(margin.stages.find((s) => s.name === 'score')!.cached).toBe(false);
    expect((margin.results.meta as unknown as { index: unknown }).index).toMatchObject({
      params: { margin: 4 },
      graph: 'i8',
    });
    expect(await text(margin.runDir, 'per-query.jsonl')).toBe(
      await text(plain.runDir, 'per-query.jsonl'),
    );
  });
});
