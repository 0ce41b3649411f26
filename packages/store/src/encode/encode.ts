import type { EncodedChunk, Encoder, PassOptions } from '@bfe/encoder';
import type { EncodedTexts } from '../types.js';

/**
 * One frozen encoder pass over `texts` (`Encoder.encode`: the model's prefix for the role,
 * length-bucketed batches), its chunks collected into one {@link EncodedTexts}: pooled vectors,
 * content tokens in text order with their offsets, ids and positions. The same pass the
 * experiment's `bfe encode` makes; the store's `openEmbedder` encodes through it.
 *
 * @example
 * const encoded = await encodedTexts(encoder, ['hello world', 'a b c'], 'passage');
 * encoded.count; // 2
 * encoded.tokenOffsets; // Int32Array [0, 2, 5]
 * encoded.tokenVectors.length === 5 * encoded.dim; // Float32Array, unit rows
 */
export async function encodedTexts(
  encoder: Encoder,
  texts: readonly string[],
  role: 'passage' | 'query',
  options: Omit<PassOptions, 'prefix'> = {},
): Promise<EncodedTexts> {
  const chunks: EncodedChunk[] = [];
  let tokens = 0;
  let dim = 0;
  for await (const chunk of encoder.encode(texts, role, options)) {
    chunks.push(chunk);
    tokens += chunk.tokenId.length;
    dim = chunk.dim;
  }
  const count = texts.length;
  const pooled = new Float32Array(count * dim);
  const tokenOffsets = new Int32Array(count + 1);
  const tokenVectors = new Float32Array(tokens * dim);
  const tokenIds = new Int32Array(tokens);
  const tokenPositions = new Int32Array(tokens);
  const truncated = new Uint8Array(count);
  let row = 0;
  let at = 0;
  for (const c of chunks) {
    if (c.start !== row) throw new Error(`encodedTexts: chunk starts at ${c.start}, not ${row}`);
    pooled.set(c.pooled, row * dim);
    truncated.set(c.truncated, row);
    for (let i = 0; i < c.count; i++)
      tokenOffsets[row + i + 1] = tokenOffsets[row + i]! + c.nTokens[i]!;
    tokenVectors.set(c.tokenVectors, at * dim);
    tokenIds.set(c.tokenId, at);
    tokenPositions.set(c.tokenPosition, at);
    row += c.count;
    at += c.tokenId.length;
  }
  if (row !== count) throw new Error(`encodedTexts: the pass returned ${row} of ${count} texts`);
  return { count, dim, pooled, tokenOffsets, tokenVectors, tokenIds, tokenPositions, truncated };
}
