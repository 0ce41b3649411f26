import { existsSync } from 'node:fs';

// Test failpoints of `bfe run`, read from the environment (never set outside tests):
//
// - `BFE_FAULT_STAGE_DELAY=<stage>:<ms>` sleeps that long inside the named stage's compute,
//   before it computes (an awaited timer, so signals are handled meanwhile).
// - `BFE_FAULT_STAGE_WAIT=<stage>:<file>` waits there until `<file>` exists (polled), so a test
//   can hold a run mid-stage for exactly as long as it needs, without guessing a duration.
// - `BFE_FAULT_KILL=<point>` ends the process with SIGKILL (no clean-up of any kind) when the
//   run reaches `<point>`:
//   `start:<stage>`          a stage begins (before the cache is asked);
//   `compute:<stage>`        the first progress report of a stage's compute (encode, adapt and
//                            score report progress), i.e. mid-compute;
//   `before-publish:<kind>`  the artifact and its manifest written, not yet renamed into place;
//   `after-publish:<kind>`   renamed into `objects/`, the key's lock still held;
//   `run-folder`             the run folder reserved and its copies half made;
//   `run-folder-publish`     the run folder filled, not yet renamed into place;
//   `latest`                 the run folder published, `latest.json` not yet written.
//   `<stage>` is a stage's name (`score@42`) or its kind (`score`).

/** Ends the process with SIGKILL when `BFE_FAULT_KILL` names `point` (see above). */
export function failpoint(point: string): void {
  const wanted = process.env.BFE_FAULT_KILL;
  if (wanted !== undefined && wanted !== '' && wanted === point) {
    process.stderr.write(`fault: killed at ${point}\n`);
    process.kill(process.pid, 'SIGKILL');
  }
}

/** The failpoint of a stage, matched by its name (`score@42`) or its kind (`score`). */
export function stageFailpoint(prefix: string, name: string, kind: string): void {
  failpoint(`${prefix}:${name}`);
  if (name !== kind) failpoint(`${prefix}:${kind}`);
}

/** Milliseconds `BFE_FAULT_STAGE_DELAY` asks the stage to sleep (0 when it names another). */
export function stageDelayMs(name: string, kind: string): number {
  const fault = /^(.+):(\d+)$/.exec(process.env.BFE_FAULT_STAGE_DELAY ?? '');
  return fault !== null && (fault[1] === name || fault[1] === kind) ? Number(fault[2]) : 0;
}

/** Waits until the file `BFE_FAULT_STAGE_WAIT` names for this stage exists (see above). */
export async function stageWait(name: string, kind: string): Promise<void> {
  const fault = /^([^:]+):(.+)$/.exec(process.env.BFE_FAULT_STAGE_WAIT ?? '');
  if (fault === null || (fault[1] !== name && fault[1] !== kind)) return;
  while (!existsSync(fault[2]!)) await new Promise((wake) => setTimeout(wake, 50));
}
