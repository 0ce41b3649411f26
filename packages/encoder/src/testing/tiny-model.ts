import { copyFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { importModelDir } from '@bfe/models';

const fixtures = fileURLToPath(new URL('../../fixtures/', import.meta.url));

/**
 * Writes the tiny encoder fixture into `dir` in Hugging Face layout (`model.onnx` from the
 * fixture `graph`, `tokenizer.json`, `config.json`), creating `dir`: the model source that the
 * in-process and end-to-end tests import with `importModelDir` or `bfe model fetch --model-dir`.
 * The graph is a 4-dimensional BERT with an 18-token vocabulary and 16 positions.
 * @example writeTinyModelSource(join(tmp, 'model-source'));
 */
export function writeTinyModelSource(dir: string, graph = 'tiny-encoder.onnx'): void {
  mkdirSync(dir, { recursive: true });
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
 * Installs the tiny encoder fixture (mean pooling, max length 16) as model `tiny` in a model
 * cache under `root` (`root/models/tiny`), and returns its directory.
 * @example const modelDir = await installTinyModel(tmpDir()); // '<tmp>/models/tiny'
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
