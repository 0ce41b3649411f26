import { copyFile, mkdir, rename, rm, rmdir } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { randomBytes } from 'node:crypto';
import { contentHash, writeFileAtomic } from '@bfe/core';
import type { ArtifactResult } from '../cache/store.js';
import { SCORE_FILES } from '../score/write.js';
import { failpoint } from './faults.js';
import { cleanExperimentRuns } from './run-folder-gc.js';

/** One seed's artifacts that the run folder copies. */
export interface SeedArtifacts {
  readonly seed: number | null;
  readonly score: ArtifactResult;
  readonly adapt: ArtifactResult | undefined;
}

/** A run folder being written: files go to `tmpDir` until {@link publishRunFolder}. */
export interface RunFolder {
  readonly runId: string;
  readonly runDir: string;
  readonly tmpDir: string;
  readonly latestFile: string;
}

/**
 * Removes the leftovers of this experiment's killed runs, then reserves
 * `runs/<experiment>/<run-id>/` (a UTC timestamp and the stages' keys' hash) by creating it
 * empty, after its temporary sibling `<run-id>.tmp-<pid>-<random>`: two runs of one experiment on one cache can finish in the same second with
 * the same keys, so the second takes `-2`. The folder is filled in a temporary sibling:
 * the first seed's `per-query.jsonl` and `k-sweep.json` at the top (the caller writes the
 * seeds' `results.json` there), every seed's score files under `seeds/<seed>/` with its adapter
 * files.
 */
export async function openRunFolder(input: {
  readonly runsDir: string;
  readonly experiment: string;
  readonly stageKeys: readonly string[];
  readonly perSeed: readonly SeedArtifacts[];
}): Promise<RunFolder> {
  const base = join(resolve(input.runsDir), input.experiment);
  const baseId = `${new Date()
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d+Z$/, 'Z')}-${contentHash([...input.stageKeys]).slice(0, 8)}`;
  await mkdir(base, { recursive: true });
  // Leftovers of this experiment's killed runs (run-folder-gc.ts).
  await cleanExperimentRuns(base).catch(() => undefined);
  let runId = baseId;
  let tmpDir: string;
  for (let n = 2; ; n++) {
    // The temporary folder first: an empty run folder without a live one is abandoned.
    // Named by pid (for gc) and a random tag (two runs of one process may try one run id).
    tmpDir = `${join(base, runId)}.tmp-${process.pid}-${randomBytes(4).toString('hex')}`;
    await mkdir(tmpDir);
    try {
      await mkdir(join(base, runId));
      break;
    } catch (error) {
      await rm(tmpDir, { recursive: true, force: true });
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      runId = `${baseId}-${n}`;
    }
  }
  const runDir = join(base, runId);
  const folder = { runId, runDir, tmpDir, latestFile: join(base, 'latest.json') };
  try {
    await fillRunFolder(tmpDir, input.perSeed);
  } catch (error) {
    await abandonRunFolder(folder);
    throw error;
  }
  return folder;
}

/** Copies the artifacts people read into the run's temporary folder. */
async function fillRunFolder(tmpDir: string, perSeed: readonly SeedArtifacts[]): Promise<void> {
  const input = { perSeed };
  const first = input.perSeed[0];
  if (first === undefined) throw new Error('openRunFolder: a run has at least one score stage');
  for (const f of SCORE_FILES) {
    if (f !== 'results.json') await copyFile(join(first.score.dir, f), join(tmpDir, f));
  }
  for (const p of input.perSeed) {
    if (p.seed === null) continue;
    const seedDir = join(tmpDir, 'seeds', String(p.seed));
    await mkdir(seedDir, { recursive: true });
    for (const f of SCORE_FILES) await copyFile(join(p.score.dir, f), join(seedDir, f));
    if (p.adapt !== undefined) {
      for (const f of ['adapter.json', 'adapter-zero-floor.json', 'training.json']) {
        await copyFile(join(p.adapt.dir, f), join(seedDir, f));
      }
    }
  }
}

/**
 * Removes a run folder that failed before it was published (a full disk, a denied write): its
 * temporary sibling and the empty reserved folder, so a failed run leaves nothing behind.
 * Errors of the clean-up itself are ignored; the caller rethrows the original error.
 */
export async function abandonRunFolder(folder: RunFolder): Promise<void> {
  await rm(folder.tmpDir, { recursive: true, force: true }).catch(() => undefined);
  await rmdir(folder.runDir).catch(() => undefined);
  await rmdir(dirname(folder.runDir)).catch(() => undefined); // only when empty
}

/**
 * Publishes a filled run folder: it replaces the empty reserved one in one rename (POSIX;
 * Windows refuses to rename onto a directory, so there it is removed first), then
 * `latest.json` points to it (written atomically, so runs finishing together never interleave
 * their bytes).
 */
export async function publishRunFolder(folder: RunFolder): Promise<void> {
  failpoint('run-folder-publish');
  await rename(folder.tmpDir, folder.runDir).catch(async (error: unknown) => {
    if ((error as NodeJS.ErrnoException).code !== 'EPERM') throw error;
    await rmdir(folder.runDir);
    await rename(folder.tmpDir, folder.runDir);
  });
  failpoint('latest');
  const body = { runId: folder.runId, runDir: folder.runDir };
  await writeFileAtomic(folder.latestFile, `${JSON.stringify(body, null, 2)}\n`);
}
