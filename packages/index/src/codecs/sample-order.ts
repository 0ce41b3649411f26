import { tieKey } from '../ties.js';

/**
 * The predeclared seed of the order a codec samples the bank's tokens in (fixed for every run,
 * codec and dataset; never tuned). Saved in the codec's parameters when a fit samples.
 */
export const CODEC_SAMPLE_SEED = 42;

/**
 * Who the tokens of a bank are, independently of where they sit in a file: each memory's id,
 * and `tokenOffsets [memories + 1]` (memory `m` holds rows `tokenOffsets[m]..tokenOffsets[m+1]`,
 * a token's position in its memory is its row minus its memory's offset).
 */
export interface TokenIdentity {
  readonly ids: readonly string[];
  readonly tokenOffsets: ArrayLike<number>;
}

/** 2³² / φ, Fibonacci hashing's multiplier: spreads consecutive positions over 32 bits. */
const GOLDEN = 0x9e3779b1;

/** MurmurHash3's 32-bit finaliser: a bijection that mixes every input bit into every output bit. */
function fmix32(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/** The first 32 bits of a {@link tieKey} (SHA-256 of `${seed}:${id}`). */
function idHash(id: string, seed: number): number {
  return Number.parseInt(tieKey(id, seed).slice(0, 8), 16);
}

/**
 * The rows of the `count` tokens that come first in the seeded hash order of their identity
 * (ascending rows; every row when `count ≥ n`). A token's place is `fmix32(h ⊕ φ·(p + 1))`, `h`
 * the first 32 bits of the seeded SHA-256 of its memory's id (the tie order's {@link tieKey}) and
 * `p` its position in the memory; equal places (32-bit collisions) fall back to the memory's
 * full key, then the position. The order carries no information about the file: reordering the
 * memories of a bank selects the same tokens. Without `identity` a token is its row (its
 * place: `fmix32(h₀ ⊕ φ·(row + 1))`), which only the file defines.
 *
 * @example
 * hashSampleRows(200_000, 65_536, 42, { ids, tokenOffsets }); // Int32Array(65536), ascending
 */
export function hashSampleRows(
  n: number,
  count: number,
  seed: number,
  identity?: TokenIdentity,
): Int32Array {
  if (count >= n) return Int32Array.from({ length: n }, (_, i) => i);
  const place = new Uint32Array(n);
  // The memory of each row (identity) or −1 (a row is its own token).
  const memory = new Int32Array(n).fill(-1);
  let memoryKeys: string[] = [];
  if (identity === undefined) {
    const h = idHash('', seed);
    for (let row = 0; row < n; row++) place[row] = fmix32(h ^ Math.imul(row + 1, GOLDEN));
  } else {
    const { ids, tokenOffsets } = identity;
    if (tokenOffsets.length !== ids.length + 1 || tokenOffsets[ids.length] !== n) {
      throw new Error(
        `Token identity covers ${tokenOffsets[tokenOffsets.length - 1]} tokens of ${ids.length} memories, the sample holds ${n}.`,
      );
    }
    memoryKeys = ids.map((id) => tieKey(id, seed));
    for (let m = 0; m < ids.length; m++) {
      const h = Number.parseInt(memoryKeys[m]!.slice(0, 8), 16);
      const start = tokenOffsets[m]!;
      const end = tokenOffsets[m + 1]!;
      for (let row = start; row < end; row++) {
        place[row] = fmix32(h ^ Math.imul(row - start + 1, GOLDEN));
        memory[row] = m;
      }
    }
  }
  const cut = place.slice().sort()[count - 1]!;
  const rows: number[] = [];
  const atCut: number[] = [];
  for (let row = 0; row < n; row++) {
    if (place[row]! < cut) rows.push(row);
    else if (place[row] === cut) atCut.push(row);
  }
  // Collisions at the cut: by the memory's full key, then the position (its row within it).
  atCut.sort((a, b) => {
    const ka = memory[a]! < 0 ? '' : memoryKeys[memory[a]!]!;
    const kb = memory[b]! < 0 ? '' : memoryKeys[memory[b]!]!;
    if (ka !== kb) return ka < kb ? -1 : 1;
    const pa = memory[a]! < 0 ? a : a - identity!.tokenOffsets[memory[a]!]!;
    const pb = memory[b]! < 0 ? b : b - identity!.tokenOffsets[memory[b]!]!;
    return pa - pb;
  });
  for (const row of atCut.slice(0, count - rows.length)) rows.push(row);
  return Int32Array.from(rows).sort();
}
