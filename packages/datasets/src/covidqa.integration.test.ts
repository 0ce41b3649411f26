import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { bytesSha256, querySchema } from '@bfe/core';
import { parseCovidQa } from './covidqa.js';

const FILE = 'covidqa_200423.json';
const SHA256 = 'ab310b4e39f726e087c8fa3d1787c73771dacddc584977204ebe3cc889ee1264';
/** CI sets BFE_REQUIRE_DATA=1: a missing mirror then fails instead of skipping. */
const requireData = process.env.BFE_REQUIRE_DATA === '1';

async function load(paragraphs: 'line' | 'blank-line') {
  const bytes = await readFile(join(process.env.BFE_DATA_MIRROR ?? '', FILE));
  const source = { name: FILE, sha256: bytesSha256(bytes) };
  return parseCovidQa(JSON.parse(bytes.toString('utf8')) as unknown, { paragraphs }, source);
}

describe.skipIf(!process.env.BFE_DATA_MIRROR && !requireData)(
  'COVID-QA real file (needs BFE_DATA_MIRROR)',
  () => {
    it('loads the pinned file with exact counts (line paragraphs)', async () => {
      const { benchmark, labels, report } = await load('line');
      expect(benchmark.sources).toEqual([{ name: FILE, sha256: SHA256 }]);
      expect(new Set(benchmark.memories.map((m) => m.bankId)).size).toBe(98);
      expect(benchmark.memories.length).toBe(5269);
      expect(benchmark.queries.length).toBe(1380);
      expect(labels.pairCount).toBe(1380);
      // Binary qrels: @bfe/eval's graded NDCG leaves COVID-QA's numbers as they were.
      expect(labels.toRows().every(([, , grade]) => grade === 1)).toBe(true);
      const json = report.toJSON();
      expect(json.dropped).toEqual({ 'empty-paragraph': 3024 });
      expect(json.repaired).toEqual({ 'answer-offset-mismatch': 227 });
      expect(json.unresolved).toEqual({
        'answer-offset-mismatch': 7,
        'answer-spans-paragraphs': 79,
      });
      expect(json.issues).toBe(0);
    });

    it('keeps every query valid, labelled, and inside its own article', async () => {
      const { benchmark, labels } = await load('line');
      const bankOf = new Map(benchmark.memories.map((m) => [m.id, m.bankId]));
      for (const q of benchmark.queries) {
        expect(querySchema.safeParse(q).success).toBe(true);
        const relevant = [...labels.relevant(q.id).keys()];
        expect(relevant.length).toBeGreaterThan(0);
        for (const id of relevant) expect(bankOf.get(id)).toBe(q.candidateBankIds?.[0]);
      }
      expect(labels.relevant('262')).toEqual(new Map([['630:p6', 1]]));
    });

    it('cuts fewer, longer paragraphs at blank lines', async () => {
      const { benchmark, labels, report } = await load('blank-line');
      expect(benchmark.memories.length).toBe(3086);
      expect(benchmark.queries.length).toBe(1380);
      expect(labels.pairCount).toBe(1380);
      const json = report.toJSON();
      expect(json.dropped).toEqual({ 'empty-paragraph': 2 });
      expect(json.unresolved).toEqual({
        'answer-offset-mismatch': 7,
        'answer-spans-paragraphs': 7,
      });
    });
  },
);
