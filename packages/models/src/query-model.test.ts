import { describe, expect, it } from 'vitest';
import { ConfigError } from '@bfe/core';
import { modelManifestSchema, type ModelManifest } from './model-manifest.js';
import { assertQueryModel, queryModelDifferences } from './query-model.js';

const sha = (c: string): string => c.repeat(64);

const fp32: ModelManifest = modelManifestSchema.parse({
  schemaVersion: 1,
  name: 'all-minilm-l6-v2',
  modelId: 'sentence-transformers/all-MiniLM-L6-v2',
  source: { kind: 'local', detail: 'test' },
  licence: 'Apache-2.0',
  files: [
    { path: 'model.onnx', bytes: 10, sha256: sha('a') },
    { path: 'tokenizer.json', bytes: 5, sha256: sha('b') },
  ],
  onnxFile: 'model.onnx',
  tokenizerFile: 'tokenizer.json',
  dtype: 'float32',
  pooling: 'mean',
  normalize: true,
  dimension: 384,
  maxLength: 128,
  maxPositions: 512,
  vocabSize: 30522,
  specialTokens: { '[PAD]': 0, '[CLS]': 101, '[SEP]': 102 },
  padTokenId: 0,
  prefixes: { query: '', passage: '' },
  modelSha256: sha('a'),
  createdAt: '2026-12-07T00:00:00.000Z',
});

// The int8 graph of the same model: another ONNX file, the same tokenizer file.
const int8: ModelManifest = {
  ...fp32,
  name: 'all-minilm-l6-v2-int8pc',
  dtype: 'int8',
  files: [{ path: 'model.onnx', bytes: 4, sha256: sha('c') }, fp32.files[1]!],
  modelSha256: sha('c'),
  // The same special tokens listed in another key order.
  specialTokens: { '[SEP]': 102, '[CLS]': 101, '[PAD]': 0 },
};

describe('queryModelDifferences', () => {
  it('lets another graph of the same model, tokenizer and settings encode the queries', () => {
    expect(queryModelDifferences(fp32, int8)).toEqual([]);
    expect(() => assertQueryModel(fp32, int8)).not.toThrow();
  });

  it.each<[string, Partial<ModelManifest>, string]>([
    ['another upstream model', { modelId: 'intfloat/multilingual-e5-small' }, 'modelId'],
    [
      'another tokenizer file',
      { files: [fp32.files[0]!, { path: 'tokenizer.json', bytes: 5, sha256: sha('d') }] },
      'tokenizer sha256',
    ],
    ['another dimension', { dimension: 768 }, 'dimension'],
    ['another pooling', { pooling: 'cls' }, 'pooling'],
    ['no normalisation', { normalize: false }, 'normalize'],
    ['another truncation', { maxLength: 256 }, 'maxLength'],
    [
      'another special token id',
      { specialTokens: { '[PAD]': 0, '[CLS]': 1, '[SEP]': 2 } },
      'specialTokens',
    ],
    ['a query prefix', { prefixes: { query: 'query: ', passage: '' } }, 'prefixes'],
  ])('refuses %s, naming the field', (_, change, field) => {
    const other = { ...int8, ...change };
    const differences = queryModelDifferences(fp32, other);
    expect(differences).toHaveLength(1);
    expect(differences[0]).toMatch(new RegExp(`^${field}: `));
    expect(() => assertQueryModel(fp32, other)).toThrow(ConfigError);
    expect(() => assertQueryModel(fp32, other)).toThrow(/all-minilm-l6-v2-int8pc cannot encode/);
  });

  it('refuses a passage model whose tokenizer file is not listed', () => {
    const bare = { ...fp32, files: [fp32.files[0]!] };
    expect(queryModelDifferences(bare, { ...bare, name: 'x' })).toEqual([
      'all-minilm-l6-v2: no tokenizer file listed',
    ]);
  });
});
