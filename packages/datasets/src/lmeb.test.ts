import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { tmpDir } from '@bfe/core/testing';
import {
  ConfigError,
  DataMissingError,
  fileSha256,
  memorySchema,
  querySchema,
  type LoadedDataset,
} from '@bfe/core';
import { lmebOptionsSchema, loadLmebFolder } from './lmeb.js';

const fixtures = fileURLToPath(new URL('../fixtures/', import.meta.url));
const dialogueDir = join(fixtures, 'lmeb-dialogue');
const documentDir = join(fixtures, 'lmeb-document');

// Temporary task folders, removed after each test; a file name may not escape its folder.
async function tmpTask(files: Record<string, string>): Promise<string> {
  const base = tmpDir('bfe-lmeb-');
  const root = join(base, 'Task');
  await mkdir(root);
  for (const [name, text] of Object.entries(files)) {
    const path = resolve(root, name);
    if (!path.startsWith(root + sep)) throw new Error(`tmpTask: ${name} is outside ${root}`);
    await mkdir(dirname(path), { recursive: true });
    await writeFile(path, text);
  }
  return root;
}

/** Connected components of the split graph: a query joins the banks of its candidates. */
function components(data: LoadedDataset): string[][] {
  const parent = new Map<string, string>();
  const find = (x: string): string => {
    let r = x;
    while (parent.get(r) !== r) r = parent.get(r) ?? r;
    parent.set(x, r);
    return r;
  };
  const bankOf = new Map(data.benchmark.memories.map((m) => [m.id, m.bankId]));
  for (const m of data.benchmark.memories) parent.set(m.bankId, m.bankId);
  for (const q of data.benchmark.queries) {
    const banks = (q.candidateIds ?? []).map((id) => bankOf.get(id) ?? '');
    for (const b of banks.slice(1)) parent.set(find(b), find(banks[0] ?? b));
  }
  const groups = new Map<string, string[]>();
  for (const b of parent.keys()) {
    const r = find(b);
    groups.set(r, [...(groups.get(r) ?? []), b]);
  }
  return [...groups.values()]
    .map((g) => g.sort())
    .sort((a, b) => (a[0] ?? '').localeCompare(b[0] ?? ''));
}

