import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { tmpDir } from '@bfe/core/testing';
import { DataError, EmptyDatasetError, summarizeLoad } from '@bfe/core';
import { loadDataset } from './registry.js';
import { loadReportPath, saveLoadReport } from './report-file.js';

// Load problems are counted, refused or reported by name: never silent (issue 12).

const location = { dataDir: '', mirror: undefined };

async function documentTask(
  base: string,
  folder: string,
  files: Partial<Record<'corpus' | 'queries' | 'qrels' | 'candidates', string | Buffer>>,
): Promise<string> {
  const root = join(base, folder);
  await mkdir(root, { recursive: true });
  const all = {
    corpus: '{"id":"d1","text":"alpha"}\n{"id":"d2","text":"beta"}\n',
    queries: '{"id":"q1","text":"find alpha"}\n',
    qrels: 'q1\td1\t1\n',
    candidates: '{"scene_id":"q1","candidate_doc_ids":["d1","d2"]}\n',
    ...files,
  };
  await writeFile(join(root, 'corpus.jsonl'), all.corpus);
  await writeFile(join(root, 'queries.jsonl'), all.queries);
  await writeFile(join(root, 'qrels.tsv'), all.qrels);
  await writeFile(join(root, 'candidates.jsonl'), all.candidates);
  return root;
}

describe('load problems', () => {
  it('counts a malformed line and a duplicate memory id in the report summary', async () => {
    const root = await documentTask(tmpDir('bfe-load-'), 'base', {
      corpus:
        '{"id":"d1","text":"alpha"}\n{"id":"d2","text":"beta"}\n{"id": broken\n' +
        '{"id":"d1","text":"again"}\n',
    });
    const loaded = await loadDataset(`lmeb:${root}`, { location });
    const summary = summarizeLoad(loaded.report.toJSON());
    expect(summary.dropped).toBe(2);
    expect(summary.issues).toBe(1);
    expect(summary.reasons.dropped).toEqual({ 'invalid-record': 1, 'duplicate-memory-id': 1 });
    expect(loaded.benchmark.memories.map((m) => m.id)).toEqual(['d1', 'd2']);
  });

  it('refuses non-UTF-8 bytes with a DataError naming the file and line', async () => {
    const root = await documentTask(tmpDir('bfe-load-'), 'base', {
      corpus: Buffer.concat([
        Buffer.from('{"id":"d1","text":"alpha"}\n{"id":"d2","text":"caf'),
        Buffer.from([0xe9]),
        Buffer.from('"}\n'),
      ]),
    });
    const error = await loadDataset(`lmeb:${root}`, { location }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DataError);
    expect((error as DataError).message).toContain(join(root, 'corpus.jsonl'));
    expect((error as DataError).message).toContain('line 2');
  });

  it('an empty dataset is its own error, naming the files and what was dropped', async () => {
    const root = await documentTask(tmpDir('bfe-load-'), 'base', { qrels: 'q1\td9\t1\n' });
    const error = await loadDataset(`lmeb:${root}`, { location }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(EmptyDatasetError);
    const e = error as EmptyDatasetError;
    expect(e.code).toBe('DATASET_EMPTY');
    expect(e.message).toContain('no queries');
    expect(e.message).toContain('no-resolvable-evidence');
    expect(e.files).toContain(join(root, 'qrels.tsv'));
    const none = await documentTask(tmpDir('bfe-load-'), 'empty', { corpus: '' });
    await expect(loadDataset(`lmeb:${none}`, { location })).rejects.toThrow(/no memories/);
  });

  it('keys saved load reports by content hash: two folders called base do not collide', async () => {
    const dataDir = tmpDir('bfe-load-');
    const a = await documentTask(tmpDir('bfe-load-'), 'base', {});
    const b = await documentTask(tmpDir('bfe-load-'), 'base', {
      corpus: '{"id":"d1","text":"alpha"}\n{"id":"d2","text":"gamma"}\n',
    });
    const pa = await saveLoadReport(await loadDataset(`lmeb:${a}`, { location }), {
      dataDir,
      mirror: undefined,
    });
    const pb = await saveLoadReport(await loadDataset(`lmeb:${b}`, { location }), {
      dataDir,
      mirror: undefined,
    });
    expect(pa).not.toBe(pb);
    expect(pa).toMatch(/reports\/lmeb_base-[0-9a-f]{12}\.load-report\.json$/);
    const saved = JSON.parse(await readFile(pa, 'utf8')) as { benchmarkHash: string };
    expect(pa).toBe(loadReportPath(dataDir, 'lmeb:base', saved.benchmarkHash));
  });
});
