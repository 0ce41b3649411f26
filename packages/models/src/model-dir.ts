import { existsSync } from 'node:fs';
import { copyFile, mkdir } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { BfeError, ConfigError, DataMissingError } from '@bfe/core';
import {
  assertModelName,
  hashFiles,
  installAtomically,
  isDirectory,
  isSafeRelativePath,
  loadModelManifest,
  modelCacheDir,
  type ModelCacheOptions,
  type ModelFetchResult,
} from './model-cache.js';
import { describeModelDir, type ModelFactOverrides } from './model-facts.js';
import type { ModelManifest } from './model-manifest.js';
import { getModelSpec } from './model-registry.js';

// `bfe model fetch --model-dir`: a local Hugging Face-layout ONNX directory into the cache, its
// manifest facts read from the directory's own configuration files.

/** Options of {@link importModelDir}; each fact overrides what the directory's configs say. */
export interface ImportModelOptions extends ModelCacheOptions, ModelFactOverrides {
  /** Cache name (default: the directory's name, lower-cased). */
  readonly name?: string;
  /** The graph, relative to the directory (default `onnx/model.onnx`, else `model.onnx`). */
  readonly onnxFile?: string;
}

// Files of an HF / sentence-transformers directory worth keeping beside the graph: they are
// what the manifest's facts were read from.
const OPTIONAL_CONFIG_FILES = [
  'tokenizer_config.json',
  'special_tokens_map.json',
  'modules.json',
  'sentence_bert_config.json',
  'config_sentence_transformers.json',
  '1_Pooling/config.json',
] as const;

/**
 * Imports a local Hugging Face-layout ONNX directory (Xenova/* or onnx-community/* exports:
 * `onnx/model.onnx` or `model.onnx`, `tokenizer.json`, `config.json`, optionally
 * `tokenizer_config.json`, `special_tokens_map.json`, `1_Pooling/config.json`,
 * `config_sentence_transformers.json` with prompts): copies the files into the cache, reads
 * pooling, dimension, special tokens and prefixes from the configs (options override them),
 * hashes everything and writes the manifest — atomically, like {@link fetchModel}.
 *
 * @throws DataMissingError when the graph, `tokenizer.json` or `config.json` is missing
 * @throws ConfigError when the pooling is not stated (pass `pooling`) or not supported
 * @throws ArtifactCorruptError when the tokenizer has ids beyond the model's vocabulary
 * @example
 * const r = await importModelDir('/models/Xenova/bge-small-en-v1.5', { pooling: 'cls' });
 * r.manifest.onnxFile; // 'onnx/model.onnx'
 */
export async function importModelDir(
  sourceDir: string,
  options: ImportModelOptions = {},
): Promise<ModelFetchResult> {
  const started = performance.now();
  const src = resolve(sourceDir);
  if (!(await isDirectory(src))) {
    throw new DataMissingError(`${src} is not a directory.`, {
      suggestion:
        'Point --model-dir at a Hugging Face-layout ONNX export (tokenizer.json, config.json, onnx/model.onnx).',
    });
  }
  const name =
    options.name ??
    basename(src)
      .toLowerCase()
      .replace(/[^a-z0-9._-]+/g, '-');
  assertModelName(name);
  if (getModelSpec(name) !== undefined) {
    throw new ConfigError(`'${name}' is a registered model; a local import needs another name.`, {
      suggestion: `Run \`bfe model fetch ${name}\` for the registered files, or \`bfe model fetch my-${name} --model-dir ${src}\`.`,
    });
  }
  const env = options.env ?? process.env;
  const cacheRoot = resolve(options.cacheDir ?? modelCacheDir(env));
  const dir = join(cacheRoot, name);
  const progress = options.onProgress ?? (() => undefined);

  const onnxFile =
    options.onnxFile ?? ['onnx/model.onnx', 'model.onnx'].find((f) => existsSync(join(src, f)));
  if (onnxFile === undefined || !existsSync(join(src, onnxFile))) {
    throw new DataMissingError(
      `${src} has no ONNX graph (looked for ${options.onnxFile ?? 'onnx/model.onnx, model.onnx'}).`,
      { suggestion: 'Name the graph with --onnx-file <path inside the directory>.' },
    );
  }
  if (!isSafeRelativePath(onnxFile))
    throw new ConfigError(`--onnx-file must be inside ${src}: ${onnxFile}`);
  for (const required of ['tokenizer.json', 'config.json']) {
    if (!existsSync(join(src, required))) {
      throw new DataMissingError(`${src} has no ${required}.`, {
        suggestion:
          'A Hugging Face-layout export has tokenizer.json and config.json beside the graph.',
      });
    }
  }
  const facts = await describeModelDir(src, onnxFile, options);

  // External weights (large exports) must stay beside the graph under the name it records.
  const copies = [onnxFile, 'tokenizer.json', 'config.json'];
  for (const extra of [`${onnxFile}_data`, `${onnxFile}.data`, ...OPTIONAL_CONFIG_FILES]) {
    if (existsSync(join(src, extra))) copies.push(extra);
  }

  const existing = existsSync(dir) && options.force !== true ? dir : undefined;
  let cached: ModelManifest | undefined;
  const manifest = await installAtomically(cacheRoot, name, async (work) => {
    progress({ kind: 'step', message: `copying ${copies.length} file(s) from ${src}` });
    for (const rel of copies) {
      await mkdir(dirname(join(work, rel)), { recursive: true });
      await copyFile(join(src, rel), join(work, rel));
    }
    const files = await hashFiles(work);
    const made: ModelManifest = {
      schemaVersion: 1,
      name,
      ...facts,
      source: { kind: 'local', detail: src },
      files,
      onnxFile,
      tokenizerFile: 'tokenizer.json',
      modelSha256: files.find((f) => f.path === onnxFile)?.sha256 ?? '',
      createdAt: new Date().toISOString(),
    };
    // The same files and facts as the cached copy: keep that one (and its createdAt).
    if (existing !== undefined) {
      try {
        const old = await loadModelManifest(existing, { verifyHashes: true });
        if (isDeepStrictEqual({ ...old, createdAt: '' }, { ...made, createdAt: '' })) {
          cached = old;
          return undefined;
        }
      } catch (error) {
        if (!(error instanceof BfeError)) throw error;
        progress({
          kind: 'warning',
          message: `cached copy is damaged (${error.message}); replacing it`,
        });
      }
    }
    return made;
  });
  const seconds = (performance.now() - started) / 1000;
  const attempt = { source: `local ${src}`, ok: true, message: 'imported', seconds };
  if (cached !== undefined) {
    return { name, dir, status: 'cached', manifest: cached, attempts: [attempt], seconds };
  }
  if (manifest === undefined) throw new Error('importModelDir: no manifest was made');
  return {
    name,
    dir,
    status: existing === undefined && options.force !== true ? 'fetched' : 'refetched',
    manifest,
    attempts: [attempt],
    seconds,
  };
}