describe('loadLmebFolder: dialogue layout', () => {
  it('loads memories with LMEB text, coerced ids and scene banks', async () => {
    const { benchmark } = await loadLmebFolder(dialogueDir);
    expect(benchmark.name).toBe('lmeb:lmeb-dialogue');
    expect(benchmark.memories.map((m) => [m.id, m.bankId])).toEqual([
      ['d1', 'chat_a'],
      ['d2', 'chat_a'],
      // d3 is in chat_a's and chat_b's lists: the lexicographically first scene.
      ['d3', 'chat_a'],
      ['d4', 'chat_b'],
      ['d5', 'chat_b'],
      // In no scene's list, and numeric in the file: the folder's bank, id as a string.
      ['7', 'lmeb-dialogue'],
    ]);
    const text = new Map(benchmark.memories.map((m) => [m.id, m.text]));
    expect(text.get('d1')).toBe(' Alice: I adopted a cat named Miso last week.');
    expect(text.get('d2')).toBe('Session 1 Bob: We hiked Mount Tam on Sunday.');
    expect(text.get('d4')).toBe(' Carol: My sister moved to Lisbon in March.');
    expect(benchmark.memories[1]?.meta).toEqual({ title: 'Session 1' });
    for (const m of benchmark.memories) expect(memorySchema.safeParse(m).success).toBe(true);
  });

  it('finds subset folders (sorted) and skips folders without queries.jsonl', async () => {
    const { benchmark } = await loadLmebFolder(dialogueDir);
    expect(benchmark.subtasks).toEqual(['single_hop', 'temporal_reasoning']);
    expect(benchmark.options).toEqual({
      layout: 'dialogue',
      subsets: ['single_hop', 'temporal_reasoning'],
      missingScene: 'all-corpus',
      textPolicy: 'lmeb',
    });
  });

  it('builds queries with their scene candidates, category and unique ids', async () => {
    const { benchmark } = await loadLmebFolder(dialogueDir);
    const allDocs = ['d1', 'd2', 'd3', 'd4', 'd5', '7'];
    expect(benchmark.queries.map((q) => [q.id, q.category, q.candidateIds])).toEqual([
      ['chat_a_1', 'single_hop', ['d1', 'd2', 'd3']],
      // ghost is not in the corpus and d4 is listed twice.
      ['chat_b_1', 'single_hop', ['d3', 'd4', 'd5']],
      // chat_c is not in candidates.jsonl: the whole corpus, as LMEB does.
      ['chat_c_1', 'single_hop', allDocs],
      ['temporal_reasoning/chat_a_1', 'temporal_reasoning', ['d1', 'd2', 'd3']],
      ['chat_b_3', 'temporal_reasoning', ['d3', 'd4', 'd5']],
      ['chat_a_4', 'temporal_reasoning', ['d1', 'd2', 'd3']],
    ]);
    expect(benchmark.queries[0]?.text).toBe("What is the name of Alice's cat?");
    for (const q of benchmark.queries) {
      expect(querySchema.safeParse(q).success).toBe(true);
      expect(q.candidateBankIds).toBeUndefined();
    }
  });

  it('keeps labels in RelevanceLabels only, with grades and non-relevant rows left out', async () => {
    const { benchmark, labels } = await loadLmebFolder(dialogueDir);
    expect(labels.toRows()).toEqual([
      ['chat_a_1', 'd1', 1],
      ['chat_b_1', 'd4', 1],
      ['chat_c_1', '7', 1],
      ['temporal_reasoning/chat_a_1', 'd1', 1],
      ['chat_b_3', 'd3', 2],
      ['chat_a_4', 'd2', 1],
      ['chat_a_4', 'd5', 1],
    ]);
    expect(labels.pairCount).toBe(7);
    for (const q of benchmark.queries) expect(labels.has(q.id)).toBe(true);
    // The only meta is the scene: no answer, no evidence id.
    expect(benchmark.queries.map((q) => q.meta)).toEqual(
      ['chat_a', 'chat_b', 'chat_c', 'chat_a', 'chat_b', 'chat_a'].map((scene) => ({ scene })),
    );
  });

  it('reports every repair, unresolved reference and drop by kind', async () => {
    const { report } = await loadLmebFolder(dialogueDir);
    const json = report.toJSON();
    expect(json.dropped).toEqual({
      'duplicate-memory-id': 1,
      'empty-text': 2,
      'invalid-record': 3,
      'non-relevant-qrel': 2,
      'no-resolvable-evidence': 3,
    });
    expect(json.unresolved).toEqual({
      'unknown-candidate-doc': 1,
      'scene-not-in-candidates': 1,
      'qrels-unknown-doc': 1,
      'qrels-unknown-query': 1,
      'relevant-not-in-candidates': 1,
    });
    expect(json.repaired).toEqual({
      'duplicate-candidate-id': 1,
      'qrels-header': 1,
      'query-id-prefixed': 1,
    });
    expect(json.details.dropped['no-resolvable-evidence']?.map((d) => [d.id, d.detail])).toEqual([
      ['chat_b_2', 'no qrels'],
      ['chat_a_3', 'no qrels with score > 0 to a corpus document'],
      ['chat_b_4', 'no qrels with score > 0 to a corpus document'],
    ]);
    expect(json.details.dropped['empty-text']?.map((d) => d.id)).toEqual(['d6', 'chat_a_2']);
    expect(json.details.unresolved['relevant-not-in-candidates']).toEqual([
      { id: 'chat_a_4', detail: 'd5 (scene chat_a)' },
    ]);
    expect(json.details.unresolved['qrels-unknown-query']?.[0]?.id).toBe('chat_z_9');
  });

  it('names file, line and field path of each bad record', async () => {
    const { report } = await loadLmebFolder(dialogueDir);
    expect(report.issues.map((i) => [i.file, i.record, i.path])).toEqual([
      ['corpus.jsonl', 'line 9', ''],
      ['corpus.jsonl', 'line 10', 'id'],
      ['single_hop/qrels.tsv', 'line 9', 'score'],
    ]);
    expect(report.issues[0]?.message).toMatch(/^malformed JSON/);
    expect(report.issues[2]?.message).toContain('expected an integer');
  });

  it('links scenes that share a document into one split component', async () => {
    const data = await loadLmebFolder(dialogueDir, { missingScene: 'drop' });
    // chat_b's queries rank d3, whose bank is chat_a; Dave's doc has no query.
    expect(components(data)).toEqual([['chat_a', 'chat_b'], ['lmeb-dialogue']]);
    // With the whole corpus as candidates, the chat_c query joins everything.
    expect(components(await loadLmebFolder(dialogueDir))).toEqual([
      ['chat_a', 'chat_b', 'lmeb-dialogue'],
    ]);
  });

  it('drops queries of unknown scenes when asked to', async () => {
    const { benchmark, labels, report } = await loadLmebFolder(dialogueDir, {
      missingScene: 'drop',
    });
    expect(benchmark.queries.map((q) => q.id)).not.toContain('chat_c_1');
    expect(labels.has('chat_c_1')).toBe(false);
    expect(report.droppedCount('scene-not-in-candidates')).toBe(1);
    expect(report.toJSON().unresolved['scene-not-in-candidates']).toBeUndefined();
    expect(benchmark.options.missingScene).toBe('drop');
  });

  it('loads only the requested subsets, in the requested order', async () => {
    const { benchmark } = await loadLmebFolder(dialogueDir, {
      subsets: ['temporal_reasoning', 'single_hop'],
    });
    expect(benchmark.subtasks).toEqual(['temporal_reasoning', 'single_hop']);
    // The first subset now owns the plain id; the later one is prefixed.
    expect(benchmark.queries.map((q) => q.id).slice(0, 1)).toEqual(['chat_a_1']);
    expect(benchmark.queries.map((q) => q.id)).toContain('single_hop/chat_a_1');
  });

  it('trims texts under textPolicy trimmed', async () => {
    const { benchmark } = await loadLmebFolder(dialogueDir, { textPolicy: 'trimmed' });
    expect(benchmark.memories[0]?.text).toBe('Alice: I adopted a cat named Miso last week.');
  });

  it('lists every source file with its SHA-256', async () => {
    const { benchmark } = await loadLmebFolder(dialogueDir);
    const names = [
      'corpus.jsonl',
      'candidates.jsonl',
      'single_hop/queries.jsonl',
      'single_hop/qrels.tsv',
      'temporal_reasoning/queries.jsonl',
      'temporal_reasoning/qrels.tsv',
    ];
    expect(benchmark.sources.map((s) => s.name)).toEqual(names);
    for (const s of benchmark.sources) {
      expect(s.sha256).toBe(await fileSha256(join(dialogueDir, s.name)));
    }
  });
});

