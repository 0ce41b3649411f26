import { BfeError, toStorageErrorSync } from '@bfe/core';

/** How {@link handleError} prints. */
export interface HandleErrorOptions {
  /** Print the stack (and the cause's) for user errors too: `--debug` or `BFE_DEBUG=1`. */
  readonly debug?: boolean;
}

/**
 * The one place that turns errors into text and exit codes: a user-caused {@link BfeError}
 * prints its code, message and suggestion and exits 2; a disk-full, permission or I/O error
 * from the file system (ENOSPC, EACCES, EIO…) is one too, as a `StorageError` naming its path;
 * anything else is a bug and exits 1 with its stack. `debug` adds the stack to user errors.
 */
export function handleError(error: unknown, options: HandleErrorOptions = {}): number {
  const mapped = toStorageErrorSync(error);
  if (mapped instanceof BfeError) {
    console.error(`bfe: ${mapped.code}: ${mapped.message}`);
    if (mapped.suggestion !== undefined) console.error(`  ${mapped.suggestion}`);
    if (options.debug === true) {
      console.error(mapped.stack ?? '');
      if (mapped.cause instanceof Error) console.error(`cause: ${mapped.cause.stack ?? ''}`);
    }
    return 2;
  }
  console.error('bfe: internal error (please report it):');
  console.error(error instanceof Error ? (error.stack ?? error.message) : String(error));
  return 1;
}

/** Whether the user asked for stacks: `--debug` anywhere on the command line, or BFE_DEBUG=1. */
export function debugRequested(argv: readonly string[], env: NodeJS.ProcessEnv): boolean {
  return argv.includes('--debug') || env.BFE_DEBUG === '1';
}
