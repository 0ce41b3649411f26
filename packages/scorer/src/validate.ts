import { ScorerInputError } from './errors.js';
import { firstNonFinite } from './dots.js';

/**
 * One side of an encoded bank, as the scorer reads it. `@bfe/encoder`'s `BankSide` plus the
 * bank's `dim` satisfies it: `{ ...bank.memories, dim: bank.dim }`.
 */
export interface TokenBank {
  /** Vector dimension `d`. */
  readonly dim: number;
  /** Unit-norm content-token states `[tokens * dim]`, grouped by row. */
  readonly tokenVectors: Float32Array;
  /** `[rows + 1]`: row `i` owns tokens `tokenOffsets[i]..tokenOffsets[i+1]-1`. */
  readonly tokenOffsets: ArrayLike<number>;
  /** Native pooled vectors `[rows * dim]`. */
  readonly pooled: Float32Array;
  /**
   * Row ids: named in error messages; for memories, they also order equal token scores
   * (`tieOrder`, a seeded hash of each id) instead of the bank's row order.
   */
  readonly ids?: readonly string[];
  /** The encoder that made the bank (e.g. its SHA-256); checked when both sides name one. */
  readonly model?: string;
}

const checked = new WeakMap<
  Float32Array,
  { offsets: ArrayLike<number>; pooled: Float32Array; dim: number }
>();

/**
 * Checks a bank once per `tokenVectors` array (memoised on its identity): offsets start at 0
 * and never decrease, vectors and pooled rows have `dim` floats each, pooled vectors are
 * finite. Returns the row count.
 */
export function checkBank(bank: TokenBank, role: 'memories' | 'queries'): number {
  const { dim, tokenVectors, tokenOffsets, pooled } = bank;
  const rows = tokenOffsets.length - 1;
  const seen = checked.get(tokenVectors);
  if (seen?.offsets === tokenOffsets && seen.pooled === pooled && seen.dim === dim) return rows;
  if (!Number.isInteger(dim) || dim <= 0) {
    throw new ScorerInputError('bad-shape', `${role}: dim must be a positive integer, got ${dim}`);
  }
  if (rows < 0 || tokenOffsets[0] !== 0) {
    throw new ScorerInputError('bad-shape', `${role}: tokenOffsets must start with 0`);
  }
  for (let i = 0; i < rows; i++) {
    if (!(tokenOffsets[i + 1]! >= tokenOffsets[i]!)) {
      throw new ScorerInputError(
        'bad-shape',
        `${role}: tokenOffsets decrease at row ${i} (${tokenOffsets[i]} → ${tokenOffsets[i + 1]})`,
      );
    }
  }
  const tokens = tokenOffsets[rows]!;
  checkWidth(role, 'token vectors', tokenVectors.length, tokens, dim);
  checkWidth(role, 'pooled vectors', pooled.length, rows, dim);
  // Pooled vectors are checked here, once per bank; token vectors as the kernel reads them
  // (its checksum), queries' tokens when they are gathered.
  const singular = role === 'memories' ? 'memory' : 'query';
  for (let row = 0; row < rows; row++) {
    const bad = firstNonFinite(pooled, row * dim, dim);
    if (bad >= 0) {
      const id = bank.ids?.[row];
      throw new ScorerInputError(
        'non-finite',
        `the pooled vector of ${singular} row ${row}${id === undefined ? '' : ` (${id})`} has a non-finite component (${pooled[row * dim + bad]} at dimension ${bad})`,
      );
    }
  }
  checked.set(tokenVectors, { offsets: tokenOffsets, pooled, dim });
  return rows;
}

function checkWidth(role: string, what: string, floats: number, count: number, dim: number): void {
  if (floats === count * dim) return;
  if (count > 0 && floats % count === 0) {
    throw new ScorerInputError(
      'dimension-mismatch',
      `${role}: ${what} have ${floats / count} floats each, but the bank's dim is ${dim}`,
      { suggestion: 'Queries and memories must come from the same encoder.' },
    );
  }
  throw new ScorerInputError(
    'bad-shape',
    `${role}: ${what} hold ${floats} floats, expected ${count} × ${dim}`,
  );
}

/** Memory and query banks must share a dimension (and a model when both name one). */
export function checkPair(memories: TokenBank, queries: TokenBank): void {
  if (memories.dim !== queries.dim) {
    throw new ScorerInputError(
      'dimension-mismatch',
      `queries have dimension ${queries.dim} but memories have ${memories.dim}`,
      { suggestion: 'Encode queries and memories with the same model.' },
    );
  }
  if (
    memories.model !== undefined &&
    queries.model !== undefined &&
    memories.model !== queries.model
  ) {
    throw new ScorerInputError(
      'model-mismatch',
      `queries come from model ${queries.model} but memories from ${memories.model}`,
      { suggestion: 'Encode queries and memories with the same model.' },
    );
  }
}

/**
 * Candidate rows: integers in `[0, rows)`, distinct, at least one. Returns them as given
 * (`Int32Array`), ascending (`sorted`), and each sorted slot's position in the given list.
 */
export function checkCandidates(
  candidates: ArrayLike<number>,
  rows: number,
): { given: Int32Array; sorted: Int32Array; givenOf: Int32Array } {
  const m = candidates.length;
  if (m === 0) {
    throw new ScorerInputError('bad-candidates', 'the query has no candidate memories');
  }
  const given = new Int32Array(m);
  for (let i = 0; i < m; i++) {
    const c = candidates[i]!;
    if (!Number.isInteger(c) || c < 0 || c >= rows) {
      throw new ScorerInputError(
        'bad-candidates',
        `candidate ${i} is ${c}, not a memory row in 0..${rows - 1}`,
      );
    }
    given[i] = c;
  }
  const givenOf = new Int32Array(m);
  for (let i = 0; i < m; i++) givenOf[i] = i;
  givenOf.sort((a, b) => given[a]! - given[b]!);
  const sorted = new Int32Array(m);
  for (let s = 0; s < m; s++) {
    sorted[s] = given[givenOf[s]!]!;
    if (s > 0 && sorted[s] === sorted[s - 1]) {
      throw new ScorerInputError(
        'bad-candidates',
        `memory row ${sorted[s]} is listed twice among the candidates`,
      );
    }
  }
  return { given, sorted, givenOf };
}

/** Query rows: integers in `[0, rows)`, at least one. */
export function checkQueryRows(queryRows: ArrayLike<number>, rows: number): Int32Array {
  if (queryRows.length === 0)
    throw new ScorerInputError('bad-query-rows', 'no query rows to score');
  const out = new Int32Array(queryRows.length);
  for (let i = 0; i < queryRows.length; i++) {
    const q = queryRows[i]!;
    if (!Number.isInteger(q) || q < 0 || q >= rows) {
      throw new ScorerInputError(
        'bad-query-rows',
        `query row ${q} (position ${i}) is not a query row in 0..${rows - 1}`,
      );
    }
    out[i] = q;
  }
  return out;
}
