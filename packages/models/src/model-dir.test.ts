import { existsSync, readdirSync, rmSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ArtifactCorruptError, ConfigError, DataMissingError, bytesSha256 } from '@bfe/core';
import { loadModelManifest, modelCacheDir, resolveModelDir } from './model-cache.js';
import { importModelDir } from './model-dir.js';
import { MODEL_MANIFEST_FILE, modelManifestSchema } from './model-manifest.js';
import { tmpDir } from '@bfe/core/testing';

const tmp = (): string => tmpDir('bfe-model-dir-');

async function writeTree(root: string, files: Record<string, string | Uint8Array>): Promise<void> {
  for (const [rel, content] of Object.entries(files)) {
    const path = join(root, rel);
    await mkdir(dirname(path), { recursive: true });
    await writeFile(path, content);
  }
}

// A tiny BERT-like export: 4-d states, 10-token vocabulary; the graph bytes are opaque here.
const GRAPH = new Uint8Array([8, 7, 18, 3, 98, 102, 101, 0, 1, 2, 3]);
const TOKENIZER = {
  version: '1.0',
  added_tokens: [
    { id: 0, content: '[PAD]', special: true },
    { id: 1, content: '[UNK]', special: true },
    { id: 2, content: '[CLS]', special: true },
    { id: 3, content: '[SEP]', special: true },
    { id: 9, content: '<extra>', special: false },
  ],
  padding: null,
  model: {
    type: 'WordPiece',
    vocab: { '[PAD]': 0, '[UNK]': 1, '[CLS]': 2, '[SEP]': 3, a: 4, b: 5, c: 6, d: 7, e: 8 },
  },
};
const CONFIG = {
  _name_or_path: 'tiny-org/tiny-bert',
  model_type: 'bert',
  hidden_size: 4,
  max_position_embeddings: 16,
  vocab_size: 10,
  pad_token_id: 0,
};
function sentenceTransformersFiles(): Record<string, string> {
  return {
    'modules.json': JSON.stringify([
      { idx: 0, name: '0', path: '', type: 'sentence_transformers.models.Transformer' },
      { idx: 1, name: '1', path: '1_Pooling', type: 'sentence_transformers.models.Pooling' },
      { idx: 2, name: '2', path: '2_Normalize', type: 'sentence_transformers.models.Normalize' },
    ]),
    '1_Pooling/config.json': JSON.stringify({
      word_embedding_dimension: 4,
      pooling_mode_cls_token: true,
      pooling_mode_mean_tokens: false,
    }),
    'config_sentence_transformers.json': JSON.stringify({
      prompts: { query: 'query: ', passage: 'passage: ' },
    }),
    'special_tokens_map.json': JSON.stringify({ pad_token: '[PAD]', cls_token: '[CLS]' }),
    'README.md': '---\nlanguage: en\nlicense: mit\n---\n# tiny\n',
  };
}

async function xenovaLayout(extra: Record<string, string | Uint8Array> = {}): Promise<string> {
  const dir = join(tmp(), 'Tiny-Model');
  await writeTree(dir, {
    'onnx/model.onnx': GRAPH,
    'tokenizer.json': JSON.stringify(TOKENIZER),
    'config.json': JSON.stringify(CONFIG),
    ...extra,
  });
  return dir;
}

describe('resolveModelDir / modelCacheDir', () => {
  it('uses BFE_MODEL_DIR, else XDG_CACHE_HOME, else ~/.cache, one folder per name', () => {
    expect(resolveModelDir('all-minilm-l6-v2', { BFE_MODEL_DIR: '/m' })).toBe(
      '/m/all-minilm-l6-v2',
    );
    expect(modelCacheDir({ XDG_CACHE_HOME: '/xdg' })).toBe('/xdg/bfe/models');
    expect(modelCacheDir({})).toMatch(/\.cache\/bfe\/models$/);
  });

  it('refuses names that are not one safe path segment', () => {
    for (const bad of ['../x', 'a/b', 'UPPER', '', '.hidden']) {
      expect(() => resolveModelDir(bad, { BFE_MODEL_DIR: '/m' })).toThrow(ConfigError);
    }
  });
});

