import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { loadModelManifest, resolveModelDir } from '@bfe/models';
import { openEncoder, type Encoder } from './encoder.js';
import { EncoderSession } from './onnx-session.js';
import type { EncodedChunk } from './pass.js';
import { TextTokenizer } from './tokenizer.js';

// Windowed memories on the real all-MiniLM-L6-v2: the pooled vector and the kept token states
// of a long text against a float64 reference built from one session run per window. The
// reference lays the windows out and picks each token's window from METHOD.md §8's definition,
// written out below rather than imported from window.ts, which is what is under test.

/**
 * METHOD.md §8 (the layout as packages/encoder/README.md states it): windows of `capacity`
 * content tokens start `stride` apart from the first token, until one reaches the last token;
 * that one is placed to end on it. Each content token belongs to the window where it sits
 * farthest from an edge, ties to the earlier window. Returns each window's first content index
 * and each content token's window.
 */
function referenceLayout(n: number, capacity: number, stride: number) {
  const starts: number[] = [];
  let s = 0;
  while (s + capacity < n) {
    starts.push(s);
    s += stride;
  }
  starts.push(Math.max(0, n - capacity));
  const owner: number[] = [];
  for (let i = 0; i < n; i++) {
    let best = { window: -1, distance: -1 };
    starts.forEach((start, w) => {
      const end = start + capacity - 1; // the window's last content token
      if (i < start || i > end) return;
      const distance = Math.min(i - start, end - i);
      if (distance > best.distance) best = { window: w, distance };
    });
    owner.push(best.window);
  }
  return { starts, owner };
}

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

describe('the reference layout', () => {
  it('gives the hand-worked example: 10 tokens, windows of 4, stride 3', () => {
    // Windows [0, 4), [3, 7), [6, 10); token 3 sits on an edge of both of its windows (a tie:
    // the earlier), token 5 is 2 from the second's start and 1 from its end.
    expect(referenceLayout(10, 4, 3)).toEqual({
      starts: [0, 3, 6],
      owner: [0, 0, 0, 0, 1, 1, 1, 2, 2, 2],
    });
    // The last window placed to end on the last token, overlapping its predecessor more.
    expect(referenceLayout(11, 4, 4).starts).toEqual([0, 4, 7]);
    expect(referenceLayout(11, 4, 4).owner).toEqual([0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2]);
  });
});

/** CI sets BFE_REQUIRE_MODEL=1: a missing model then fails instead of skipping. */
const requireModel = process.env.BFE_REQUIRE_MODEL === '1';

describe.skipIf(!existsSync(join(dir, 'bfe-model.json')) && !requireModel)(
  'windowed memories on all-MiniLM-L6-v2 (needs the model: bfe model fetch)',
  () => {
    // Stride 96 leaves an even overlap (30 tokens: no token is equally far from two windows'
    // edges); 95 an odd one, where the tie rule decides one token per overlap.
    it.each([96, 95])(
      'pooled vector and kept states equal a float64 reference from one run per window (stride %i)',
      async (stride) => {
        const manifest = await loadModelManifest(dir);
        const window = { size: 128, stride };
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
          const { starts, owner } = referenceLayout(n, capacity, window.stride);
          expect(starts[0]).toBe(0);
          expect(starts.at(-1)! + capacity).toBe(n);
          expect(owner.every((w) => w >= 0)).toBe(true);
          // Tokens in two windows at the same distance from an edge of each.
          const ties = owner.filter((_, i) => {
            const d = starts
              .filter((st) => st <= i && i < st + capacity)
              .map((st) => Math.min(i - st, st + capacity - 1 - i));
            return d.length > 1 && d[0] === d[1];
          }).length;
          expect(ties > 0).toBe(stride === 95);
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
            for (let i = s; i < s + capacity; i++) {
              if (owner[i] !== w) continue;
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
      },
      60_000,
    );

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
