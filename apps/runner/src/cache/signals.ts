import { rmSync, rmdirSync } from 'node:fs';

// Clean-up of in-flight computations when the process is interrupted. A compute writes into a
// temporary directory while holding a lock directory; on SIGINT/SIGTERM both must go, or the
// next run waits for a stale lock and `bfe cache gc` has leftovers to remove.
//
// proper-lockfile removes its held locks on exit through signal-exit, but signal-exit only acts
// on a signal when no one else listens for it, and it knows nothing of our temporary
// directories. So while any computation is in flight we listen ourselves: remove the
// temporary directories and the locks we hold, synchronously, then exit 128 + signal number
// (130 for SIGINT, 143 for SIGTERM). process.exit also runs signal-exit's exit hook, which
// releases proper-lockfile's locks a second time (harmless).

/** A lock directory this process holds. */
export interface HeldLock {
  readonly dir: string;
  /** Set when proper-lockfile reports the lock compromised: it is no longer ours to remove. */
  lost: boolean;
}

/** A computation in flight: its temporary directory and the lock it holds. */
export interface InFlight {
  readonly tmpDir: string;
  readonly lock: HeldLock;
}

const inFlight = new Set<InFlight>();

/** Registers an in-flight computation; returns its removal. (Module-internal to src/cache.) */
export function trackInFlight(entry: InFlight): () => void {
  inFlight.add(entry);
  return () => {
    inFlight.delete(entry);
  };
}

/** Removes every in-flight temporary directory and held lock, synchronously. */
export function cleanupInFlightSync(): void {
  for (const entry of inFlight) {
    rmSync(entry.tmpDir, { recursive: true, force: true });
    if (!entry.lock.lost) {
      // The holder record beside the lock (locks.ts), then the lock itself.
      rmSync(entry.lock.dir.replace(/\.lock$/, '.owner'), { force: true });
      try {
        rmdirSync(entry.lock.dir);
      } catch {
        // Already gone.
      }
    }
  }
  inFlight.clear();
}

const EXIT_CODES = { SIGINT: 130, SIGTERM: 143 } as const;
type CleanupSignal = keyof typeof EXIT_CODES;

let installed = 0;
const onSignal = (signal: CleanupSignal): void => {
  cleanupInFlightSync();
  process.exit(EXIT_CODES[signal]);
};
const onExit = (): void => cleanupInFlightSync();

/**
 * Makes SIGINT and SIGTERM remove the temporary directories and locks of in-flight artifact
 * computations and exit the process with 130 (SIGINT) or 143 (SIGTERM); a plain
 * `process.exit` also removes the temporary directories. Reference-counted: the handlers stay
 * until every returned `uninstall` has been called. {@link ArtifactStore} installs it around
 * each computation unless opened with `exitOnSignal: false`; a long `bfe run` may install it
 * once for its whole life.
 *
 * Note that while installed, SIGINT and SIGTERM always end the process: Node's default
 * behaviour for them is replaced, not extended.
 *
 * @example
 * const uninstall = installSignalCleanup();
 * try { await runPipeline(); } finally { uninstall(); }
 */
export function installSignalCleanup(): () => void {
  if (installed === 0) {
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
    process.on('exit', onExit);
  }
  installed += 1;
  let done = false;
  return () => {
    if (done) return;
    done = true;
    installed -= 1;
    if (installed === 0) {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
      process.off('exit', onExit);
    }
  };
}
