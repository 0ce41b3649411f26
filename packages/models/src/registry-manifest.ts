import { isDeepStrictEqual } from 'node:util';
import { FetchError } from '@bfe/core';
import { hashFiles } from './model-cache.js';
import { describeModelDir } from './model-facts.js';
import type { ModelManifest } from './model-manifest.js';
import type { ModelSpec } from './model-spec.js';

// A registry entry's manifest: built from the files a source delivered (checked against what
// those files say), and compared with a cached copy to tell whether it is still current.

/**
 * Why a cached manifest is not what the registry entry would produce now, if it is not.
 * (Package-internal.)
 */
export function manifestMatchesSpec(manifest: ModelManifest, spec: ModelSpec): string | undefined {
  if (manifest.source.kind === 'local') return 'imported with --model-dir, not fetched';
  const tokenizer = manifest.files.find((f) => f.path === manifest.tokenizerFile);
  if (tokenizer?.sha256 !== spec.tokenizerSha256) return 'another tokenizer.json';
  const keys = [
    'name',
    'modelId',
    'dtype',
    'pooling',
    'normalize',
    'dimension',
    'maxLength',
    'maxPositions',
    'vocabSize',
    'padTokenId',
    'onnxFile',
    'tokenizerFile',
    'licence',
  ] as const;
  for (const key of keys) {
    if (manifest[key] !== spec[key])
      return `${key} ${String(manifest[key])}, now ${String(spec[key])}`;
  }
  if (!isDeepStrictEqual(manifest.prefixes, spec.prefixes)) return 'other prefixes';
  if (manifest.note !== spec.note) return 'another note';
  if (!isDeepStrictEqual(manifest.specialTokens, spec.specialTokens)) return 'other special tokens';
  return undefined;
}

/**
 * The manifest of a registry entry fetched into `work`: every file hashed, and the entry's
 * facts checked against the delivered `config.json` and `tokenizer.json` (a wrong entry is a bug
 * in bfe, so it throws a plain Error). (Package-internal.)
 */
export async function buildRegistryManifest(
  spec: ModelSpec,
  work: string,
  source: ModelManifest['source'],
): Promise<ModelManifest> {
  const files = await hashFiles(work);
  const onnx = files.find((f) => f.path === spec.onnxFile);
  if (onnx === undefined) throw new FetchError(`The source delivered no ${spec.onnxFile}.`);
  // The registry's facts must be what the files say; a wrong entry is a bug in bfe.
  const read = await describeModelDir(work, spec.onnxFile, {
    pooling: spec.pooling,
    maxLength: spec.maxLength,
  });
  const checks: [string, unknown, unknown][] = [
    ['dimension', read.dimension, spec.dimension],
    ['maxPositions', read.maxPositions, spec.maxPositions],
    ['vocabSize', read.vocabSize, spec.vocabSize],
    ['padTokenId', read.padTokenId, spec.padTokenId],
    ['specialTokens', read.specialTokens, spec.specialTokens],
  ];
  for (const [key, actual, expected] of checks) {
    if (!isDeepStrictEqual(actual, expected)) {
      throw new Error(
        `Model registry entry '${spec.name}': ${key} is ${JSON.stringify(expected)}, but its files say ${JSON.stringify(actual)}.`,
      );
    }
  }
  return {
    schemaVersion: 1,
    name: spec.name,
    modelId: spec.modelId,
    source,
    licence: spec.licence,
    files,
    onnxFile: spec.onnxFile,
    tokenizerFile: spec.tokenizerFile,
    dtype: spec.dtype,
    pooling: spec.pooling,
    normalize: spec.normalize,
    dimension: spec.dimension,
    maxLength: spec.maxLength,
    maxPositions: spec.maxPositions,
    vocabSize: spec.vocabSize,
    specialTokens: { ...spec.specialTokens },
    padTokenId: spec.padTokenId,
    prefixes: { ...spec.prefixes },
    ...(spec.note === undefined ? {} : { note: spec.note }),
    modelSha256: onnx.sha256,
    createdAt: new Date().toISOString(),
  };
}
