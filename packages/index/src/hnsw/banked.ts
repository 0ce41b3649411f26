import { buildHnsw } from './hnsw.js';
import type { HnswIndex, HnswOptions, HnswParams, HnswResult } from './hnsw.js';

/**
 * One HNSW index per bank (one conversation, one haystack, one user): a query searches only
 * its own bank's graph, so no filtering is needed and results are never short. The other
 * strategy is one index with a filter ({@link HnswIndex.search}); `pnpm bench:big-bank --filtering` measures both.
 */
export interface BankedHnsw {
  /** The banks, ascending. */
  readonly banks: readonly number[];
  /** Top-k over `bank`'s tokens per query row; indices are the bank-wide token indices. */
  search(queries: Float32Array, rows: number, k: number, bank: number): HnswResult;
  /** Tokens in `bank` (0 when unknown). */
  bankSize(bank: number): number;
  dispose(): void;
}

/**
 * Builds one index per distinct value of `tokenBank` (length `n`) over the `n × dim` rows.
 *
 * @example
 * const banked = await buildBankedHnsw(vectors, n, 384, tokenConversation, params);
 * banked.search(q, rows, 64, conversation); // indices into the whole bank
 */
export async function buildBankedHnsw(
  vectors: Float32Array,
  n: number,
  dim: number,
  tokenBank: Int32Array,
  params: HnswParams,
  options: HnswOptions = {},
): Promise<BankedHnsw> {
  if (tokenBank.length !== n)
    throw new Error(`tokenBank has ${tokenBank.length} entries, need ${n}.`);
  const members = new Map<number, number[]>();
  for (let i = 0; i < n; i++) {
    const b = tokenBank[i]!;
    let list = members.get(b);
    if (list === undefined) members.set(b, (list = []));
    list.push(i);
  }
  const banks = [...members.keys()].sort((a, b) => a - b);
  const parts = new Map<number, { index: HnswIndex; tokens: Int32Array }>();
  for (const b of banks) {
    const tokens = Int32Array.from(members.get(b)!);
    const local = new Float32Array(tokens.length * dim);
    for (let j = 0; j < tokens.length; j++) {
      local.set(vectors.subarray(tokens[j]! * dim, (tokens[j]! + 1) * dim), j * dim);
    }
    parts.set(b, { index: await buildHnsw(local, tokens.length, dim, params, options), tokens });
  }
  return {
    banks,
    bankSize: (bank) => parts.get(bank)?.tokens.length ?? 0,
    search(queries, rows, k, bank) {
      const part = parts.get(bank);
      if (part === undefined) {
        return {
          indices: new Int32Array(rows * k).fill(-1),
          scores: new Float32Array(rows * k).fill(-Infinity),
          k,
        };
      }
      const res = part.index.search(queries, rows, k);
      const { indices } = res;
      for (let i = 0; i < indices.length; i++) {
        if (indices[i]! >= 0) indices[i] = part.tokens[indices[i]!]!;
      }
      return res;
    },
    dispose() {
      for (const p of parts.values()) p.index.dispose();
      parts.clear();
    },
  };
}
