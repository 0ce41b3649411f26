import { existsSync } from 'node:fs';
import { copyFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { FetchError, fileSha256 } from '@bfe/core';
import type { FetchContext } from './fetch-context.js';
import type { ModelFetchResult } from './model-cache.js';
import type { ModelManifest } from './model-manifest.js';
import type { ModelSpec, QuantizeSource } from './model-spec.js';
import { toolScript } from './onnx-export.js';
import { runChecked } from './process-runner.js';

// A registry entry made from another registered model: its graph quantised by a committed
// script (tools/model/quantize_int8.py) in the export's virtualenv.

/** Files of `from`'s directory the quantised one does not take (its graph is replaced too). */
const NOT_KEPT = new Set(['bfe-model.json', 'model-info.json']);

/**
 * Quantises the graph of the fetched model `base` (the source's `from`) into `work`, beside
 * `base`'s tokenizer and configuration files (copied, so their hashes are `base`'s). Returns
 * the manifest's source. (Package-internal.)
 *
 * @throws FetchError when the script is missing or fails, or writes no graph
 */
export async function quantizeFrom(
  source: QuantizeSource,
  spec: ModelSpec,
  base: ModelFetchResult,
  work: string,
  ctx: FetchContext,
): Promise<ModelManifest['source']> {
  const { script, python } = await toolScript(ctx, spec, source.script, 'quantisation');
  ctx.progress({
    kind: 'step',
    message: `quantising ${base.name}'s graph (${source.script}: ${source.method})`,
  });
  // The script writes a new directory of its own (it refuses an existing one).
  const out = join(work, '.quantized');
  const args = [script, '--model-dir', base.dir, '--out', out, '--name', spec.name];
  await runChecked(ctx, python, args, `the quantisation (tools/model/${source.script})`);
  const graph = join(out, base.manifest.onnxFile);
  if (!existsSync(graph)) throw new FetchError(`${source.script} wrote no ${graph}.`);
  await copyFile(graph, join(work, spec.onnxFile));
  await rm(out, { recursive: true, force: true });
  for (const f of base.manifest.files) {
    if (f.path === base.manifest.onnxFile || NOT_KEPT.has(f.path)) continue;
    await copyFile(join(base.dir, f.path), join(work, f.path));
  }
  const sha = await fileSha256(join(work, spec.onnxFile));
  if (sha !== source.referenceOnnxSha256) {
    ctx.progress({
      kind: 'warning',
      message: `the quantised graph (sha256 ${sha}) is not byte-identical to the reference ${source.referenceOnnxSha256} (${base.name}'s graph is ${base.manifest.modelSha256})`,
    });
  }
  return {
    kind: 'quantize',
    detail: `${base.name} (${base.manifest.onnxFile} sha256 ${base.manifest.modelSha256}) through tools/model/${source.script}: ${source.method}`,
  };
}
