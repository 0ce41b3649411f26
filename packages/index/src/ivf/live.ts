// A search over an index with deleted memories: the candidate set narrowed to the live ones, and
// the hits' slots (and best-per-memory rows) given back against the caller's candidate set.
import { positionOf } from '../hnsw/top.js';
import type { TokenHits } from '../token-index.js';

/** `memories` without the deleted ones (`deleted[m]` 1), or `memories` itself if none is. */
export function liveCandidates(memories: Int32Array, deleted: Uint8Array): Int32Array {
  let live = 0;
  for (const m of memories) live += deleted[m] === 1 ? 0 : 1;
  if (live === memories.length) return memories;
  const out = new Int32Array(live);
  let w = 0;
  for (const m of memories) if (deleted[m] !== 1) out[w++] = m;
  return out;
}

/**
 * Hits of a search over `live` (a subset of `given`, both ascending) as a search over `given`:
 * slots are positions in `given`, and `best` has a row of `given.length`, −Infinity for a
 * deleted memory (it holds no token), as the exact backend gives a memory of no tokens.
 */
export function toGivenMemories(hits: TokenHits, given: Int32Array, live: Int32Array): TokenHits {
  const slots = new Int32Array(hits.slots.length);
  for (let i = 0; i < slots.length; i++) slots[i] = positionOf(given, hits.memories[i]!);
  if (hits.best === undefined) return { ...hits, slots };
  const rows = hits.rows;
  const best = new Float32Array(rows * given.length).fill(-Infinity);
  for (let j = 0; j < live.length; j++) {
    const s = positionOf(given, live[j]!);
    for (let r = 0; r < rows; r++) best[r * given.length + s] = hits.best[r * live.length + j]!;
  }
  return { ...hits, slots, best };
}
