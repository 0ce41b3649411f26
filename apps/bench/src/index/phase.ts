// One phase of a benchmark in a child process of its own, so that its peak RSS is its own: the
// same script and arguments with `--phase <name>` (and `extra`), its last stdout line the result.
import { spawnSync } from 'node:child_process';

/** Runs `phase` in a child process and returns the JSON of its last stdout line. */
export function runPhase(phase: string, extra: readonly string[] = []): Record<string, unknown> {
  const script = process.argv[1]!;
  const args = process.argv
    .slice(2)
    .filter((a, i, all) => a !== '--phase' && all[i - 1] !== '--phase');
  const r = spawnSync(
    process.execPath,
    [...process.execArgv, script, ...args, '--phase', phase, ...extra],
    { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], maxBuffer: 1 << 24 },
  );
  if (r.status !== 0) throw new Error(`phase ${phase} failed (${r.status}): ${r.stdout}`);
  return JSON.parse(r.stdout.trim().split('\n').at(-1)!) as Record<string, unknown>;
}
