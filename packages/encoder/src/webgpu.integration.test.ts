import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { openEncoder } from './encoder.js';
import { loadModelManifest, resolveModelDir } from '@bfe/models';
import { EncoderSession } from './onnx-session.js';

const tiny = fileURLToPath(new URL('../fixtures/tiny-encoder.onnx', import.meta.url));

/** Whether onnxruntime finds a WebGPU adapter here (on CPU machines: Mesa's lavapipe, see .ci/run). */
async function webgpuProbe(): Promise<string | undefined> {
  try {
    const s = await EncoderSession.open(tiny, { executionProvider: 'webgpu' });
    await s.dispose();
    return undefined;
  } catch (error) {
    return (error as Error).message;
  }
}
const unavailable = await webgpuProbe();
/** CI sets BFE_REQUIRE_WEBGPU=1: a missing adapter is then a failure, not a skip. */
const required = process.env.BFE_REQUIRE_WEBGPU === '1';
const modelDir = resolveModelDir('all-minilm-l6-v2');
/** CI sets BFE_REQUIRE_MODEL=1: a missing model then fails instead of skipping. */
const requireModel = process.env.BFE_REQUIRE_MODEL === '1';

describe.skipIf(unavailable !== undefined && !required)(
  'WebGPU execution provider (needs a WebGPU adapter: lavapipe from Mesa 25)',
  () => {
    it('finds a WebGPU adapter', () => {
      expect(unavailable, 'no WebGPU adapter; run tools/install-lavapipe.sh').toBeUndefined();
    });

    it('runs the tiny graph with the same numbers as the CPU', async () => {
      const ids = BigInt64Array.from([3n, 5n, 7n, 0n]);
      const mask = BigInt64Array.from([1n, 1n, 1n, 0n]);
      const results = [];
      for (const ep of ['cpu', 'webgpu'] as const) {
        const s = await EncoderSession.open(tiny, { executionProvider: ep });
        results.push(Array.from((await s.run(ids, mask, 2, 2)).states));
        await s.dispose();
      }
      expect(results[1]).toEqual(results[0]);
    });

    it.skipIf(!existsSync(join(modelDir, 'bfe-model.json')) && !requireModel)(
      'encodes MiniLM pooled vectors equal to the CPU path (cosine ≥ 0.99999; needs the model)',
      async () => {
        const fixture = JSON.parse(
          readFileSync(
            fileURLToPath(new URL('../fixtures/minilm-parity.json', import.meta.url)),
            'utf8',
          ),
        ) as { cases: Array<{ text: string }> };
        const texts = fixture.cases.slice(0, 6).map((c) => c.text);
        const manifest = await loadModelManifest(modelDir);
        const pooled: Float32Array[] = [];
        for (const ep of ['cpu', 'webgpu'] as const) {
          const encoder = await openEncoder(modelDir, manifest, { executionProvider: ep });
          for await (const c of encoder.encode(texts, 'passage')) pooled.push(c.pooled);
          await encoder.dispose();
        }
        for (let i = 0; i < texts.length; i++) {
          let dot = 0;
          for (let k = 0; k < 384; k++) dot += pooled[0]![i * 384 + k]! * pooled[1]![i * 384 + k]!;
          expect(dot).toBeGreaterThanOrEqual(0.99999);
        }
      },
      300_000,
    );
  },
);
