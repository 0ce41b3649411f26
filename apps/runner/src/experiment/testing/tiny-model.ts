import { copyFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { importModelDir } from '@bfe/models';
import { parseExperiment, type Experiment } from '../config.js';
import { runExperiment, type RunOutcome } from '../run-experiment.js';

/** The repository root, for the fixtures the runner's integration tests read. */
export const repoRoot = fileURLToPath(new URL('../../../../../', import.meta.url));

/** The LMEB document-layout fixture (a tiny task) of `@bfe/datasets`. */
export const documentTask = join(repoRoot, 'packages/datasets/fixtures/lmeb-document');

/**
 * Installs the tiny encoder fixture (a 4-dimensional BERT graph, 18-token vocabulary, mean
 * pooling, max length 16) as model `tiny` in a model cache under `root`, and returns its
 * directory: what the in-process experiment tests run on. Test helper, not part of the app.
 */
export async function installTinyModel(root: string): Promise<string> {
  const source = join(root, 'model-source');
  writeTinyModelSource(source);
  const imported = await importModelDir(source, {
    cacheDir: join(root, 'models'),
    name: 'tiny',
    pooling: 'mean',
    maxLength: 16,
  });
  return imported.dir;
}

/**
 * Writes the tiny encoder fixture into `dir` in Hugging Face layout (`model.onnx` from the
 * fixture `graph`, `tokenizer.json`, `config.json`), creating `dir`: the model source that the
 * in-process and end-to-end tests import with `importModelDir` or `bfe model fetch --model-dir`.
 */
export function writeTinyModelSource(dir: string, graph = 'tiny-encoder.onnx'): void {
  mkdirSync(dir, { recursive: true });
  const fixtures = join(repoRoot, 'packages/encoder/fixtures');
  copyFileSync(join(fixtures, graph), join(dir, 'model.onnx'));
  copyFileSync(join(fixtures, 'tiny-tokenizer.json'), join(dir, 'tokenizer.json'));
  writeFileSync(
    join(dir, 'config.json'),
    JSON.stringify({
      model_type: 'bert',
      vocab_size: 18,
      hidden_size: 4,
      max_position_embeddings: 16,
      pad_token_id: 0,
    }),
  );
}

/**
 * The in-process tests' default experiment: the LMEB document fixture, no split, the tiny
 * model at `modelDir`, k 4 with a sweep of 2 and 4, 50 resamples; `raw` overrides sections.
 */
export function tinyExperiment(modelDir: string, raw: Record<string, unknown> = {}): Experiment {
  return parseExperiment({
    name: 'tiny',
    dataset: { name: `lmeb:${documentTask}` },
    split: { policy: 'none' },
    model: { name: 'tiny', dir: modelDir },
    scorer: { k: 4, kSweep: [2, 4] },
    eval: { resamples: 50 },
    ...raw,
  });
}

/** Runs `e` in process with its cache and run folders under `dir`. */
export function runIn(
  dir: string,
  e: Experiment,
  log?: (line: string) => void,
): Promise<RunOutcome> {
  return runExperiment({
    experiment: e,
    configPath: join(dir, 'experiment.yaml'),
    argv: ['run', 'experiment.yaml'],
    cacheDir: join(dir, 'cache'),
    runsDir: join(dir, 'runs'),
    ...(log === undefined ? {} : { log }),
  });
}
