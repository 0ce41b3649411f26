import { existsSync, readdirSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { tmpDir } from '@bfe/core/testing';
import { openBank } from '@bfe/encoder';
import { mirror, repoRoot, requireData, requireModel, runBfe } from './helpers.ts';
import { sharedLocomoBank } from './shared-locomo-bank.ts';
import { writeTinyModelSource } from '@bfe/encoder/testing';

const tmp = (): string => tmpDir('bfe-e2e-');

/** A model directory in Hugging Face layout around a given graph and the tiny tokenizer. */
function tinyModelDir(graph: string): string {
  const dir = tmp();
  writeTinyModelSource(dir, graph);
  return dir;
}

describe('bfe model fetch --model-dir and bfe encode, on a tiny graph (no download)', () => {
  it('imports a local model, encodes an LMEB folder, and writes banks that read back', async () => {
    const env = { BFE_MODEL_DIR: tmp() };
    const imported = await runBfe(
      [
        'model',
        'fetch',
        'tiny',
        '--model-dir',
        tinyModelDir('tiny-encoder.onnx'),
        '--pooling',
        'mean',
        '--max-length',
        '16',
      ],
      env,
    );
    expect(imported.code, imported.stderr).toBe(0);
    const out = join(tmp(), 'bank');
    const lmeb = join(repoRoot, 'packages/datasets/fixtures/lmeb-document');
    const r = await runBfe(
      ['encode', '--dataset', `lmeb:${lmeb}`, '--model', 'tiny', '--out', out, '--json'],
      env,
    );
    expect(r.code, r.stderr).toBe(0);
    const bank = await openBank(out);
    expect(bank.dim).toBe(4);
    expect(bank.memories.ids.length).toBe(JSON.parse(r.stdout).memories.rows);
    expect(bank.manifest.model.name).toBe('tiny');
  });

  it('refuses a graph without last_hidden_state and leaves no cache entry', async () => {
    const cache = tmp();
    const r = await runBfe(
      [
        'model',
        'fetch',
        'bad',
        '--model-dir',
        tinyModelDir('no-hidden-state.onnx'),
        '--pooling',
        'mean',
      ],
      { BFE_MODEL_DIR: cache },
    );
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('ARTIFACT_CORRUPT');
    expect(r.stderr).toContain('last_hidden_state');
    expect(readdirSync(cache).filter((f) => !f.startsWith('.'))).toEqual([]);
  });

  it('names `bfe model fetch` when the model is missing', async () => {
    const r = await runBfe(['encode', '--dataset', 'locomo', '--out', join(tmp(), 'x')], {
      BFE_MODEL_DIR: tmp(),
    });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('bfe model fetch');
  });
});

const modelCache =
  process.env.BFE_MODEL_DIR ??
  join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'bfe', 'models');
const hasModel = existsSync(join(modelCache, 'all-minilm-l6-v2', 'bfe-model.json'));

// The real encoder pass over LoCoMo: needs the model (`bfe model fetch`) and BFE_DATA_MIRROR.
describe.skipIf((!hasModel && !requireModel) || (mirror === undefined && !requireData))(
  'bfe encode --dataset locomo (needs the model and BFE_DATA_MIRROR)',
  () => {
    it('writes memory and query banks with the right rows, dimensions and unit norms', async () => {
      // `bfe encode --dataset locomo --out <bank> --json`, run once in this vitest run and read
      // here and by the store's equality test (whichever file comes first runs it).
      const { out, result: r } = await sharedLocomoBank();
      expect(r.code, r.stderr).toBe(0);
      expect(JSON.parse(r.stdout)).toMatchObject({ out, memories: { rows: 5882 } });
      const bank = await openBank(out);
      expect(bank.dim).toBe(384);
      expect(bank.memories.ids.length).toBe(5882);
      expect(bank.queries.ids.length).toBe(1536);
      expect(bank.memories.pooled.length).toBe(5882 * 384);
      expect(bank.manifest.memories.truncated).toBe(0);
      const tokens = bank.memories.tokenVectors.length / 384;
      expect(tokens).toBe(bank.manifest.memories.tokens);
      expect(tokens).toBeGreaterThan(5882 * 10);
      for (const [values, rows] of [
        [bank.memories.tokenVectors, tokens],
        [bank.memories.pooled, 5882],
        [bank.queries.tokenVectors, bank.queries.tokenVectors.length / 384],
      ] as const) {
        let worst = 0;
        for (let r = 0; r < rows; r++) {
          let ss = 0;
          for (let k = 0; k < 384; k++) ss += values[r * 384 + k]! ** 2;
          worst = Math.max(worst, Math.abs(Math.sqrt(ss) - 1));
        }
        expect(worst).toBeLessThan(1e-5);
      }
      // Special tokens never appear among content tokens.
      for (const id of [0, 101, 102]) expect(bank.memories.tokenId.includes(id)).toBe(false);
    }, 600_000);
  },
);
