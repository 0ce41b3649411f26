import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { datasetLanguage, loadDataset } from '@bfe/datasets';
import { evaluate } from '@bfe/eval';
import {
  bm25Tokens,
  groupByCandidates,
  rankBm25,
  resolveBm25Options,
  type Bm25Options,
} from '@bfe/scorer';
import { repoRoot } from './helpers.ts';

// Russian dialogue turns in LMEB's document layout: every query shares exactly one rare word
// with its one relevant turn (tests/fixtures/lmeb-russian/README.md).
const task = `lmeb:${join(repoRoot, 'tests/fixtures/lmeb-russian')}`;

async function bm25Recall(bm25: Bm25Options) {
  const { benchmark, labels } = await loadDataset(task, {
    location: { dataDir: repoRoot, mirror: undefined },
  });
  const memories = {
    ids: benchmark.memories.map((m) => m.id),
    bankIds: benchmark.memories.map((m) => m.bankId),
  };
  const groups = groupByCandidates(memories, benchmark.queries);
  const runs = rankBm25({
    memories,
    memoryTexts: benchmark.memories.map((m) => m.text),
    groups,
    top: 50,
    bm25,
  });
  const candidates = new Map<string, ReadonlySet<string>>();
  for (const g of groups) for (const q of g.queries) candidates.set(q.id, g.ids);
  const evaluation = evaluate({
    runs,
    labels,
    candidates,
    subtaskOf: new Map(benchmark.queries.map((q) => [q.id, q.category])),
    subtasks: benchmark.subtasks,
    ks: [1, 10],
  });
  return { evaluation, runs, queries: benchmark.queries.length };
}

describe('BM25 on Russian turns (an lmeb: folder)', () => {
  it('defaults to no language for an lmeb: folder, and finds every relevant turn first', async () => {
    const bm25 = resolveBm25Options(undefined, datasetLanguage(task));
    expect(bm25).toEqual({ language: 'none', idf: 'candidates' });
    const { evaluation, runs, queries } = await bm25Recall(bm25);
    expect(queries).toBe(4);
    expect(evaluation.nQueries).toBe(4);
    expect(evaluation.metrics['recall@1']).toBe(1);
    expect(runs.get('q3')?.[0]).toBe('t5');
  });

  it('keeps every Cyrillic word, whatever the language option', async () => {
    expect(bm25Tokens('Кто готовил БОРЩ в субботу?', 'none')).toEqual([
      'кто',
      'готовил',
      'борщ',
      'в',
      'субботу',
    ]);
    for (const idf of ['candidates', 'corpus'] as const) {
      const { evaluation } = await bm25Recall({ language: 'english', idf });
      expect(evaluation.metrics['recall@1'], idf).toBe(1);
    }
  });
});