describe('importModelDir', () => {
  it('imports the Xenova layout (onnx/model.onnx) with facts read from its configs', async () => {
    const src = await xenovaLayout(sentenceTransformersFiles());
    const cacheDir = tmp();
    const r = await importModelDir(src, { cacheDir });
    expect(r.status).toBe('fetched');
    expect(r.name).toBe('tiny-model');
    expect(r.dir).toBe(join(cacheDir, 'tiny-model'));
    const m = r.manifest;
    expect(m).toMatchObject({
      modelId: 'tiny-org/tiny-bert',
      source: { kind: 'local', detail: src },
      licence: 'mit',
      onnxFile: 'onnx/model.onnx',
      tokenizerFile: 'tokenizer.json',
      dtype: 'float32',
      pooling: 'cls',
      normalize: true,
      dimension: 4,
      maxLength: 16, // the default 128, capped at the model's positions
      maxPositions: 16,
      vocabSize: 10,
      padTokenId: 0,
      specialTokens: { '[PAD]': 0, '[UNK]': 1, '[CLS]': 2, '[SEP]': 3 },
      prefixes: { query: 'query: ', passage: 'passage: ' },
      modelSha256: bytesSha256(GRAPH),
    });
    // Every copied file is listed with its hash; README.md is read, not copied.
    expect(m.files.map((f) => f.path)).toEqual([
      '1_Pooling/config.json',
      'config.json',
      'config_sentence_transformers.json',
      'modules.json',
      'onnx/model.onnx',
      'special_tokens_map.json',
      'tokenizer.json',
    ]);
    const onDisk = modelManifestSchema.parse(
      JSON.parse(await readFile(join(r.dir, MODEL_MANIFEST_FILE), 'utf8')),
    );
    expect(onDisk).toEqual(m);
    await expect(loadModelManifest(r.dir, { verifyHashes: true })).resolves.toEqual(m);
  });

  it('imports the flat layout (model.onnx) and takes options over the configs', async () => {
    const src = join(tmp(), 'flat');
    await writeTree(src, {
      'model_quantized.onnx': GRAPH,
      'model.onnx_data': 'external weights',
      'tokenizer.json': JSON.stringify(TOKENIZER),
      'config.json': JSON.stringify(CONFIG),
      ...sentenceTransformersFiles(),
    });
    const r = await importModelDir(src, {
      cacheDir: tmp(),
      name: 'flat-one',
      onnxFile: 'model_quantized.onnx',
      pooling: 'mean',
      queryPrefix: 'q: ',
      passagePrefix: '',
      maxLength: 8,
      modelId: 'me/flat',
    });
    expect(r.manifest).toMatchObject({
      name: 'flat-one',
      modelId: 'me/flat',
      onnxFile: 'model_quantized.onnx',
      dtype: 'int8', // from the file name
      pooling: 'mean',
      maxLength: 8,
      prefixes: { query: 'q: ', passage: '' },
    });
    expect(existsSync(join(r.dir, 'model_quantized.onnx'))).toBe(true);

    const plain = join(tmp(), 'plain');
    await writeTree(plain, {
      'model.onnx': GRAPH,
      'model.onnx_data': 'external weights',
      'tokenizer.json': JSON.stringify(TOKENIZER),
      'config.json': JSON.stringify(CONFIG),
    });
    const p = await importModelDir(plain, { cacheDir: tmp(), pooling: 'last' });
    expect(p.manifest.onnxFile).toBe('model.onnx');
    // External weights travel with the graph, under the name the graph records.
    expect(p.manifest.files.map((f) => f.path)).toContain('model.onnx_data');
    // No modules.json: nothing says, and retrieval encoders normalise.
    expect(p.manifest.normalize).toBe(true);
    expect(p.manifest.prefixes).toEqual({ query: '', passage: '' });
    expect(p.manifest.licence).toMatch(/unknown/);
  });

  it('asks for --pooling when the directory does not state it, and refuses unsupported modes', async () => {
    const src = await xenovaLayout();
    const error = await importModelDir(src, { cacheDir: tmp() }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as Error).message).toMatch(/does not say how the model pools/);
    expect((error as ConfigError).suggestion).toMatch(/--pooling mean\|cls\|last/);
    const maxPool = await xenovaLayout({
      '1_Pooling/config.json': JSON.stringify({ pooling_mode_max_tokens: true }),
    });
    await expect(importModelDir(maxPool, { cacheDir: tmp() })).rejects.toBeInstanceOf(ConfigError);
  });

  it('names what is missing', async () => {
    const noGraph = join(tmp(), 'no-graph');
    await writeTree(noGraph, { 'tokenizer.json': '{}', 'config.json': '{}' });
    await expect(importModelDir(noGraph, { cacheDir: tmp() })).rejects.toThrow(
      /no ONNX graph \(looked for onnx\/model.onnx, model.onnx\)/,
    );
    const noTokenizer = join(tmp(), 'no-tok');
    await writeTree(noTokenizer, { 'model.onnx': GRAPH, 'config.json': '{}' });
    const error = await importModelDir(noTokenizer, { cacheDir: tmp() }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DataMissingError);
    expect((error as Error).message).toMatch(/no tokenizer\.json/);
    await expect(importModelDir(join(tmp(), 'absent'), { cacheDir: tmp() })).rejects.toThrow(
      DataMissingError,
    );
  });

  it('refuses a tokenizer with ids beyond the model vocabulary', async () => {
    const src = await xenovaLayout({
      'config.json': JSON.stringify({ ...CONFIG, vocab_size: 9 }),
      ...sentenceTransformersFiles(),
    });
    await expect(importModelDir(src, { cacheDir: tmp() })).rejects.toThrow(
      /token id 9, but config.json says vocab_size 9/,
    );
  });

  it('refuses a registered name and paths outside the directory', async () => {
    const src = await xenovaLayout(sentenceTransformersFiles());
    await expect(
      importModelDir(src, { cacheDir: tmp(), name: 'all-minilm-l6-v2' }),
    ).rejects.toBeInstanceOf(ConfigError);
    await writeFile(join(dirname(src), 'outside.onnx'), GRAPH);
    await expect(
      importModelDir(src, { cacheDir: tmp(), onnxFile: '../outside.onnx' }),
    ).rejects.toBeInstanceOf(ConfigError);
  });

  it('keeps a valid import ("cached"), replaces a changed or damaged one', async () => {
    const src = await xenovaLayout(sentenceTransformersFiles());
    const cacheDir = tmp();
    const first = await importModelDir(src, { cacheDir });
    const again = await importModelDir(src, { cacheDir });
    expect(again.status).toBe('cached');
    expect(again.manifest.createdAt).toBe(first.manifest.createdAt);

    await writeFile(join(first.dir, 'tokenizer.json'), JSON.stringify({ ...TOKENIZER, x: 1 }));
    const repaired = await importModelDir(src, { cacheDir });
    expect(repaired.status).toBe('refetched');
    await expect(loadModelManifest(first.dir, { verifyHashes: true })).resolves.toBeDefined();

    await writeFile(join(src, 'onnx/model.onnx'), new Uint8Array([1, 2, 3]));
    const changed = await importModelDir(src, { cacheDir });
    expect(changed.status).toBe('refetched');
    expect(changed.manifest.modelSha256).toBe(bytesSha256(new Uint8Array([1, 2, 3])));
    // Only the model folder is left: no temporary or discarded siblings.
    expect(readdirSync(cacheDir)).toEqual(['tiny-model']);
  });
});