describe('loadLmebFolder: document layout', () => {
  it('uses the folder as the one subtask and the query id as the scene', async () => {
    const { benchmark, labels, report } = await loadLmebFolder(documentDir);
    expect(benchmark.name).toBe('lmeb:lmeb-document');
    expect(benchmark.subtasks).toEqual(['lmeb-document']);
    expect(benchmark.options.layout).toBe('document');
    expect(benchmark.queries.map((q) => [q.id, q.candidateIds, q.meta])).toEqual([
      ['q1', ['p1', 'p2'], { scene: 'q1' }],
      ['q2', ['p2', 'p3'], { scene: 'q2' }],
      ['q3', ['p1', 'p2', 'p3', 'p4', 'p5', 'p6'], { scene: 'q3' }],
      ['4', ['p4', 'p5'], { scene: '4' }],
    ]);
    for (const q of benchmark.queries) expect(q.category).toBe('lmeb-document');
    expect(benchmark.memories.map((m) => [m.id, m.bankId])).toEqual([
      ['p1', 'q1'],
      ['p2', 'q1'],
      ['p3', 'q2'],
      ['p4', '4'],
      ['p5', '4'],
      ['p6', 'lmeb-document'],
    ]);
    expect(benchmark.memories[0]?.text).toBe(
      'ACE2 SARS-CoV-2 enters cells through the ACE2 receptor.',
    );
    expect(labels.toRows()).toEqual([
      ['q1', 'p1', 1],
      ['q2', 'p2', 1],
      ['q3', 'p3', 1],
      ['4', 'p4', 1],
      ['4', 'p5', 1],
    ]);
    expect(report.toJSON().dropped).toEqual({ 'invalid-record': 1, 'non-relevant-qrel': 1 });
    expect(report.toJSON().unresolved).toEqual({ 'scene-not-in-candidates': 1 });
    expect(report.issues).toEqual([
      expect.objectContaining({ file: 'queries.jsonl', record: 'line 5', path: '' }),
    ]);
    expect(benchmark.sources.map((s) => s.name)).toEqual([
      'corpus.jsonl',
      'candidates.jsonl',
      'queries.jsonl',
      'qrels.tsv',
    ]);
  });

  it('rejects subsets for a document task', async () => {
    await expect(loadLmebFolder(documentDir, { subsets: ['x'] })).rejects.toBeInstanceOf(
      ConfigError,
    );
  });
});

