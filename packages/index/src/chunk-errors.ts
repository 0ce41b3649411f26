import { firstNonFinite } from './dots.js';
import { ScorerInputError } from './errors.js';

/** One chunk's float32 rows from `source`, checked against its size. */
export async function readChunk(
  source: {
    readonly dim: number;
    read(start: number, end: number): Float32Array | Promise<Float32Array>;
  },
  start: number,
  end: number,
): Promise<Float32Array> {
  const vectors = await source.read(start, end);
  if (vectors.length !== (end - start) * source.dim) {
    throw new Error(
      `exactTopK: source returned ${vectors.length} floats for ${end - start} × ${source.dim}`,
    );
  }
  return vectors;
}

/** Names the first NaN/Inf query row or bank token of a chunk whose scores were not finite. */
export function nonFiniteError(
  queries: Float32Array,
  rows: number,
  vectors: Float32Array,
  n: number,
  dim: number,
  start: number,
  describe: (index: number) => string,
): ScorerInputError {
  for (let r = 0; r < rows; r++) {
    const bad = firstNonFinite(queries, r * dim, dim);
    if (bad >= 0) {
      return new ScorerInputError(
        'non-finite',
        `query row ${r} has a non-finite component (${queries[r * dim + bad]} at dimension ${bad})`,
      );
    }
  }
  for (let j = 0; j < n; j++) {
    const bad = firstNonFinite(vectors, j * dim, dim);
    if (bad >= 0) {
      return new ScorerInputError(
        'non-finite',
        `${describe(start + j)} has a non-finite component (${vectors[j * dim + bad]} at dimension ${bad})`,
        { suggestion: 'Re-encode the bank; token vectors must be finite unit vectors.' },
      );
    }
  }
  return new ScorerInputError(
    'non-finite',
    `inner products of tokens ${start}..${start + n - 1} overflow float32 although every component is finite`,
    { suggestion: 'Token vectors must be L2-normalised.' },
  );
}
