import { copyFileSync, linkSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { sharedDataDir, suiteTmpDir } from '@bfe/core/testing';
import { mirror, requireData, runBfe, type CliResult } from './helpers.ts';

/**
 * Puts the copy the global setup verified and unpacked (configs/vitest.data-setup.ts) into a
 * data directory, as a hard link where the file system allows: the CLI then verifies a local
 * copy instead of unpacking the mirror's 41 MB of xz again in every test file.
 */
function seedFromSharedData(dataDir: string, name: string): void {
  const shared = sharedDataDir();
  if (shared === undefined) return;
  try {
    linkSync(join(shared, name), join(dataDir, name));
  } catch {
    copyFileSync(join(shared, name), join(dataDir, name));
  }
}

interface SplitJson {
  structure: { components: number };
  split: {
    policy: string;
    unit: string;
    queries: Record<'train' | 'validation' | 'test', string[]>;
    banks: Record<'train' | 'validation' | 'test', string[]>;
    diagnosticOnly: boolean;
    promotionEligible: boolean;
    marks: string[];
    hash: string;
  };
}

function json<T>(r: CliResult): T {
  if (r.code !== 0) throw new Error(`bfe exited ${r.code}: ${r.stderr}`);
  return JSON.parse(r.stdout) as T;
}

// These read the real benchmark files, so they need BFE_DATA_MIRROR (CI sets it); without it
// they are reported as skipped, not silently passed.
describe.skipIf(mirror === undefined && !requireData)(
  'bfe data on the real files (needs BFE_DATA_MIRROR)',
  () => {
    const suiteDir = suiteTmpDir('bfe-real-');
    let env: Record<string, string | undefined>;
    beforeAll(() => {
      const dataDir = suiteDir();
      // LoCoMo is left to the first test, which fetches it from the mirror.
      seedFromSharedData(dataDir, 'longmemeval_s_cleaned.partial498.json');
      env = { BFE_DATA_MIRROR: mirror, BFE_DATA_DIR: dataDir };
    });

    it('fetches LoCoMo from the mirror and verifies its SHA-256', async () => {
      const r = json<{ files: Array<{ from: string; source: { sha256: string } }> }>(
        await runBfe(['data', 'fetch', 'locomo', '--json'], env),
      );
      expect(r.files[0]?.from).toBe('mirror');
      expect(r.files[0]?.source.sha256).toBe(
        '79fa87e90f04081343b8c8debecb80a9a6842b76a7aa537dc9fdf651ea698ff4',
      );
    });

    it('inspects LoCoMo turn level, categories 1–4, with evidence repair', async () => {
      const s = json<Record<string, unknown>>(
        await runBfe(['data', 'inspect', 'locomo', '--json'], env),
      );
      expect(s).toMatchObject({
        dataset: 'locomo',
        memories: 5882,
        queries: 1536,
        qrels: 2360,
        banks: 10,
        categories: { 'multi-hop': 282, temporal: 321, 'open-domain': 92, 'single-hop': 841 },
        repaired: {
          'evidence-split-list': 4,
          'evidence-extra-colon': 1,
          'evidence-leading-zero': 1,
          'evidence-duplicate': 1,
        },
        unresolved: { 'evidence-unknown-id': 2, 'evidence-malformed': 1 },
        dropped: { 'no-turns': 16, 'no-evidence': 4, 'excluded-category': 446 },
      });
    });

    it('matches the reference counts with exact evidence matching and all categories', async () => {
      const s = json<Record<string, unknown>>(
        await runBfe(
          [
            'data',
            'inspect',
            'locomo',
            '--json',
            '--set',
            'repairEvidence=false',
            '--set',
            'categories=[1,2,3,4,5]',
          ],
          env,
        ),
      );
      expect(s).toMatchObject({ memories: 5882, queries: 1977, qrels: 2805 });
    });

    it('splits LoCoMo into conversation-disjoint train/validation/test', async () => {
      const r = json<SplitJson>(
        await runBfe(
          ['data', 'split', 'locomo', '--policy', 'connected-bank', '--seed', '42', '--json'],
          env,
        ),
      );
      expect(r.structure.components).toBe(10);
      const { split } = r;
      expect(split).toMatchObject({
        unit: 'component',
        diagnosticOnly: false,
        promotionEligible: true,
        marks: [],
      });
      expect([
        split.banks.train.length,
        split.banks.validation.length,
        split.banks.test.length,
      ]).toEqual([6, 2, 2]);
      const seen = new Map<string, string>();
      for (const name of ['train', 'validation', 'test'] as const) {
        for (const bank of split.banks[name]) {
          expect(seen.has(bank)).toBe(false);
          seen.set(bank, name);
        }
        // A LoCoMo query id is `<conversation>:q<n>`: its conversation must be in its own split.
        for (const q of split.queries[name]) expect(seen.get(q.split(':')[0]!)).toBe(name);
      }
      const again = json<SplitJson>(
        await runBfe(
          ['data', 'split', 'locomo', '--policy', 'connected-bank', '--seed', '42', '--json'],
          env,
        ),
      );
      expect(again.split.hash).toBe(split.hash);
    });

    it('refuses a strict split of LongMemEval S and names the shared-bank policy', async () => {
      const r = await runBfe(
        ['data', 'split', 'longmemeval-s', '--policy', 'connected-bank', '--seed', '42'],
        env,
      );
      expect(r.code).toBe(2);
      expect(r.stderr).toContain('SPLIT_IMPOSSIBLE');
      expect(r.stderr).toContain('1 connected component');
      expect(r.stderr).toContain('query-disjoint-shared-bank');
    });

    it('inspects LongMemEval S under its own protocol and splits it with diagnostic flags', async () => {
      const s = json<Record<string, unknown>>(
        await runBfe(['data', 'inspect', 'longmemeval-s', '--json'], env),
      );
      expect(s).toMatchObject({
        memories: 16503,
        queries: 418,
        qrels: 792,
        dropped: { abstention: 30, 'assistant-evidence-only': 50 },
      });
      const r = json<SplitJson>(
        await runBfe(
          [
            'data',
            'split',
            'longmemeval-s',
            '--policy',
            'query-disjoint-shared-bank',
            '--seed',
            '42',
            '--json',
          ],
          env,
        ),
      );
      expect(r.split).toMatchObject({
        policy: 'query-disjoint-shared-bank',
        unit: 'query',
        diagnosticOnly: true,
        promotionEligible: false,
        marks: ['shared-unlabelled-memory'],
      });
      const sizes = [
        r.split.queries.train.length,
        r.split.queries.validation.length,
        r.split.queries.test.length,
      ];
      expect(sizes).toEqual([251, 84, 83]);
    });

    it("inspects LongMemEval S under the paper's protocol: every non-abstention question", async () => {
      const s = json<Record<string, unknown>>(
        await runBfe(
          ['data', 'inspect', 'longmemeval-s', '--set', 'protocol=paper', '--json'],
          env,
        ),
      );
      expect(s).toMatchObject({
        options: { protocol: 'paper', textPolicy: 'all-turns', relevance: 'answer-session-ids' },
        memories: 18173,
        queries: 468,
        qrels: 887,
        dropped: { abstention: 30, 'not-in-kept-haystack': 960 },
        unresolved: {},
      });
      expect(Object.keys(s.dropped as object).sort()).toEqual([
        'abstention',
        'not-in-kept-haystack',
      ]);
    });
  },
);
