import { resolve } from 'node:path';
import { assertQueryModel, loadModelManifest, resolveModelDir } from '@bfe/models';
import type { ModelChoice } from './embedder.js';

const dirOf = (model: ModelChoice): string =>
  typeof model === 'string' ? resolveModelDir(model) : resolve(model.dir);

/**
 * Throws unless the installed model `query` may encode queries against the token states
 * `passage` encodes: the same upstream model, tokenizer and settings, another graph
 * (`assertQueryModel`). Reads both manifests; opens no session.
 * @throws ConfigError on a difference; DataMissingError when either model is not installed
 * @example
 * await checkQueryModel('all-minilm-l6-v2', 'all-minilm-l6-v2-int8pc'); // resolves
 */
export async function checkQueryModel(passage: ModelChoice, query: ModelChoice): Promise<void> {
  const [p, q] = await Promise.all([
    loadModelManifest(dirOf(passage)),
    loadModelManifest(dirOf(query)),
  ]);
  assertQueryModel(p, q);
}
