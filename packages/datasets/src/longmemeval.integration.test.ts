import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { bytesSha256 } from '@bfe/core';
import type { LoadedDataset, SourceFile } from '@bfe/core';
import { sharedDataDir } from '@bfe/core/testing';
import { longMemEvalOptionsSchema, type LongMemEvalOptionsInput } from './longmemeval-options.js';
import { parseLongMemEval } from './longmemeval.js';

// The unpacked files, verified and unpacked from BFE_DATA_MIRROR once per run by the global
// setup (configs/vitest.data-setup.ts): unpacking LongMemEval S alone takes seconds of CPU.
const dataDir = sharedDataDir();
/** CI sets BFE_REQUIRE_DATA=1: a missing mirror then fails instead of skipping. */
const requireData = process.env.BFE_REQUIRE_DATA === '1';

/** Reads an unpacked official file; the source is its name and the SHA-256 of what was read. */
async function readJson(name: string): Promise<{ raw: unknown; source: SourceFile }> {
  const bytes = await readFile(join(dataDir as string, name));
  const source = { name, sha256: bytesSha256(bytes) };
  return { raw: JSON.parse(bytes.toString('utf8')) as unknown, source };
}

function perType(d: LoadedDataset): Record<string, number> {
  const out: Record<string, number> = {};
  for (const q of d.benchmark.queries) out[q.category] = (out[q.category] ?? 0) + 1;
  return out;
}

/** Every query's relevant memories are among its candidates, and every candidate is a memory. */
function expectConsistent(d: LoadedDataset): void {
  const memoryIds = new Set(d.benchmark.memories.map((m) => m.id));
  expect(memoryIds.size).toBe(d.benchmark.memories.length);
  for (const q of d.benchmark.queries) {
    const candidates = new Set(q.candidateIds);
    expect(candidates.size).toBe(q.candidateIds?.length);
    for (const id of candidates) expect(memoryIds.has(id)).toBe(true);
    for (const id of d.labels.relevant(q.id).keys()) expect(candidates.has(id)).toBe(true);
  }
}

describe.skipIf(dataDir === undefined && !requireData)(
  'LongMemEval S real file (needs BFE_DATA_MIRROR)',
  () => {
    let raw: unknown;
    let source: SourceFile;
    const load = (options: LongMemEvalOptionsInput): LoadedDataset =>
      parseLongMemEval(raw, longMemEvalOptionsSchema.parse(options), source, 'longmemeval-s');
    beforeAll(async () => {
      ({ raw, source } = await readJson('longmemeval_s_cleaned.partial498.json'));
    });

    it('is the pinned file', () => {
      expect(source.sha256).toBe(
        'f670478b0c3bc88a46f0c42a46859b644a429e90cae484dfcec5477f541c7f5b',
      );
    });

    it('official protocol: 418 queries, 792 qrels, 16,503 session memories', () => {
      const d = load({});
      expect(d.benchmark.queries).toHaveLength(418);
      expect(d.labels.pairCount).toBe(792);
      // Binary qrels: @bfe/eval's graded NDCG leaves LongMemEval's numbers as they were.
      expect(d.labels.toRows().every(([, , grade]) => grade === 1)).toBe(true);
      expect(d.benchmark.memories).toHaveLength(16503);
      expect(perType(d)).toEqual({
        'single-session-user': 64,
        'single-session-assistant': 5,
        'single-session-preference': 30,
        'multi-session': 121,
        'knowledge-update': 72,
        'temporal-reasoning': 126,
      });
      const report = d.report.toJSON();
      expect(report.issues).toBe(0);
      // 19,133 distinct sessions = 16,503 memories + 48 empty + 2,582 outside kept haystacks.
      expect(report.dropped).toEqual({
        'empty-text': 48,
        abstention: 30,
        'assistant-evidence-only': 50,
        'not-in-kept-haystack': 2582,
      });
      expect(report.repaired).toEqual({ 'duplicate-haystack-session': 12 });
      expect(report.unresolved).toEqual({});
      expectConsistent(d);
    });

    it("'answer-session-ids': 468 queries, 887 qrels, 18,125 memories", () => {
      const d = load({ relevance: 'answer-session-ids' });
      expect(d.benchmark.queries).toHaveLength(468);
      expect(d.labels.pairCount).toBe(887);
      expect(d.benchmark.memories).toHaveLength(18125);
      expect(perType(d)['single-session-assistant']).toBe(55);
      expect(d.report.toJSON().dropped).toEqual({
        'empty-text': 48,
        abstention: 30,
        'not-in-kept-haystack': 960,
      });
      expectConsistent(d);
    });

    it("protocol 'paper': 468 queries (every non-abstention one), whole sessions, 887 qrels", () => {
      const d = load({ protocol: 'paper' });
      expect(d.benchmark.queries).toHaveLength(468);
      expect(d.labels.pairCount).toBe(887);
      expect(d.benchmark.memories).toHaveLength(18173);
      expect(perType(d)['single-session-assistant']).toBe(55);
      expect(d.benchmark.memories.every((m) => m.text.startsWith('user: '))).toBe(false);
      expect(d.benchmark.memories.some((m) => m.text.includes('\nassistant: '))).toBe(true);
      // 498 questions = 468 kept + 30 abstention; nothing else is dropped or unresolved.
      const report = d.report.toJSON();
      expect(report.dropped).toEqual({ abstention: 30, 'not-in-kept-haystack': 960 });
      expect(report.unresolved).toEqual({});
      expect(report.issues).toBe(0);
      expectConsistent(d);
      // The 50 questions LongMemEval's own protocol drops are the ones whose has_answer turns are
      // all assistant turns; all are single-session-assistant.
      const own = load({});
      const dropped = own.report.toJSON().details.dropped['assistant-evidence-only'] ?? [];
      const kept = new Set(own.benchmark.queries.map((q) => q.id));
      const extra = d.benchmark.queries.filter((q) => !kept.has(q.id));
      expect(extra.map((q) => q.id).sort()).toEqual(dropped.map((x) => x.id).sort());
      expect(new Set(extra.map((q) => q.category))).toEqual(new Set(['single-session-assistant']));
    });

    it("'all-turns' keeps the 42 sessions that have no user text", () => {
      const d = load({ textPolicy: 'all-turns' });
      expect(d.benchmark.queries).toHaveLength(418);
      expect(d.benchmark.memories).toHaveLength(16545);
      expect(d.report.droppedCount('empty-text')).toBe(0);
    });
  },
);

