import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { bytesSha256 } from '@bfe/core';
import type { LoadedDataset, SourceFile } from '@bfe/core';
import { locomoOptionsSchema, parseLocomo, type LocomoOptions } from './locomo.js';

const mirror = process.env['BFE_DATA_MIRROR'];
const FILE = 'locomo10.json';
/** CI sets BFE_REQUIRE_DATA=1: a missing mirror then fails instead of skipping. */
const requireData = process.env.BFE_REQUIRE_DATA === '1';

// Counts below are measured on the pinned file (snap-research/LoCoMo @3eb6f2c5); the
// exact-match ones equal the reference counts in the data mirror's README.
describe.skipIf(mirror === undefined && !requireData)(
  'LoCoMo real file (needs BFE_DATA_MIRROR)',
  () => {
    let raw: unknown;
    let source: SourceFile;
    beforeAll(() => {
      const bytes = readFileSync(join(mirror as string, FILE));
      source = { name: FILE, sha256: bytesSha256(bytes) };
      raw = JSON.parse(bytes.toString('utf8')) as unknown;
    });
    const load = (options: Partial<LocomoOptions>): LoadedDataset =>
      parseLocomo(raw, locomoOptionsSchema.parse(options), source);
    const perCategory = (d: LoadedDataset): Record<string, number> => {
      const out: Record<string, number> = {};
      for (const q of d.benchmark.queries) out[q.category] = (out[q.category] ?? 0) + 1;
      return out;
    };

    it('is the pinned file', () => {
      expect(source.sha256).toBe(
        '79fa87e90f04081343b8c8debecb80a9a6842b76a7aa537dc9fdf651ea698ff4',
      );
    });

    it('turn level, categories 1–4, repairs on: 5,882 memories, 1,536 queries, 2,360 qrels', () => {
      const d = load({});
      expect(d.benchmark.memories).toHaveLength(5882);
      expect(d.benchmark.queries).toHaveLength(1536);
      expect(d.labels.pairCount).toBe(2360);
      // Binary qrels: @bfe/eval's graded NDCG leaves LoCoMo's numbers as they were.
      expect(d.labels.toRows().every(([, , grade]) => grade === 1)).toBe(true);
      expect(perCategory(d)).toEqual({
        'multi-hop': 282,
        temporal: 321,
        'open-domain': 92,
        'single-hop': 841,
      });
      const report = d.report.toJSON();
      expect(report.issues).toBe(0);
      expect(report.dropped).toEqual({
        'no-turns': 16,
        'no-evidence': 4,
        'excluded-category': 446,
      });
      expect(report.details.repaired).toEqual({
        'evidence-split-list': [
          { id: 'conv-26:q37', detail: "'D8:6; D9:17' → D8:6, D9:17" },
          { id: 'conv-49:q31', detail: "'D9:1 D4:4 D4:6' → D9:1, D4:4, D4:6" },
          { id: 'conv-49:q38', detail: "'D22:1 D22:2 D9:10 D9:11' → D22:1, D22:2, D9:10, D9:11" },
          {
            id: 'conv-49:q46',
            detail: "'D21:18 D21:22 D11:15 D11:19' → D21:18, D21:22, D11:15, D11:19",
          },
        ],
        'evidence-extra-colon': [{ id: 'conv-43:q18', detail: "'D:11:26' → D11:26" }],
        'evidence-duplicate': [{ id: 'conv-50:q5', detail: 'D4:5 listed twice; counted once' }],
        'evidence-leading-zero': [{ id: 'conv-50:q69', detail: "'D30:05' → D30:5" }],
      });
      expect(report.details.unresolved).toEqual({
        'evidence-unknown-id': [
          { id: 'conv-42:q58', detail: 'D10:19' },
          { id: 'conv-47:q38', detail: 'D4:36' },
        ],
        'evidence-malformed': [{ id: 'conv-42:q88', detail: "'D'" }],
      });
    });

    it('turn level, categories 1–4, exact match: 1,531 queries, 2,345 qrels', () => {
      const d = load({ repairEvidence: false });
      expect(d.benchmark.memories).toHaveLength(5882);
      expect(d.benchmark.queries).toHaveLength(1531);
      expect(d.labels.pairCount).toBe(2345);
      expect(perCategory(d)).toEqual({
        'multi-hop': 281,
        temporal: 320,
        'open-domain': 89,
        'single-hop': 841,
      });
      const report = d.report.toJSON();
      expect(report.dropped).toEqual({
        'no-turns': 16,
        'no-evidence': 4,
        'no-resolvable-evidence': 5,
        'excluded-category': 446,
      });
      expect(report.repaired).toEqual({ 'evidence-duplicate': 1 });
      expect(report.unresolved).toEqual({ 'evidence-malformed': 7, 'evidence-unknown-id': 2 });
    });

    it('all categories: 1,982 queries / 2,820 qrels repaired, 1,977 / 2,805 exact', () => {
      const repaired = load({ categories: [1, 2, 3, 4, 5] });
      expect(repaired.benchmark.queries).toHaveLength(1982);
      expect(repaired.labels.pairCount).toBe(2820);
      expect(perCategory(repaired)['adversarial']).toBe(446);
      expect(repaired.benchmark.subtasks).toEqual([
        'multi-hop',
        'temporal',
        'open-domain',
        'single-hop',
        'adversarial',
      ]);
      const exact = load({ categories: [1, 2, 3, 4, 5], repairEvidence: false });
      expect(exact.benchmark.queries).toHaveLength(1977);
      expect(exact.labels.pairCount).toBe(2805);
    });

    it('session level: 272 memories, 1,536 queries, 2,112 qrels', () => {
      const d = load({ granularity: 'session' });
      expect(d.benchmark.memories).toHaveLength(272);
      expect(d.benchmark.queries).toHaveLength(1536);
      expect(d.labels.pairCount).toBe(2112);
      expect(load({ granularity: 'session', categories: [1, 2, 3, 4, 5] }).labels.pairCount).toBe(
        2558,
      );
    });

    it('appends the captions of the 1,226 turns that carry one', () => {
      const d = load({});
      expect(d.benchmark.memories.filter((m) => m.text.includes(' [image: '))).toHaveLength(1226);
      const plain = load({ includeImageCaptions: false });
      expect(plain.benchmark.memories.filter((m) => m.text.includes(' [image: '))).toHaveLength(0);
    });
  },
);
