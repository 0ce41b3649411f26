import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { z } from 'zod';
import { ArtifactCorruptError, ConfigError } from '@bfe/core';
import { readJson } from './model-cache.js';
import type { ModelManifest } from './model-manifest.js';

// What a Hugging Face-layout model directory says about itself: the manifest facts read from
// config.json, tokenizer.json and the sentence-transformers configs.

/** Facts a caller states instead of reading them from the directory's configs. */
export interface ModelFactOverrides {
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
  options: ModelFactOverrides,
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
