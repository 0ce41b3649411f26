import { createHash } from 'node:crypto';
import { emptyEncoded } from '../log/encoded.js';
import type { EncodedTexts, Embedder } from '../types.js';

/**
 * A deterministic stand-in for the encoder, for tests that need speed over meaning: each
 * whitespace-separated word is a content token whose id is a hash of the word and whose unit
 * vector is a function of the word (the same word always gets the same vector); the pooled
 * vector is the normalised mean. Queries and passages encode alike. `options.jitter` adds
 * per-occurrence noise of that scale (relative to the word's vector) so tokens are distinct.
 * @example
 * const e = await fakeEmbedder(8).encode(['the cat'], 'passage');
 * e.tokenOffsets; // Int32Array [0, 2]; e.tokenVectors.length === 16
 */
export function fakeEmbedder(
  dim = 8,
  model = 'fake-embedder',
  options: { readonly jitter?: number } = {},
): Embedder & { calls: number } {
  const jitter = options.jitter ?? 0;
  const vocab = new Map<number, string>();
  const embedder = {
    model,
    dim,
    calls: 0,
    encode(texts: readonly string[]): Promise<EncodedTexts> {
      embedder.calls++;
      const words = texts.map((t) => t.split(/\s+/).filter((w) => w.length > 0));
      const count = texts.length;
      const tokens = words.reduce((a, w) => a + w.length, 0);
      const out = emptyEncoded(count, tokens, dim);
      let t = 0;
      for (let i = 0; i < count; i++) {
        const ws = words[i]!;
        for (let j = 0; j < ws.length; j++) {
          const digest = createHash('sha256').update(ws[j]!).digest();
          const id = digest.readUInt32LE(0) % 30000;
          vocab.set(id, ws[j]!);
          out.tokenIds[t] = id;
          out.tokenPositions[t] = j + 1;
          // With `jitter`, each occurrence of a word also gets noise of its own (a hash of the
          // text and position), so no two tokens are equal: HNSW tests need distinct vectors.
          const noise =
            jitter > 0 ? createHash('sha256').update(`${texts[i]}\u0000${j}`).digest() : undefined;
          let norm = 0;
          for (let k = 0; k < dim; k++) {
            let v = digest[k % 32]! - 127.5 + k;
            if (noise !== undefined) v += jitter * (noise[k % 32]! - 127.5) * (1 + (k >> 5));
            out.tokenVectors[t * dim + k] = v;
            norm += v * v;
          }
          norm = Math.sqrt(norm);
          for (let k = 0; k < dim; k++) {
            out.tokenVectors[t * dim + k] = out.tokenVectors[t * dim + k]! / norm;
            out.pooled[i * dim + k] = out.pooled[i * dim + k]! + out.tokenVectors[t * dim + k]!;
          }
          t++;
        }
        out.tokenOffsets[i + 1] = t;
        let norm = 0;
        for (let k = 0; k < dim; k++) norm += out.pooled[i * dim + k]! ** 2;
        norm = Math.max(Math.sqrt(norm), 1e-12);
        for (let k = 0; k < dim; k++) out.pooled[i * dim + k] = out.pooled[i * dim + k]! / norm;
      }
      return Promise.resolve(out);
    },
    tokenText: (id: number) => vocab.get(id) ?? `[${id}]`,
    dispose: () => Promise.resolve(),
  };
  return embedder;
}
