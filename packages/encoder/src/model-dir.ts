import { existsSync } from 'node:fs';
import { copyFile, mkdir, readFile } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { z } from 'zod';
import { ArtifactCorruptError, BfeError, ConfigError, DataMissingError } from '@bfe/core';
import {
  assertModelName,
  hashFiles,
  installAtomically,
  isDirectory,
  isSafeRelativePath,
  loadModelManifest,
  modelCacheDir,
  readJson,
  type ModelCacheOptions,
  type ModelFetchResult,
} from './model-cache.js';
import type { ModelManifest } from './model-manifest.js';
import { getModelSpec } from './model-registry.js';

// `bfe model fetch --model-dir`: a local Hugging Face-layout ONNX directory into the cache, its
// manifest facts read from the directory's own configuration files.

/** Options of {@link importModelDir}; each overrides what the directory's configs say. */
export interface ImportModelOptions extends ModelCacheOptions {
  /** Cache name (default: the directory's name, lower-cased). */
  readonly name?: string;
  /** The graph, relative to the directory (default `onnx/model.onnx`, else `model.onnx`). */
  readonly onnxFile?: string;
  readonly pooling?: ModelManifest['pooling'];
  readonly normalize?: boolean;
  readonly queryPrefix?: string;
  readonly passagePrefix?: string;
  /** Default truncation length (default 128, at most the model's positions). */
  readonly maxLength?: number;
  readonly dtype?: ModelManifest['dtype'];
  readonly modelId?: string;
  readonly licence?: string;
}

/** Default truncation length of an imported model, as in the reproduction notes. */
const DEFAULT_MAX_LENGTH = 128;

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

/** The manifest fields read from a model directory's configuration (all but files and source). */
export type ModelFacts = Omit<
  ModelManifest,
  | 'schemaVersion'
  | 'name'
  | 'source'
  | 'files'
  | 'onnxFile'
  | 'tokenizerFile'
  | 'modelSha256'
  | 'createdAt'
>;

// Only the fields read here; the files carry many more.
const hfConfigSchema = z.looseObject({
  _name_or_path: z.string().optional(),
  model_type: z.string().optional(),
  hidden_size: z.number().int().positive().optional(),
  d_model: z.number().int().positive().optional(),
  dim: z.number().int().positive().optional(),
  max_position_embeddings: z.number().int().positive().optional(),
  n_positions: z.number().int().positive().optional(),
  vocab_size: z.number().int().positive(),
  pad_token_id: z.number().int().nonnegative().nullable().optional(),
});
const tokenizerJsonSchema = z.looseObject({
  added_tokens: z.array(
    z.looseObject({
      id: z.number().int().nonnegative(),
      content: z.string(),
      special: z.boolean(),
    }),
  ),
  padding: z
    .looseObject({ pad_id: z.number().int().nonnegative().optional() })
    .nullable()
    .optional(),
  model: z.looseObject({
    vocab: z
      .union([z.record(z.string(), z.number()), z.array(z.tuple([z.string(), z.number()]))])
      .optional(),
  }),
});
const tokenText = z.union([z.string(), z.looseObject({ content: z.string() })]);
const specialTokensMapSchema = z.looseObject({ pad_token: tokenText.optional() });
const modulesSchema = z.array(z.looseObject({ path: z.string(), type: z.string() }));
const poolingConfigSchema = z.looseObject({
  word_embedding_dimension: z.number().int().positive().optional(),
  pooling_mode: z.string().optional(),
});
const stConfigSchema = z.looseObject({
  prompts: z.record(z.string(), z.string()).optional(),
});

// sentence-transformers' pooling modes bfe implements (METHOD.md §1).
const POOLING_MODES: Record<string, ModelManifest['pooling']> = {
  pooling_mode_mean_tokens: 'mean',
  pooling_mode_cls_token: 'cls',
  pooling_mode_lasttoken: 'last',
  mean: 'mean',
  cls: 'cls',
  lasttoken: 'last',
};

// RoBERTa-style models offset positions by pad_token_id + 1, so fewer tokens fit.
const OFFSET_POSITION_MODELS = new Set([
  'roberta',
  'xlm-roberta',
  'camembert',
  'longformer',
  'mpnet',
]);

/**
 * Reads the manifest facts of an HF-layout directory from its configs, with `options` taking
 * precedence. Also used on registry fetches to check the registry entry against its files.
 */
