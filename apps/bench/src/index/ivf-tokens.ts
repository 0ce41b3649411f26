// The clustered index benches' inputs: the first `--tokens` real token states as memories of 128
// tokens, the query rows, and token recall against the exact top-64.
import type { TokenHits } from '@bfe/index';
import type { BigBankOptions } from './big-bank-cli.js';
import { openTokenSource } from './token-source.js';

const K = 64;
/** Tokens per synthetic memory: the bench searches every memory, so only the count matters. */
const MEMORY_TOKENS = 128;

/** Token recall@64 of `got` against the exact top-64 `want`. */
export function recallOf(got: TokenHits, want: TokenHits): number {
  let found = 0;
  for (let r = 0; r < want.rows; r++) {
    const truth = new Set(want.tokens.subarray(r * K, (r + 1) * K));
    for (const t of got.tokens.subarray(r * K, (r + 1) * K)) if (truth.has(t)) found++;
  }
  return found / (want.rows * K);
}

/** `[memories + 1]` token offsets of `n` tokens cut into memories of 128 tokens (the last shorter). */
export function memoryOffsets(n: number): Int32Array {
  const memories = Math.ceil(n / MEMORY_TOKENS);
  return Int32Array.from({ length: memories + 1 }, (_, m) => Math.min(n, m * MEMORY_TOKENS));
}

/** The first `--tokens` real token states of `--bank`, as memories of 128 tokens, and the queries. */
export async function realTokens(o: BigBankOptions) {
  const banks = (o.bank ?? '').split(',').filter((b) => b !== '');
  const source = await openTokenSource({
    banks,
    real: true,
    noise: 0,
    seed: o.seed,
    queries: o.queries,
    rows: o.rows,
  });
  const n = Math.min(o.tokens, source.tokens);
  const dim = source.dim;
  const vectors = new Float32Array(n * dim);
  for (let a = 0; a < n; a += 65_536) {
    const m = Math.min(65_536, n - a);
    source.fill(vectors.subarray(a * dim, (a + m) * dim), a, m);
  }
  const tokenOffsets = memoryOffsets(n);
  const memories = tokenOffsets.length - 1;
  const rows = o.rows;
  const query = (i: number): Float32Array =>
    source.queries.subarray(i * rows * dim, (i + 1) * rows * dim);
  return {
    n,
    dim,
    vectors,
    memories,
    tokenOffsets,
    rows,
    query,
    queries: source.queries,
    describe: source.describe,
  };
}
