// `pnpm bench:big-bank --ivf --ivf-threads`: whether the scan thread counts return the same hits.
import type { IvfTokenIndex, TokenHits } from '@bfe/index';

const K = 64;

/** Byte for byte the same tokens and values. */
export function sameHits(a: TokenHits, b: TokenHits): boolean {
  const bytes = (x: ArrayBufferView): Buffer => Buffer.from(x.buffer, x.byteOffset, x.byteLength);
  return bytes(a.tokens).equals(bytes(b.tokens)) && bytes(a.values).equals(bytes(b.values));
}

/**
 * Whether every index gives the first one's hits, byte for byte, with candidate filters: every
 * 7th memory, and 1 % of them in one run (probing past nprobe), for the first `queries` queries.
 */
export async function sameFiltered(
  probes: readonly IvfTokenIndex[],
  query: (i: number) => Float32Array,
  queries: number,
  rows: number,
  memories: number,
): Promise<boolean> {
  const all = Int32Array.from({ length: memories }, (_, m) => m);
  const run = Math.floor(memories / 2);
  const sets = [all.filter((m) => m % 7 === 3), all.subarray(run, run + Math.ceil(memories / 100))];
  let same = true;
  for (let i = 0; i < queries; i++) {
    for (const set of sets) {
      const hits = await Promise.all(
        probes.map((p) => p.search(query(i), rows, K, { memories: set, clampK: true })),
      );
      for (const h of hits) same &&= sameHits(h, hits[0]!);
    }
  }
  return same;
}
