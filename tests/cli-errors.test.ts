import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { tmpDir } from '@bfe/core/testing';
import { runBfe } from './helpers.ts';

const tmp = (): string => tmpDir('bfe-e2e-');

describe('bfe CLI: help and user errors', () => {
  it('prints help listing the data subcommands', async () => {
    const r = await runBfe(['data', '--help'], {});
    expect(r.code).toBe(0);
    for (const sub of ['list', 'fetch', 'inspect', 'split']) expect(r.stdout).toContain(sub);
  });

  it('names the known datasets for an unknown one and exits 2', async () => {
    const r = await runBfe(['data', 'inspect', 'locomoo'], { BFE_DATA_DIR: tmp() });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('DATASET_UNKNOWN');
    expect(r.stderr).toContain('longmemeval-s');
  });

  it('names `bfe data fetch` when the data is missing', async () => {
    const r = await runBfe(['data', 'inspect', 'locomo'], {
      BFE_DATA_DIR: tmp(),
      BFE_DATA_MIRROR: undefined,
    });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('DATA_MISSING');
    expect(r.stderr).toContain('bfe data fetch locomo');
  });

  it('reports a mistyped dataset option with its path', async () => {
    const r = await runBfe(['data', 'inspect', 'locomo', '--set', 'granularity=sentence'], {
      BFE_DATA_DIR: tmp(),
    });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('CONFIG_INVALID');
    expect(r.stderr).toContain('granularity');
  });

  it('rejects an unknown split policy before loading anything', async () => {
    const r = await runBfe(['data', 'split', 'locomo', '--policy', 'random'], {
      BFE_DATA_DIR: tmp(),
    });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('policy');
  });

  it('rejects a mirrored file whose hash does not match, naming both hashes', async () => {
    const mirrorDir = tmp();
    writeFileSync(join(mirrorDir, 'locomo10.json'), '[]');
    const r = await runBfe(['data', 'fetch', 'locomo'], {
      BFE_DATA_DIR: tmp(),
      BFE_DATA_MIRROR: mirrorDir,
    });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('DATA_HASH_MISMATCH');
    expect(r.stderr).toContain('79fa87e90f04081343b8c8debecb80a9a6842b76a7aa537dc9fdf651ea698ff4');
  });

  it('reports a malformed LMEB corpus line instead of crashing', async () => {
    const dir = tmp();
    mkdirSync(join(dir, 'task'));
    const task = join(dir, 'task');
    writeFileSync(join(task, 'corpus.jsonl'), '{"id":"d1","title":"","text":"alpha"}\n{not json\n');
    writeFileSync(join(task, 'queries.jsonl'), '{"id":"q1","text":"alpha?"}\n');
    writeFileSync(join(task, 'qrels.tsv'), 'q1\td1\t1\n');
    writeFileSync(join(task, 'candidates.jsonl'), '{"scene_id":"q1","candidate_doc_ids":["d1"]}\n');
    const r = await runBfe(
      ['data', 'inspect', `lmeb:${task}`, '--json', '--report', join(dir, 'report.json')],
      {},
    );
    expect(r.code).toBe(0);
    const summary = JSON.parse(r.stdout) as { queries: number; memories: number; issues: number };
    expect(summary).toMatchObject({ queries: 1, memories: 1 });
    expect(summary.issues).toBeGreaterThanOrEqual(1);
  });
});
