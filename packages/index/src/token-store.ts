import { dotsInto, scratchOffsets } from './dots.js';

/**
 * A bank's token vectors `[size × dim]` as the index reads them: ranges in order (the streamed
 * search) and a few rows at random (the float64 rescoring of the proposals). A store may hold
 * the vectors in memory ({@link flatTokenStore}) or read them from a file on demand
 * (`fileTokenStore`: rows read by position from a float32/float16 matrix file), so a bank never has to fit in RAM.
 */
export interface TokenStore {
  readonly size: number;
  readonly dim: number;
  /**
   * Tokens `start..end-1` as `[(end - start) × dim]` floats. May be a view into the store's
   * own scratch buffer, valid until the next call on the store.
   */
  read(start: number, end: number): Float32Array;
  /**
   * `out[h] = Σ_j token(tokens[h])[j] · query[at + j]` for `h < count`, accumulated in float64
   * in order of `j` ({@link dotsInto}), so every store gives bit-identical scores.
   */
  dots(tokens: Int32Array, count: number, query: Float32Array, at: number, out: Float64Array): void;
  /**
   * The end (exclusive) of the stored run holding token `t`, for a store kept in pieces: reads
   * up to it are views, reads past it copy, so a chunked scan cuts its chunks there. Absent: one
   * piece.
   */
  pieceEnd?(t: number): number;
  /** Releases a file handle, if any. */
  close?(): void;
}

/**
 * A store over one flat row-major `Float32Array` `[size × dim]`: reads are zero-copy views.
 *
 * @example
 * const store = flatTokenStore(bank.memories.tokenVectors, bank.dim);
 * store.read(0, 10); // Float32Array [10 * dim], a view
 */
export function flatTokenStore(vectors: Float32Array, dim: number): TokenStore {
  if (!Number.isInteger(dim) || dim <= 0 || vectors.length % dim !== 0) {
    throw new Error(`flatTokenStore: ${vectors.length} floats are not rows of ${dim}`);
  }
  return {
    size: vectors.length / dim,
    dim,
    read: (start, end) => vectors.subarray(start * dim, end * dim),
    dots: (tokens, count, query, at, out) => {
      const offsets = scratchOffsets(count);
      for (let h = 0; h < count; h++) offsets[h] = tokens[h]! * dim;
      dotsInto(vectors, offsets, count, query, at, out, dim);
    },
  };
}
