import { existsSync } from 'node:fs';
import { mkdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { isProcessAlive } from '@bfe/core';
import { OFFICIAL_FILES, fetchOfficialFile } from '@bfe/datasets';
import { repoRoot, testDataMirror } from './vitest.shared.ts';

/**
 * Where the verified, unpacked copies of the mirrored benchmark files live for tests: one
 * directory per clone, outside the source tree's tracked files.
 */
export const sharedDataDir = join(repoRoot, 'node_modules', '.cache', 'bfe-test-data');

/**
 * Vitest global setup of the projects that read the real benchmark files (`BFE_DATA_MIRROR`):
 * copies every official file from the mirror into {@link sharedDataDir} once, verifying its
 * SHA-256 and unpacking `.xz` files (LongMemEval S: 41 MB → 257 MB, the slow part), and hands
 * the directory to the tests (`sharedDataDir()` of `@bfe/core/testing`). A later run, or
 * another vitest process started beside this one by turbo, reuses the verified copies: a lock
 * makes the others wait instead of unpacking the same files again. Global setup runs before
 * any test file and outside every test and hook timeout.
 */
export default async function setup(project: TestProject): Promise<void> {
  const mirror = testDataMirror();
  assertRequiredMirror(mirror);
  if (mirror === undefined) return;
  await mkdir(sharedDataDir, { recursive: true });
  await withLock(join(sharedDataDir, '.lock'), async () => {
    for (const file of Object.values(OFFICIAL_FILES)) {
      await fetchOfficialFile(file, { dataDir: sharedDataDir, mirror }, () => {
        throw new Error('tests never download: the file must be in BFE_DATA_MIRROR');
      });
    }
  });
  project.provide('bfeDataDir', sharedDataDir);
}

/**
 * With BFE_REQUIRE_DATA=1 (CI) the mirror must be there: its absence is one error naming the
 * path (or the unset variable) before any test, instead of every real-data test skipping.
 */
export function assertRequiredMirror(mirror: string | undefined): void {
  if (process.env.BFE_REQUIRE_DATA !== '1') return;
  if (mirror === undefined) {
    throw new Error('BFE_REQUIRE_DATA=1 but BFE_DATA_MIRROR is not set: name the benchmark mirror');
  }
  if (!existsSync(mirror)) {
    throw new Error(`BFE_REQUIRE_DATA=1 but the benchmark mirror ${mirror} does not exist`);
  }
}

/** Runs `fn` holding a directory lock; waits for a live holder, takes over from a dead one. */
async function withLock(lockDir: string, fn: () => Promise<void>): Promise<void> {
  for (;;) {
    try {
      await mkdir(lockDir);
      break;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    const owner = Number(await readFile(join(lockDir, 'pid'), 'utf8').catch(() => ''));
    // No pid a minute after the lock was made: its maker died before writing one.
    const age = Date.now() - ((await stat(lockDir).catch(() => undefined))?.mtimeMs ?? Date.now());
    if ((owner > 0 && !isProcessAlive(owner)) || (!(owner > 0) && age > 60_000)) {
      await rm(lockDir, { recursive: true, force: true });
      continue;
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  try {
    await writeFile(join(lockDir, 'pid'), String(process.pid));
    await fn();
  } finally {
    await rm(lockDir, { recursive: true, force: true });
  }
}
