import { expect } from 'vitest';
import type { BankSide } from '@bfe/encoder';
import type { BankView, EncodedTexts } from '@bfe/store';

// An encoded bank's rows as a store's views, and the bit-for-bit comparison of vectors: shared
// by the equality tests of the store against the experiment's banks
// (tests/store-locomo-equality.test.ts, tests/store-covidqa-window-equality.test.ts).

/** One conversation's memories as a store's view, cut from encoded rows (any row order). */
export function viewOf(
  bank: string,
  rows: readonly number[],
  side: Pick<
    BankSide,
    'ids' | 'pooled' | 'tokenOffsets' | 'tokenVectors' | 'tokenId' | 'tokenPosition'
  >,
  texts: readonly string[],
  dim: number,
  model: string,
): BankView {
  let tokens = 0;
  for (const r of rows) tokens += side.tokenOffsets[r + 1]! - side.tokenOffsets[r]!;
  const pooled = new Float32Array(rows.length * dim);
  const tokenOffsets = new Int32Array(rows.length + 1);
  const tokenVectors = new Float32Array(tokens * dim);
  const tokenIds = new Int32Array(tokens);
  const tokenPositions = new Int32Array(tokens);
  rows.forEach((r, i) => {
    const from = side.tokenOffsets[r]!;
    const to = side.tokenOffsets[r + 1]!;
    const at = tokenOffsets[i]!;
    pooled.set(side.pooled.subarray(r * dim, (r + 1) * dim), i * dim);
    tokenVectors.set(side.tokenVectors.subarray(from * dim, to * dim), at * dim);
    tokenIds.set(side.tokenId.subarray(from, to), at);
    tokenPositions.set(side.tokenPosition.subarray(from, to), at);
    tokenOffsets[i + 1] = at + to - from;
  });
  return {
    bank,
    model,
    dim,
    ids: rows.map((r) => side.ids[r]!),
    texts,
    metas: rows.map(() => undefined),
    pooled,
    tokenOffsets,
    tokenVectors,
    tokenIds,
    tokenPositions,
  };
}

export function asEncoded(view: BankView): EncodedTexts {
  return { ...view, count: view.ids.length, truncated: new Uint8Array(view.ids.length) };
}

/** Row `r` of a side as a one-text {@link EncodedTexts}. */
export function queryOf(side: BankSide, r: number, dim: number): EncodedTexts {
  return asEncoded(viewOf('q', [r], side, [''], dim, ''));
}

/**
 * The largest |a[i] − b[i]|, where any two floats whose bits differ count: −0 against +0 and a
 * NaN count as Infinity. So 0 means the arrays are equal bit for bit.
 */
export function maxAbsDelta(a: Float32Array, b: Float32Array): number {
  expect(a.length).toBe(b.length);
  const [x, y] = [bitsOf(a), bitsOf(b)];
  let max = 0;
  for (let i = 0; i < a.length; i++) {
    if (x[i] === y[i]) continue;
    const d = Math.abs(a[i]! - b[i]!);
    max = Math.max(max, d > 0 ? d : Infinity);
  }
  return max;
}

const bitsOf = (v: Float32Array) => new Uint32Array(v.buffer, v.byteOffset, v.length);
