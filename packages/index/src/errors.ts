import { DataError, type BfeErrorOptions } from '@bfe/core';

/** What is wrong with a scorer input; stable, for callers that branch on it. */
export type ScorerInputReason =
  | 'dimension-mismatch'
  | 'model-mismatch'
  | 'non-finite'
  | 'empty-bank'
  | 'k-exceeds-bank'
  | 'bad-shape'
  | 'bad-candidates'
  | 'bad-query-rows';

/**
 * A scorer input that a user can cause: query and bank of different dimensions, NaN or Inf
 * vectors, an empty candidate bank, `k` larger than the bank, malformed offsets or candidate
 * indices. Code `DATA_INVALID`; `reason` says which, the message names the rows or tokens.
 */
export class ScorerInputError extends DataError {
  readonly reason: ScorerInputReason;

  constructor(reason: ScorerInputReason, message: string, options: BfeErrorOptions = {}) {
    super(message, options);
    this.reason = reason;
  }
}

/**
 * The `k` a search of `size` bank tokens returns: `min(k, size)`.
 * @throws {ScorerInputError} `empty-bank` for `size` 0; `k-exceeds-bank` for `k > size` unless
 *   `clampK`
 */
export function searchK(k: number, size: number, clampK: boolean | undefined): number {
  if (size === 0) throw new ScorerInputError('empty-bank', 'the bank to search holds no tokens');
  if (k > size && clampK !== true) {
    throw new ScorerInputError(
      'k-exceeds-bank',
      `k = ${k} is larger than the bank of ${size} tokens`,
      {
        suggestion: `Use k ≤ ${size}, or clampK to search the whole bank.`,
      },
    );
  }
  return Math.min(k, size);
}