export async function describeModelDir(
  dir: string,
  onnxFile: string,
  options: Omit<ImportModelOptions, keyof ModelCacheOptions | 'name' | 'onnxFile'>,
): Promise<ModelFacts> {
  const config = await readConfig(dir, 'config.json', hfConfigSchema);
  const tokenizer = await readConfig(dir, 'tokenizer.json', tokenizerJsonSchema);
  if (config === undefined || tokenizer === undefined)
    throw new Error('describeModelDir: config.json and tokenizer.json are checked by the caller');
  const specialMap = await readConfig(dir, 'special_tokens_map.json', specialTokensMapSchema);
  const modules = await readConfig(dir, 'modules.json', modulesSchema);
  const poolingPath = modules?.find((m) => m.type.endsWith('.Pooling'))?.path ?? '1_Pooling';
  const poolingConfig = await readConfig(
    dir,
    join(poolingPath, 'config.json'),
    poolingConfigSchema,
  );
  const stConfig = await readConfig(dir, 'config_sentence_transformers.json', stConfigSchema);

  const dimension =
    config.hidden_size ?? config.d_model ?? config.dim ?? poolingConfig?.word_embedding_dimension;
  if (dimension === undefined)
    throw new ConfigError(`${join(dir, 'config.json')} states no hidden_size.`);
  const positions = config.max_position_embeddings ?? config.n_positions;
  if (positions === undefined) {
    throw new ConfigError(`${join(dir, 'config.json')} states no max_position_embeddings.`);
  }
  const offset = OFFSET_POSITION_MODELS.has(config.model_type ?? '')
    ? (config.pad_token_id ?? 1) + 1
    : 0;
  const maxPositions = positions - offset;

  const specialTokens: Record<string, number> = {};
  for (const t of tokenizer.added_tokens) if (t.special) specialTokens[t.content] = t.id;
  const vocab = tokenizer.model.vocab;
  const idOf = (token: string): number | undefined => {
    const added = tokenizer.added_tokens.find((t) => t.content === token);
    if (added !== undefined) return added.id;
    if (vocab === undefined) return undefined;
    if (Array.isArray(vocab)) {
      const i = vocab.findIndex(([piece]) => piece === token);
      return i < 0 ? undefined : i;
    }
    return vocab[token];
  };
  let maxId = -1;
  for (const t of tokenizer.added_tokens) maxId = Math.max(maxId, t.id);
  if (Array.isArray(vocab)) maxId = Math.max(maxId, vocab.length - 1);
  else if (vocab !== undefined) for (const id of Object.values(vocab)) if (id > maxId) maxId = id;
  if (maxId >= config.vocab_size) {
    throw new ArtifactCorruptError(
      `${join(dir, 'tokenizer.json')} has token id ${maxId}, but config.json says vocab_size ${config.vocab_size}: the tokenizer does not belong to this model.`,
    );
  }
  const padText = specialMap?.pad_token;
  const padToken = typeof padText === 'string' ? padText : padText?.content;
  const padTokenId =
    (padToken === undefined ? undefined : idOf(padToken)) ??
    tokenizer.padding?.pad_id ??
    config.pad_token_id ??
    undefined;
  if (padTokenId === undefined) {
    throw new ConfigError(
      `${dir}: no pad token in special_tokens_map.json, tokenizer.json or config.json.`,
    );
  }

  let pooling = options.pooling;
  if (pooling === undefined && poolingConfig !== undefined) {
    const modes =
      poolingConfig.pooling_mode !== undefined
        ? [poolingConfig.pooling_mode]
        : Object.entries(poolingConfig)
            .filter(([k, v]) => k.startsWith('pooling_mode_') && v === true)
            .map(([k]) => k);
    const mapped = modes.length === 1 ? POOLING_MODES[modes[0] ?? ''] : undefined;
    if (mapped === undefined) {
      throw new ConfigError(
        `${join(dir, poolingPath, 'config.json')} asks for pooling ${modes.join(' + ') || '(none)'}, which bfe does not implement.`,
        {
          suggestion: 'Pass --pooling mean|cls|last to choose one.',
        },
      );
    }
    pooling = mapped;
  }
  if (pooling === undefined) {
    throw new ConfigError(`${dir} does not say how the model pools (no 1_Pooling/config.json).`, {
      suggestion: 'Pass --pooling mean|cls|last (mean for all-MiniLM and e5, cls for bge).',
    });
  }

  const prompts = stConfig?.prompts ?? {};
  const readme = await readFile(join(dir, 'README.md'), 'utf8').catch(() => '');
  const licence =
    options.licence ??
    /^---[\s\S]*?^license:\s*(\S+)/m.exec(readme)?.[1] ??
    'unknown (not stated in the directory)';
  const maxLength = Math.min(options.maxLength ?? DEFAULT_MAX_LENGTH, maxPositions);
  const nameOrPath = config._name_or_path;
  return {
    modelId:
      options.modelId ??
      (nameOrPath !== undefined && /^[\w.-]+\/[\w.-]+$/.test(nameOrPath)
        ? nameOrPath
        : basename(dir)),
    licence,
    dtype: options.dtype ?? dtypeFromName(onnxFile),
    pooling,
    // Without modules.json nothing says; sentence encoders used for retrieval normalise.
    normalize:
      options.normalize ??
      (modules === undefined ? true : modules.some((m) => m.type.endsWith('.Normalize'))),
    dimension,
    maxLength,
    maxPositions,
    vocabSize: config.vocab_size,
    specialTokens,
    padTokenId,
    prefixes: {
      query: options.queryPrefix ?? prompts.query ?? '',
      passage: options.passagePrefix ?? prompts.passage ?? prompts.document ?? '',
    },
  };
}

function dtypeFromName(onnxFile: string): ModelManifest['dtype'] {
  const name = basename(onnxFile).toLowerCase();
  if (/fp16|float16/.test(name)) return 'float16';
  if (/q4|int4|bnb4/.test(name)) {
    throw new ConfigError(
      `${onnxFile}: 4-bit graphs are not supported; choose another with --onnx-file.`,
    );
  }
  if (/int8|uint8|quant|q8/.test(name)) return 'int8';
  return 'float32';
}

async function readConfig<T extends z.ZodType>(
  dir: string,
  rel: string,
  schema: T,
): Promise<z.infer<T> | undefined> {
  const path = join(dir, rel);
  if (!existsSync(path)) return undefined;
  const parsed = schema.safeParse(await readJson(path));
  if (!parsed.success) {
    throw new ArtifactCorruptError(
      `${path} is not what a Hugging Face model directory holds:\n${z.prettifyError(parsed.error)}`,
    );
  }
  return parsed.data;
}
