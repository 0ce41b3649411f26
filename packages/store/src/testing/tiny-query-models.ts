import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { writeTinyModelSource } from '@bfe/encoder/testing';
import { importModelDir } from '@bfe/models';

/** The tiny fixture's weight `w` (a token's state is `id · w + mask · v`), float32 bytes. */
const W = Buffer.from(Float32Array.of(1, -1, 0.5, 2).buffer);
/** The same weight in the query graph: another graph, the same tokenizer and settings. */
const W_QUERY = Buffer.from(Float32Array.of(1, -1, 0.5, 2.5).buffer);

/**
 * Three tiny models in the model cache `root/models` (tests of `--query-model`): `tiny` (the
 * fixture graph, model id `test/tiny`), `tiny-q` (the same model id and tokenizer, its weight
 * `w` changed: another graph whose query vectors differ) and `tiny-other` (the fixture graph
 * under another model id). Returns the cache directory.
 * @example const cache = await installTinyQueryModels(tmpDir()); // BFE_MODEL_DIR=cache
 */
export async function installTinyQueryModels(root: string): Promise<string> {
  const cacheDir = join(root, 'models');
  const install = async (name: string, modelId: string, query: boolean): Promise<void> => {
    const source = join(root, `source-${name}`);
    writeTinyModelSource(source);
    if (query) {
      const graph = readFileSync(join(source, 'model.onnx'));
      const at = graph.indexOf(W);
      if (at < 0 || graph.indexOf(W, at + 1) >= 0) throw new Error('the fixture weight moved');
      W_QUERY.copy(graph, at);
      writeFileSync(join(source, 'model.onnx'), graph);
    }
    await importModelDir(source, { cacheDir, name, modelId, pooling: 'mean', maxLength: 16 });
  };
  await install('tiny', 'test/tiny', false);
  await install('tiny-q', 'test/tiny', true);
  await install('tiny-other', 'test/other', false);
  return cacheDir;
}
