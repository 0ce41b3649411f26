import { DataError, type BfeErrorOptions } from '@bfe/core';

/** What is wrong with an adapter input; stable, for callers that branch on it. */
export type AdapterInputReason =
  | 'bad-shape'
  | 'non-finite'
  | 'no-positive'
  | 'bad-positive'
  | 'duplicate-query'
  | 'dimension-mismatch';

/**
 * Training or query data the adapter cannot use, that a user can cause: token matrices whose
 * length is not a multiple of `dim`, malformed memory offsets, NaN or Inf token states, a
 * training query without a relevant memory, positives out of range or repeated, a query id
 * listed twice in one split, tokens of another dimension than the adapter's. Code
 * `DATA_INVALID`; `reason` says which, the message names the query.
 */
export class AdapterInputError extends DataError {
  readonly reason: AdapterInputReason;

  constructor(reason: AdapterInputReason, message: string, options: BfeErrorOptions = {}) {
    super(message, options);
    this.reason = reason;
  }
}
