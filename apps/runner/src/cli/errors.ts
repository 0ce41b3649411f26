import { BfeError } from '@bfe/core';

/**
 * The one place that turns errors into text and exit codes: a user-caused {@link BfeError}
 * prints its code, message and suggestion and exits 2; anything else is a bug and exits 1
 * with its stack.
 */
export function handleError(error: unknown): number {
  if (error instanceof BfeError) {
    console.error(`bfe: ${error.code}: ${error.message}`);
    if (error.suggestion !== undefined) console.error(`  ${error.suggestion}`);
    return 2;
  }
  console.error('bfe: internal error (please report it):');
  console.error(error instanceof Error ? (error.stack ?? error.message) : String(error));
  return 1;
}
