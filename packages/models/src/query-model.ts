// A second graph for the query side: which models may encode queries against another model's
// passages (the same model's weights in another precision, read by the same tokenizer).
import { ConfigError } from '@bfe/core';
import type { ModelManifest } from './model-manifest.js';

/** The tokenizer file's SHA-256 as the manifest lists it (undefined: not listed). */
function tokenizerSha(m: ModelManifest): string | undefined {
  return m.files.find((f) => f.path === m.tokenizerFile)?.sha256;
}

/**
 * What keeps `query` from encoding queries against `passage`'s token states, one line per
 * difference; empty when it may. Both must be the same upstream model (`modelId`) read by the
 * same tokenizer file with the same special tokens, truncation, pooling, normalisation, prefixes
 * and dimension — only the graph (its weights' precision) may differ. A different model with
 * the same tokenizer would put queries in another space, so `modelId` is compared too.
 * @example
 * queryModelDifferences(fp32, int8pc); // []
 * queryModelDifferences(fp32, e5); // ['modelId: …', 'tokenizer: …', …]
 */
export function queryModelDifferences(passage: ModelManifest, query: ModelManifest): string[] {
  const out: string[] = [];
  const same = (what: string, a: unknown, b: unknown): void => {
    if (JSON.stringify(a) !== JSON.stringify(b))
      out.push(`${what}: ${JSON.stringify(a)} against ${JSON.stringify(b)}`);
  };
  same('modelId', passage.modelId, query.modelId);
  same('tokenizer sha256', tokenizerSha(passage) ?? null, tokenizerSha(query) ?? null);
  same('dimension', passage.dimension, query.dimension);
  same('pooling', passage.pooling, query.pooling);
  same('normalize', passage.normalize, query.normalize);
  same('maxLength', passage.maxLength, query.maxLength);
  same('vocabSize', passage.vocabSize, query.vocabSize);
  same('padTokenId', passage.padTokenId, query.padTokenId);
  same('specialTokens', sorted(passage.specialTokens), sorted(query.specialTokens));
  same('prefixes', passage.prefixes, query.prefixes);
  if (tokenizerSha(passage) === undefined) out.push(`${passage.name}: no tokenizer file listed`);
  return out;
}

/** `record`'s entries by key, so that key order never makes two equal records differ. */
function sorted(record: Readonly<Record<string, number>>): [string, number][] {
  return Object.entries(record).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
}

/**
 * Throws unless `query` may encode queries against `passage`'s token states
 * ({@link queryModelDifferences}).
 * @throws ConfigError naming both models and every difference
 */
export function assertQueryModel(passage: ModelManifest, query: ModelManifest): void {
  const differences = queryModelDifferences(passage, query);
  if (differences.length > 0)
    throw new ConfigError(
      `query model ${query.name} cannot encode queries for ${passage.name}'s passages: ${differences.join('; ')}`,
    );
}