describe('loadModelManifest', () => {
  async function imported(): Promise<string> {
    const src = await xenovaLayout(sentenceTransformersFiles());
    return (await importModelDir(src, { cacheDir: tmp() })).dir;
  }
  async function editManifest(dir: string, edit: (m: Record<string, unknown>) => void) {
    const path = join(dir, MODEL_MANIFEST_FILE);
    const m = JSON.parse(await readFile(path, 'utf8')) as Record<string, unknown>;
    edit(m);
    await writeFile(path, JSON.stringify(m));
  }

  it('names `bfe model fetch` when there is no model', async () => {
    const dir = join(tmp(), 'all-minilm-l6-v2');
    const error = await loadModelManifest(dir).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DataMissingError);
    expect((error as DataMissingError).suggestion).toMatch(/bfe model fetch all-minilm-l6-v2/);
  });

  it('rejects a manifest that is not JSON or not valid, naming the field', async () => {
    const dir = await imported();
    await editManifest(dir, (m) => {
      m.dimension = -1;
    });
    await expect(loadModelManifest(dir)).rejects.toThrow(/dimension/);
    await writeFile(join(dir, MODEL_MANIFEST_FILE), '{ not json');
    await expect(loadModelManifest(dir)).rejects.toBeInstanceOf(ArtifactCorruptError);
  });

  it('checks that the graph and tokenizer are listed and modelSha256 is the graph hash', async () => {
    const dir = await imported();
    await editManifest(dir, (m) => {
      m.modelSha256 = '0'.repeat(64);
    });
    await expect(loadModelManifest(dir)).rejects.toThrow(/modelSha256/);
    await editManifest(dir, (m) => {
      m.tokenizerFile = 'vocab.txt';
    });
    await expect(loadModelManifest(dir)).rejects.toThrow(/tokenizerFile 'vocab.txt'/);
  });

  it('refuses listed paths that leave the directory', async () => {
    const dir = await imported();
    await editManifest(dir, (m) => {
      (m.files as { path: string }[])[0]!.path = '../../etc/passwd';
    });
    await expect(loadModelManifest(dir)).rejects.toThrow(/outside the model/);
  });

  it('detects a missing file, a size change, and (with verifyHashes) a same-size change', async () => {
    const dir = await imported();
    await writeFile(join(dir, 'config.json'), JSON.stringify({ ...CONFIG, hidden_size: 5 }));
    await expect(loadModelManifest(dir)).resolves.toBeDefined();
    await expect(loadModelManifest(dir, { verifyHashes: true })).rejects.toThrow(
      /config\.json has SHA-256/,
    );

    await writeFile(join(dir, 'tokenizer.json'), '{}');
    await expect(loadModelManifest(dir)).rejects.toThrow(/tokenizer\.json has 2 bytes/);

    rmSync(join(dir, 'onnx/model.onnx'));
    const error = await loadModelManifest(dir).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DataMissingError);
    expect((error as Error).message).toMatch(/onnx\/model\.onnx is missing/);
  });
});
