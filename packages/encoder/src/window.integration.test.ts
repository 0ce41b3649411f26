import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { loadModelManifest, resolveModelDir } from '@bfe/models';
import { openEncoder, type Encoder } from './encoder.js';
import { EncoderSession } from './onnx-session.js';
import type { EncodedChunk } from './pass.js';
import { TextTokenizer } from './tokenizer.js';
import { windowOwnership, windowStarts } from './window.js';

// Windowed memories on the real all-MiniLM-L6-v2: the pooled vector and the kept token states
// of a long text against a float64 reference built from one session run per window.

const dir = resolveModelDir('all-minilm-l6-v2');
const cases = (
  JSON.parse(
    readFileSync(fileURLToPath(new URL('../fixtures/minilm-parity.json', import.meta.url)), 'utf8'),
  ) as { cases: Array<{ text: string }> }
).cases;
// The parity fixture's texts, one after another, cut to 2,000 characters: a few hundred tokens
// of varied text (Unicode, numbers, code), several windows of 128.
const long = cases
  .map((c) => c.text)
  .join(' ')
  .slice(0, 2000);

async function one(encoder: Encoder, text: string, role: 'passage' | 'query') {
  const out: EncodedChunk[] = [];
  for await (const c of encoder.encode([text], role)) out.push(c);
  expect(out).toHaveLength(1);
  return out[0]!;
}

describe.skipIf(!existsSync(join(dir, 'bfe-model.json')))(
  'windowed memories on all-MiniLM-L6-v2 (needs the model: bfe model fetch)',
  () => {
    it('pooled vector and kept states equal a float64 reference from one run per window', async () => {
      const manifest = await loadModelManifest(dir);
      const window = { size: 128, stride: 96 };
      const encoder = await openEncoder(dir, manifest, { threads: 1, maxLength: 128, window });
      const session = await EncoderSession.open(join(dir, manifest.onnxFile), { threads: 1 });
      try {
        const c = await one(encoder, long, 'passage');
        const [t] = await new TextTokenizer(join(dir, manifest.tokenizerFile), undefined).encode([
          long,
        ]);
        const ids = Array.from(t!.ids);
        const n = ids.length - 2;
        const capacity = window.size - 2;
        expect(n).toBeGreaterThan(3 * capacity);
        const starts = windowStarts(n, capacity, window.stride);
        const owned = windowOwnership(starts, capacity, n);
        expect(c.windows![0]).toBe(starts.length);
        expect(c.nTokens[0]).toBe(n);
        const dim = c.dim;
        const sum = new Float64Array(dim);
        let worst = 0; // the largest difference of a kept unit state from the reference's
        for (const [w, s] of starts.entries()) {
          const row = [ids[0]!, ...ids.slice(1 + s, 1 + s + capacity), ids.at(-1)!];
          const feed = BigInt64Array.from(row, (x) => BigInt(x));
          const mask = new BigInt64Array(row.length).fill(1n);
          const { states } = await session.run(feed, mask, 1, row.length);
          const add = (j: number) => {
            for (let k = 0; k < dim; k++) sum[k]! += states[j * dim + k]!;
          };
          if (w === 0) add(0);
          if (w === starts.length - 1) add(row.length - 1);
          for (let i = owned[w]![0]; i < owned[w]![1]; i++) {
            const j = 1 + i - s;
            add(j);
            expect(c.tokenPosition[i]).toBe(1 + i);
            expect(c.tokenId[i]).toBe(ids[1 + i]);
            let ss = 0;
            for (let k = 0; k < dim; k++) ss += states[j * dim + k]! ** 2;
            for (let k = 0; k < dim; k++)
              worst = Math.max(
                worst,
                Math.abs(c.tokenVectors[i * dim + k]! - states[j * dim + k]! / Math.sqrt(ss)),
              );
          }
        }
        // Windows batched together vs one at a time: float32 kernels agree to ~1e-6.
        expect(worst).toBeLessThan(1e-5);
        let ss = 0;
        for (let k = 0; k < dim; k++) ss += (sum[k]! / (n + 2)) ** 2;
        for (let k = 0; k < dim; k++)
          expect(c.pooled[k]).toBeCloseTo(sum[k]! / (n + 2) / Math.sqrt(ss), 6);
        // The query side keeps one window of maxLength and says it was cut.
        const q = await one(encoder, long, 'query');
        expect([q.truncated[0], q.nTokens[0], q.windows]).toEqual([1, 126, undefined]);
      } finally {
        await Promise.all([encoder.dispose(), session.dispose()]);
      }
    }, 60_000);

    it('a text that fits the window encodes bit for bit as the truncating encoder does', async () => {
      const manifest = await loadModelManifest(dir);
      const plain = await openEncoder(dir, manifest, { threads: 1, maxLength: 128 });
      const windowed = await openEncoder(dir, manifest, {
        threads: 1,
        maxLength: 128,
        window: { size: 128, stride: 64 },
      });
      try {
        let compared = 0;
        for (const text of cases.map((x) => x.text)) {
          const [a, b] = [await one(plain, text, 'passage'), await one(windowed, text, 'passage')];
          // A text cut at 128 is windowed instead: compared by the test above.
          expect(b.windows![0]! > 1).toBe(a.truncated[0] === 1);
          if (a.truncated[0] === 1) continue;
          compared++;
          for (const key of ['pooled', 'tokenVectors', 'tokenPosition', 'tokenId'] as const)
            expect(Buffer.from(b[key].buffer).equals(Buffer.from(a[key].buffer))).toBe(true);
        }
        expect(compared).toBeGreaterThan(20);
      } finally {
        await Promise.all([plain.dispose(), windowed.dispose()]);
      }
    }, 60_000);
  },
);
