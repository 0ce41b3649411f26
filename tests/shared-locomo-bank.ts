import { watch } from 'node:fs';
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { inject } from 'vitest';
import { isProcessAlive } from '@bfe/core';
import { mirror, runBfe, type CliResult } from './helpers.ts';

/** A `bfe encode` of LoCoMo with MiniLM: its bank folder and how the command ended. */
export interface SharedBank {
  readonly out: string;
  readonly result: CliResult;
}

/**
 * `bfe encode --dataset locomo --out … --json` (the default model, MiniLM), run once per vitest
 * run and shared by the test files that read its bank (tests/encode.test.ts checks the bank,
 * tests/store-locomo-equality.test.ts ranks with it): the first caller runs the command, a
 * caller beside it waits for its result (woken by the file's creation, not by polling), a
 * later one reads it. The folder is the run's (`bfeRunDir`), so a bank is never reused
 * across runs or code changes.
 */
export async function sharedLocomoBank(): Promise<SharedBank> {
  const dir = join(inject('bfeRunDir'), 'locomo-minilm-encode');
  const out = join(dir, 'bank');
  const resultFile = join(dir, 'result.json');
  try {
    await mkdir(dir);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    return { out, result: await waitForResult(dir, resultFile) };
  }
  await writeFile(join(dir, 'owner'), String(process.pid));
  let result: CliResult;
  try {
    result = await runBfe(['encode', '--dataset', 'locomo', '--out', out, '--json'], {
      BFE_DATA_MIRROR: mirror,
      BFE_DATA_DIR: join(dir, 'data'),
    });
  } catch (error) {
    result = { code: null, stdout: '', stderr: `bfe encode did not run: ${String(error)}` };
  }
  await writeFile(`${resultFile}.tmp`, JSON.stringify(result));
  await rename(`${resultFile}.tmp`, resultFile);
  return { out, result };
}

/**
 * The result another test file's `bfe encode` writes into `dir`: read when it is there, else
 * read when a change in `dir` shows it. A caller whose process ended without writing one is an
 * error, named (checked on each change in `dir` and every 30 s).
 */
async function waitForResult(dir: string, resultFile: string): Promise<CliResult> {
  const read = async (): Promise<CliResult | undefined> => {
    try {
      return JSON.parse(await readFile(resultFile, 'utf8')) as CliResult;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw error;
    }
  };
  const ownerGone = async (): Promise<boolean> => {
    const pid = Number(await readFile(join(dir, 'owner'), 'utf8').catch(() => ''));
    return pid > 0 && !isProcessAlive(pid);
  };
  let wake = (): void => {};
  const watcher = watch(dir, () => wake());
  try {
    for (;;) {
      const changed = new Promise<void>((resolve) => (wake = resolve));
      const result = await read();
      if (result !== undefined) return result;
      if (await ownerGone()) {
        throw new Error(`the process encoding LoCoMo into ${dir} ended without a result`);
      }
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        changed,
        new Promise((resolve) => (timer = setTimeout(resolve, 30_000))),
      ]);
      clearTimeout(timer);
    }
  } finally {
    watcher.close();
  }
}
