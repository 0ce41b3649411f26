import { randomBank, rng } from '@bfe/index/testing';
import type { BankView, EncodedTexts, MemoryMeta } from '../types.js';

/** How {@link randomView} fills a bank. */
export interface RandomViewOptions {
  readonly rows: number;
  /** Most content tokens per memory (each memory has 1…maxTokens). */
  readonly maxTokens: number;
  readonly dim: number;
  /** The vocabulary id of the bank's `t`-th token (default `1000 + t`). */
  readonly tokenId?: (t: number) => number;
  /** Memory `i`'s metadata (default none). */
  readonly meta?: (i: number) => MemoryMeta | undefined;
  /** Every memory a copy of memory 0's first token: equal similarities everywhere. */
  readonly ties?: boolean;
  /** Write sequence numbers and a view version (a view the store's writer would publish). */
  readonly versioned?: boolean;
}

/**
 * A random bank view for the search tests (`@bfe/index`'s seeded `randomBank`): memories `m0…`,
 * texts `memory i`, unit token vectors, token positions cycling over `maxTokens`.
 * @example
 * const v = randomView(5, { rows: 30, maxTokens: 8, dim: 12 });
 */
export function randomView(seed: number, options: RandomViewOptions): BankView {
  const { rows, maxTokens, dim, tokenId = (t) => 1000 + t, meta = () => undefined } = options;
  const bank = randomBank(rows, maxTokens, dim, rng(seed), 1);
  const tokens = bank.tokenOffsets[rows]!;
  if (options.ties === true) {
    for (let t = 1; t < tokens; t++) bank.tokenVectors.copyWithin(t * dim, 0, dim);
  }
  return {
    bank: 'b',
    model: 'test-model',
    dim,
    ids: Array.from({ length: rows }, (_, i) => `m${i}`),
    texts: Array.from({ length: rows }, (_, i) => `memory ${i}`),
    metas: Array.from({ length: rows }, (_, i) => meta(i)),
    pooled: bank.pooled,
    tokenOffsets: bank.tokenOffsets,
    tokenVectors: bank.tokenVectors,
    tokenIds: Int32Array.from({ length: tokens }, (_, t) => tokenId(t)),
    tokenPositions: Int32Array.from({ length: tokens }, (_, t) => 1 + (t % maxTokens)),
    ...(options.versioned === true
      ? {
          seqs: Float64Array.from({ length: rows }, (_, i) => seed * 1000 + i),
          version: seed * 1000 + rows,
        }
      : {}),
  };
}

/** One random encoded query of `tokens` content tokens (vocabulary ids `2000 + t`). */
export function randomQuery(seed: number, tokens: number, dim: number): EncodedTexts {
  const bank = randomBank(1, tokens, dim, rng(seed), tokens);
  return {
    count: 1,
    dim,
    pooled: bank.pooled,
    tokenOffsets: bank.tokenOffsets,
    tokenVectors: bank.tokenVectors,
    tokenIds: Int32Array.from({ length: tokens }, (_, t) => 2000 + t),
    tokenPositions: Int32Array.from({ length: tokens }, (_, t) => 1 + t),
    truncated: new Uint8Array(1),
  };
}

/**
 * The view of `v`'s first `rows` rows, reading `v`'s arrays (as a store's view before the later
 * rows were added, which the later view grew from; `v` versioned: its write sequences ascending).
 */
export function prefixView(v: BankView, rows: number): BankView {
  const tokens = v.tokenOffsets[rows]!;
  return {
    ...v,
    ids: v.ids.slice(0, rows),
    texts: v.texts.slice(0, rows),
    metas: v.metas.slice(0, rows),
    pooled: v.pooled.subarray(0, rows * v.dim),
    tokenOffsets: v.tokenOffsets.subarray(0, rows + 1),
    tokenVectors: v.tokenVectors.subarray(0, tokens * v.dim),
    tokenIds: v.tokenIds.subarray(0, tokens),
    tokenPositions: v.tokenPositions.subarray(0, tokens),
    seqs: v.seqs!.subarray(0, rows),
    ...(v.version === undefined ? {} : { version: v.seqs![rows - 1]! }),
  };
}
