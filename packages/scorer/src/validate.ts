import { ScorerInputError, firstNonFinite, flatTokenStore, type TokenStore } from '@bfe/index';

/**
 * One side of an encoded bank, as the scorer reads it. `@bfe/encoder`'s `BankSide` plus the
 * bank's `dim` satisfies it: `{ ...bank.memories, dim: bank.dim }`.
 */
export interface TokenBank {
  /** Vector dimension `d`. */
  readonly dim: number;
  /**
   * Unit-norm content-token states `[tokens * dim]`, grouped by row; required for queries. A
   * memory side may give {@link tokens} instead (a bank read from disk on demand).
   */
  readonly tokenVectors?: Float32Array;
  /** The token states as a store (e.g. read from the bank's Arrow file); wins over the array. */
  readonly tokens?: TokenStore;
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
  object,
  { offsets: ArrayLike<number>; pooled: Float32Array; dim: number }
>();
const stores = new WeakMap<Float32Array, TokenStore>();

/** The bank's tokens as a store: its own, or a view of its `tokenVectors` (memoised). */
export function tokenStoreOf(bank: TokenBank): TokenStore {
  if (bank.tokens !== undefined) return bank.tokens;
  const vectors = tokenVectorsOf(bank, 'memories');
  let store = stores.get(vectors);
  if (store === undefined) {
    store = flatTokenStore(vectors, bank.dim);
    stores.set(vectors, store);
  }
  return store;
}

/** The bank's token vectors in memory; a side with only a store has none. */
export function tokenVectorsOf(bank: TokenBank, role: 'memories' | 'queries'): Float32Array {
  if (bank.tokenVectors === undefined) {
    throw new ScorerInputError('bad-shape', `${role}: the token vectors are not in memory`);
  }
  return bank.tokenVectors;
}

/**
 * Checks a bank once per `tokenVectors` array (or token store) (memoised on its identity): offsets start at 0
 * and never decrease, vectors and pooled rows have `dim` floats each, pooled vectors are
 * finite. Returns the row count.
 */
export function checkBank(bank: TokenBank, role: 'memories' | 'queries'): number {
  const { dim, tokenOffsets, pooled } = bank;
  const rows = tokenOffsets.length - 1;
  const key: object | undefined = bank.tokens ?? bank.tokenVectors;
  if (key === undefined) {
    throw new ScorerInputError('bad-shape', `${role}: neither token vectors nor a token store`);
  }
  const seen = checked.get(key);
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
  const floats =
    bank.tokens === undefined ? bank.tokenVectors!.length : bank.tokens.size * bank.tokens.dim;
  checkWidth(role, 'token vectors', floats, tokens, dim);
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
  checked.set(key, { offsets: tokenOffsets, pooled, dim });
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
