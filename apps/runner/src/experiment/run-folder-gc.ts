import type { Dirent } from 'node:fs';
import { readdir, rm, rmdir } from 'node:fs/promises';
import { join } from 'node:path';
import { isPidAlive } from '../cache/index.js';

// Leftovers of runs killed while their run folder was written (run-folder.ts): the empty
// reserved `runs/<name>/<runId>/` and its `<runId>.tmp-<pid>-<random>/`. `bfe cache gc --runs-dir`
// removes them for every experiment, and each run for its own experiment before it starts.

/** One leftover removed (or, dry, that would be). */
export interface RunLeftover {
  readonly path: string;
  readonly reason: string;
}

const TMP_NAME = /^(.+)\.tmp-(\d+)(?:-[0-9a-f]+)?$/;

async function entries(dir: string): Promise<Dirent[]> {
  try {
    return await readdir(dir, { withFileTypes: true });
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return [];
    throw error;
  }
}

/**
 * Cleans one experiment's folder (`runs/<name>/`): temporary run folders whose process (pid,
 * on this host) is gone, and empty run folders that no live process is filling. A run creates
 * its temporary folder before it reserves the run folder (see openRunFolder), so an empty run
 * folder without a live temporary sibling is abandoned.
 */
export async function cleanExperimentRuns(
  dir: string,
  options: { dryRun?: boolean } = {},
): Promise<RunLeftover[]> {
  const removed: RunLeftover[] = [];
  const list = (await entries(dir)).filter((e) => e.isDirectory());
  const live = new Set<string>();
  for (const e of list) {
    const m = TMP_NAME.exec(e.name);
    if (m === null) continue;
    const pid = Number(m[2]);
    if (pid === process.pid || isPidAlive(pid) !== false) {
      live.add(m[1]!);
      continue;
    }
    const path = join(dir, e.name);
    if (options.dryRun !== true) await rm(path, { recursive: true, force: true });
    removed.push({ path, reason: `temporary run folder of process ${pid}, which is gone` });
  }
  for (const e of list) {
    if (TMP_NAME.test(e.name) || live.has(e.name)) continue;
    const path = join(dir, e.name);
    if ((await entries(path)).length > 0) continue;
    if (options.dryRun !== true) {
      // rmdir, not rm: a folder filled meanwhile (published) is not empty and stays.
      const gone = await rmdir(path).then(
        () => true,
        () => false,
      );
      if (!gone) continue;
    }
    removed.push({ path, reason: 'empty run folder of a run that was killed' });
  }
  return removed;
}

/** {@link cleanExperimentRuns} for every experiment folder under `runsDir`. */
export async function cleanRunFolders(
  runsDir: string,
  options: { dryRun?: boolean } = {},
): Promise<RunLeftover[]> {
  const removed: RunLeftover[] = [];
  for (const e of await entries(runsDir)) {
    if (e.isDirectory())
      removed.push(...(await cleanExperimentRuns(join(runsDir, e.name), options)));
  }
  return removed;
}
