import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { EncoderSession, TextTokenizer } from '@bfe/encoder';
import { loadModelManifest, resolveModelDir } from '@bfe/models';
import { encodeChunks } from './pass.js';

// The chunk pass on the real all-MiniLM-L6-v2: each window of a long text against a float64
// mean of one session run on exactly that window, built here from the definition.

const dir = resolveModelDir('all-minilm-l6-v2');
const fixture = new URL(
  '../../../../packages/encoder/fixtures/minilm-parity.json',
  import.meta.url,
);
const long = (JSON.parse(readFileSync(fixture, 'utf8')) as { cases: Array<{ text: string }> }).cases
  .map((c) => c.text)
  .join(' ')
  .slice(0, 1500);
const short = 'Caroline went to the LGBTQ support group yesterday.';
/** CI sets BFE_REQUIRE_MODEL=1: a missing model then fails instead of skipping. */
const requireModel = process.env.BFE_REQUIRE_MODEL === '1';

describe.skipIf(!existsSync(join(dir, 'bfe-model.json')) && !requireModel)(
  'chunk pass on all-MiniLM-L6-v2 (needs the model: bfe model fetch)',
  () => {
    it('pools every window of a long text as one run of that window alone; leaves a short one to the bank', async () => {
      const manifest = await loadModelManifest(dir);
      const spec = { pooling: manifest.pooling, normalize: manifest.normalize };
      const session = await EncoderSession.open(join(dir, manifest.onnxFile), { threads: 1 });
      const tokenizer = new TextTokenizer(join(dir, manifest.tokenizerFile), undefined);
      try {
        const size = 64;
        const r = await encodeChunks(session, tokenizer, spec, [short, long], size);
        const [ts, tl] = await tokenizer.encode([short, long]);
        expect(r.lengths[0]).toBe(ts!.ids.length);
        expect(ts!.ids.length).toBeLessThanOrEqual(size);
        const content = Array.from(tl!.ids).slice(1, -1);
        const windows = Math.ceil(content.length / (size - 2));
        expect(windows).toBeGreaterThan(3);
        expect([...r.owner]).toEqual(new Array<number>(windows).fill(1));
        for (let w = 0; w < windows; w++) {
          const ids = [101, ...content.slice(w * (size - 2), (w + 1) * (size - 2)), 102];
          const { states, dim } = await session.run(
            BigInt64Array.from(ids, BigInt),
            new BigInt64Array(ids.length).fill(1n),
            1,
            ids.length,
          );
          const mean = new Float64Array(dim);
          for (let j = 0; j < ids.length; j++)
            for (let k = 0; k < dim; k++) mean[k]! += states[j * dim + k]! / ids.length;
          const norm = Math.hypot(...mean);
          for (let k = 0; k < dim; k++)
            expect(r.vectors[w * dim + k]).toBeCloseTo(mean[k]! / norm, 5);
        }
      } finally {
        await session.dispose();
      }
    });
  },
);