describe.skipIf(dataDir === undefined && !requireData)(
  'LongMemEval oracle real file (needs BFE_DATA_MIRROR)',
  () => {
    let raw: unknown;
    let source: SourceFile;
    const load = (options: LongMemEvalOptionsInput): LoadedDataset =>
      parseLongMemEval(raw, longMemEvalOptionsSchema.parse(options), source, 'longmemeval-oracle');
    beforeAll(async () => {
      ({ raw, source } = await readJson('longmemeval_oracle.json'));
    });

    it('is the pinned file', () => {
      expect(source.sha256).toBe(
        'db9dd414bc1ce15b55c2fa713bec8185ce4854d0f2b5fbc735c180f3e3a54f52',
      );
    });

    it('official protocol: 419 queries, 794 qrels, 831 memories', () => {
      const d = load({});
      expect(d.benchmark.queries).toHaveLength(419);
      expect(d.labels.pairCount).toBe(794);
      expect(d.benchmark.memories).toHaveLength(831);
      expect(perType(d)['temporal-reasoning']).toBe(127);
      // 940 distinct sessions = 831 memories + 109 outside kept haystacks.
      expect(d.report.toJSON().dropped).toEqual({
        abstention: 30,
        'assistant-evidence-only': 51,
        'not-in-kept-haystack': 109,
      });
      expect(d.report.issues).toHaveLength(0);
      expectConsistent(d);
    });

    it("protocol 'paper': the paper's 470; S lacks 7e00a6cb and gpt4_7a0daae1 of them", async () => {
      const d = load({ protocol: 'paper' });
      expect(d.benchmark.queries).toHaveLength(470);
      expect(d.report.toJSON().dropped).toEqual({ abstention: 30, 'not-in-kept-haystack': 58 });
      const s = await readJson('longmemeval_s_cleaned.partial498.json');
      const inS = parseLongMemEval(
        s.raw,
        longMemEvalOptionsSchema.parse({ protocol: 'paper' }),
        s.source,
        'longmemeval-s',
      );
      const kept = new Set(inS.benchmark.queries.map((q) => q.id));
      const missing = d.benchmark.queries.filter((q) => !kept.has(q.id));
      expect(missing.map((q) => [q.id, q.category])).toEqual([
        ['7e00a6cb', 'single-session-assistant'],
        ['gpt4_7a0daae1', 'temporal-reasoning'],
      ]);
      const sIds = new Set((s.raw as Array<{ question_id: string }>).map((q) => q.question_id));
      expect(missing.some((q) => sIds.has(q.id))).toBe(false);
    });

    it("'answer-session-ids': 470 queries, 890 qrels, 882 memories", () => {
      const d = load({ relevance: 'answer-session-ids' });
      expect(d.benchmark.queries).toHaveLength(470);
      expect(d.labels.pairCount).toBe(890);
      expect(d.benchmark.memories).toHaveLength(882);
      expectConsistent(d);
    });
  },
);
