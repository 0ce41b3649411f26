import { SplitError } from '@bfe/core';
import type { BfeErrorCode } from '@bfe/core';

/**
 * A split that exists but breaks an invariant: a query in two splits, a bank reachable from
 * two strict splits, a hash that does not match, flags that hide a shared bank. It is a
 * {@link SplitError} (so `instanceof SplitError` catches both), with the code `SPLIT_INVALID`
 * instead of `SPLIT_IMPOSSIBLE`, so the CLI can tell "cannot be made" from "must not be used".
 *
 * @example
 * try {
 *   verifySplit(split, benchmark);
 * } catch (error) {
 *   if (error instanceof SplitInvalidError) error.code; // 'SPLIT_INVALID'
 * }
 */
export class SplitInvalidError extends SplitError {
  // Re-declared so that the subclass reports its own stable code; the field initialiser runs
  // after SplitError's constructor has set 'SPLIT_IMPOSSIBLE'.
  override readonly code: BfeErrorCode = 'SPLIT_INVALID';
}
