import { Command } from 'commander';
import { collect, parseSetOptions } from '../cli/options.js';

interface EncodeOptions {
  dataset: string;
  model: string;
  modelDir?: string;
  dtype: string;
  maxLength?: string;
  threads?: string;
  ep: string;
  out: string;
  set: string[];
  json?: boolean;
  quiet?: boolean;
}

/** `bfe encode`: one frozen encoder pass over a dataset's memories and queries (METHOD.md §1). */
export function encodeCommand(): Command {
  return new Command('encode')
    .description(
      'encode a dataset once: pooled and content-token Arrow banks for memories and queries',
    )
    .requiredOption('--dataset <name>', 'dataset name, or lmeb:<folder>')
    .requiredOption('--out <dir>', 'output directory (replaced atomically)')
    .option('--model <name>', 'model in the cache (see `bfe model fetch`)', 'all-minilm-l6-v2')
    .option('--model-dir <dir>', 'a model directory holding bfe-model.json (overrides --model)')
    .option('--dtype <dtype>', 'stored vector type: float32 or float16', 'float32')
    .option('--max-length <n>', "truncation length in tokens (default: the model manifest's)")
    .option('--threads <n>', 'onnxruntime intra-op threads (default: all cores)')
    .option('--ep <provider>', 'execution provider: cpu or webgpu', 'cpu')
    .option('--set <key=value>', 'dataset option (repeatable)', collect, [])
    .option('--json', 'print the bank manifest as JSON')
    .option('--quiet', 'no progress output')
    .action(async (opts: EncodeOptions) => {
      const { z } = await import('zod');
      const { ConfigError } = await import('@bfe/core');
      const schema = z.strictObject({
        dtype: z.enum(['float32', 'float16']),
        maxLength: z.coerce.number().int().min(2).optional(),
        threads: z.coerce.number().int().min(1).optional(),
        ep: z.enum(['cpu', 'webgpu']),
      });
      const parsed = schema.safeParse({
        dtype: opts.dtype,
        maxLength: opts.maxLength,
        threads: opts.threads,
        ep: opts.ep,
      });
      if (!parsed.success)
        throw new ConfigError(`Invalid encode options:\n${z.prettifyError(parsed.error)}`);
      const o = parsed.data;
      const [{ dataLocationFromEnv, loadDataset }, encoder, models] = await Promise.all([
        import('@bfe/datasets'),
        import('@bfe/encoder'),
        import('@bfe/models'),
      ]);
      const modelDir = opts.modelDir ?? models.resolveModelDir(opts.model);
      const manifest = await models.loadModelManifest(modelDir);
      // Only the label-free benchmark goes on: the labels stay behind in this scope.
      const { benchmark } = await loadDataset(opts.dataset, {
        location: dataLocationFromEnv(),
        options: parseSetOptions(opts.set),
      });
      const model = await encoder.openEncoder(modelDir, manifest, {
        executionProvider: o.ep,
        ...(o.maxLength === undefined ? {} : { maxLength: o.maxLength }),
        ...(o.threads === undefined ? {} : { threads: o.threads }),
      });
      const { progressPrinter } = await import('../cli/progress.js');
      const progress = progressPrinter(opts.quiet === true);
      try {
        const bank = await encoder.encodeBenchmark(benchmark, model, opts.out, {
          dtype: o.dtype,
          executionProvider: o.ep,
          onProgress: (role, done, total, tokens) =>
            progress(`encode ${role}`, done, total, `${tokens} tokens`),
        });
        if (opts.json === true) {
          console.log(JSON.stringify({ out: opts.out, ...bank }, null, 2));
          return;
        }
        const rate = (bank.memories.tokens + bank.queries.tokens) / bank.seconds;
        console.log(
          [
            `bank       ${opts.out}`,
            `model      ${bank.model.name} (${bank.model.sha256.slice(0, 12)}…), ${bank.dtype}, max length ${bank.maxLength}`,
            `memories   ${bank.memories.rows} rows, ${bank.memories.tokens} content tokens, ${bank.memories.truncated} truncated, ${bank.memories.withoutTokens} without content tokens`,
            `queries    ${bank.queries.rows} rows, ${bank.queries.tokens} content tokens, ${bank.queries.truncated} truncated, ${bank.queries.withoutTokens} without content tokens`,
            `time       ${bank.seconds.toFixed(1)} s (${rate.toFixed(0)} content tokens/s)`,
          ].join('\n'),
        );
      } finally {
        await model.dispose();
      }
    });
}