describe('loadLmebFolder: whole-file problems', () => {
  const minimal = {
    'corpus.jsonl': '{"id": "d1", "text": "hello"}\n',
    'candidates.jsonl': '{"scene_id": "s_1", "candidate_doc_ids": ["d1"]}\n',
  };

  it('fails on a folder that does not exist', async () => {
    await expect(loadLmebFolder(join(fixtures, 'no-such-task'))).rejects.toBeInstanceOf(
      DataMissingError,
    );
  });

  it('fails when neither layout is present', async () => {
    const root = await tmpTask(minimal);
    await expect(loadLmebFolder(root)).rejects.toThrow(/has no queries\.jsonl/);
  });

  it('names a missing required file', async () => {
    const root = await tmpTask({
      ...minimal,
      'sub/queries.jsonl': '{"id": "s_1_q", "text": "hi"}\n',
    });
    const error = await loadLmebFolder(root).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DataMissingError);
    expect((error as Error).message).toContain('sub/qrels.tsv');

    const noCorpus = await tmpTask({
      'queries.jsonl': '',
      'qrels.tsv': '',
      'candidates.jsonl': '',
    });
    await expect(loadLmebFolder(noCorpus)).rejects.toThrow(/missing corpus\.jsonl/);
  });

  it('names a missing requested subset', async () => {
    await expect(loadLmebFolder(dialogueDir, { subsets: ['multi_hop'] })).rejects.toThrow(
      /missing multi_hop\/queries\.jsonl/,
    );
  });

  it('honours a forced layout', async () => {
    await expect(loadLmebFolder(dialogueDir, { layout: 'document' })).rejects.toThrow(
      /missing queries\.jsonl/,
    );
    await expect(loadLmebFolder(documentDir, { layout: 'dialogue' })).rejects.toThrow(
      /no subset folder/,
    );
  });

  it('rejects unknown options with a ConfigError', async () => {
    await expect(
      loadLmebFolder(dialogueDir, { layout: 'sideways' } as never),
    ).rejects.toBeInstanceOf(ConfigError);
    expect(lmebOptionsSchema.parse({})).toEqual({
      layout: 'auto',
      missingScene: 'all-corpus',
      textPolicy: 'lmeb',
    });
  });

  it('handles CRLF, a byte order mark, blank lines and an empty subtask', async () => {
    const root = await tmpTask({
      ...minimal,
      'a/queries.jsonl': '\uFEFF{"id": "s_1_q", "text": "hi"}\r\n\r\n',
      'a/qrels.tsv': 's_1_q\td1\t1\r\n',
      'b/queries.jsonl': '{"id": "s_1_r", "text": "no qrels"}\n',
      'b/qrels.tsv': '',
    });
    const { benchmark, labels, report } = await loadLmebFolder(root);
    expect(benchmark.queries.map((q) => q.id)).toEqual(['s_1_q']);
    expect(labels.toRows()).toEqual([['s_1_q', 'd1', 1]]);
    expect(benchmark.subtasks).toEqual(['a']);
    expect(report.toJSON().dropped).toEqual({ 'no-resolvable-evidence': 1, 'empty-subtask': 1 });
    expect(report.issues).toEqual([]);
  });
});
