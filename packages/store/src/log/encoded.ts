import type { EncodedTexts } from '../types.js';

/**
 * Checks that `e` is a well-formed {@link EncodedTexts} of `count` texts in `dim` dimensions:
 * every array has the length its shape promises and the token offsets rise from 0 to the token
 * count. An embedder that breaks this is a bug, so a plain `Error` names the field.
 */
export function checkEncoded(e: EncodedTexts, count: number, dim: number): void {
  const fail = (what: string): never => {
    throw new Error(`embedder returned malformed output: ${what}`);
  };
  if (e.count !== count) fail(`count ${e.count}, expected ${count}`);
  if (e.dim !== dim) fail(`dim ${e.dim}, expected ${dim}`);
  if (e.pooled.length !== count * dim) fail(`pooled has ${e.pooled.length} values`);
  if (e.tokenOffsets.length !== count + 1 || e.tokenOffsets[0] !== 0)
    fail('tokenOffsets must have count + 1 entries starting at 0');
  for (let i = 0; i < count; i++)
    if (e.tokenOffsets[i + 1]! < e.tokenOffsets[i]!) fail(`tokenOffsets fall at ${i}`);
  const tokens = e.tokenOffsets[count]!;
  if (e.tokenVectors.length !== tokens * dim) fail('tokenVectors length');
  if (e.tokenIds.length !== tokens) fail('tokenIds length');
  if (e.tokenPositions.length !== tokens) fail('tokenPositions length');
  if (e.truncated.length !== count) fail('truncated length');
}

/** Token count of an {@link EncodedTexts}. */
export function tokenCount(e: EncodedTexts): number {
  return e.tokenOffsets[e.count]!;
}

/** Zeroed arrays for `count` texts with `tokens` content tokens in total. */
export function emptyEncoded(count: number, tokens: number, dim: number): MutableEncoded {
  return {
    count,
    dim,
    pooled: new Float32Array(count * dim),
    tokenOffsets: new Int32Array(count + 1),
    tokenVectors: new Float32Array(tokens * dim),
    tokenIds: new Int32Array(tokens),
    tokenPositions: new Int32Array(tokens),
    truncated: new Uint8Array(count),
  };
}

/** An {@link EncodedTexts} under construction. */
export type MutableEncoded = { -readonly [K in keyof EncodedTexts]: EncodedTexts[K] };
