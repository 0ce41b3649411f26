import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openEncoder, type Encoder } from './encoder.js';
import { loadModelManifest, resolveModelDir } from '@bfe/models';
import type { EncodedChunk } from './pass.js';

interface FixtureCase {
  id: string;
  text: string;
  input_ids: number[];
  truncated: boolean;
  embedding: number[];
  token_states: { positions: number[]; vectors: number[][] };
}
const fixture = JSON.parse(
  readFileSync(fileURLToPath(new URL('../fixtures/minilm-parity.json', import.meta.url)), 'utf8'),
) as { meta: { max_length: number }; cases: FixtureCase[] };

const fp32Dir = resolveModelDir('all-minilm-l6-v2');
const int8Dir = resolveModelDir('all-minilm-l6-v2-int8');
/** Whether a model is in the cache; CI sets BFE_REQUIRE_MODEL=1: a missing one then fails. */
const has = (dir: string) =>
  existsSync(join(dir, 'bfe-model.json')) || process.env.BFE_REQUIRE_MODEL === '1';

function cosine(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let dot = 0;
  let na = 0;
  let nb = 0;
  for (let k = 0; k < a.length; k++) {
    dot += a[k]! * b[k]!;
    na += a[k]! ** 2;
    nb += b[k]! ** 2;
  }
  return dot / Math.sqrt(na * nb);
}

async function encodeAll(encoder: Encoder, texts: string[]): Promise<EncodedChunk> {
  const chunks: EncodedChunk[] = [];
  for await (const c of encoder.encode(texts, 'passage', {
    chunkSize: texts.length,
    maxBatchTokens: 2048,
  }))
    chunks.push(c);
  expect(chunks).toHaveLength(1);
  return chunks[0]!;
}

/** Min cosine of pooled vectors and of every fixture token state (matched by position). */
function compare(c: EncodedChunk): { pooled: number; tokens: number; tokensCompared: number } {
  let pooled = 1;
  let tokens = 1;
  let tokensCompared = 0;
  let w = 0;
  fixture.cases.forEach((ref, i) => {
    pooled = Math.min(pooled, cosine(c.pooled.subarray(i * c.dim, (i + 1) * c.dim), ref.embedding));
    const at = new Map(ref.token_states.positions.map((p, j) => [p, j]));
    for (let t = 0; t < c.nTokens[i]!; t++, w++) {
      const j = at.get(c.tokenPosition[w]!);
      if (j === undefined) continue; // the fixture keeps 40 tokens of its longest texts
      tokens = Math.min(
        tokens,
        cosine(c.tokenVectors.subarray(w * c.dim, (w + 1) * c.dim), ref.token_states.vectors[j]!),
      );
      tokensCompared++;
    }
  });
  return { pooled, tokens, tokensCompared };
}

describe.skipIf(!has(fp32Dir))(
  'parity with sentence-transformers, fp32 (needs the model: bfe model fetch)',
  () => {
    let encoder: Encoder;
    let chunk: EncodedChunk;
    beforeAll(async () => {
      encoder = await openEncoder(fp32Dir, await loadModelManifest(fp32Dir), {
        maxLength: fixture.meta.max_length,
      });
      chunk = await encodeAll(
        encoder,
        fixture.cases.map((c) => c.text),
      );
    });
    afterAll(() => encoder?.dispose());

    it('keeps exactly the content tokens Python keeps, with the same ids and truncation', () => {
      let w = 0;
      fixture.cases.forEach((ref, i) => {
        const ids: number[] = [];
        for (let t = 0; t < chunk.nTokens[i]!; t++, w++) ids.push(chunk.tokenId[w]!);
        expect(ids, ref.id).toEqual(ref.input_ids.slice(1, -1));
        expect(chunk.truncated[i] === 1, ref.id).toBe(ref.truncated);
      });
    });

    it('matches every pooled vector and every token state to cosine ≥ 0.99999', () => {
      const r = compare(chunk);
      expect(r.tokensCompared).toBeGreaterThan(500);
      expect(r.pooled).toBeGreaterThanOrEqual(0.99999);
      expect(r.tokens).toBeGreaterThanOrEqual(0.99999);
    });
  },
);

describe.skipIf(!has(int8Dir))(
  'int8 graph against the fp32 reference (needs bfe model fetch all-minilm-l6-v2-int8)',
  () => {
    it('stays close: pooled cosine ≥ 0.99 on every text (int8 is lossy; figures in BENCHMARKS.md)', async () => {
      const encoder = await openEncoder(int8Dir, await loadModelManifest(int8Dir), {
        maxLength: 128,
      });
      try {
        const r = compare(
          await encodeAll(
            encoder,
            fixture.cases.map((c) => c.text),
          ),
        );
        expect(r.pooled).toBeGreaterThanOrEqual(0.99);
        expect(r.tokens).toBeGreaterThanOrEqual(0.9);
      } finally {
        await encoder.dispose();
      }
    });
  },
);
