import { spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, rename, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';

/**
 * A cached virtualenv beside the model cache: `$<override>` when set, else
 * `$XDG_CACHE_HOME/bfe/<name>` (else `~/.cache/bfe/<name>`), created once per machine.
 */
export function cacheVenv(
  name: string,
  override: string | undefined,
  env: NodeJS.ProcessEnv = process.env,
): string {
  if (override !== undefined && override !== '') return resolve(override);
  const cacheHome =
    env.XDG_CACHE_HOME !== undefined && env.XDG_CACHE_HOME !== ''
      ? env.XDG_CACHE_HOME
      : join(homedir(), '.cache');
  return resolve(cacheHome, 'bfe', name);
}

export const pythonIn = (venv: string): string => join(venv, 'bin', 'python');
const works = (venv: string, probe: readonly string[]): boolean =>
  existsSync(pythonIn(venv)) && spawnSync(pythonIn(venv), probe).status === 0;

/**
 * Makes sure `venv` exists and passes `probe` (`python -m venv` with `$BFE_PYTHON` or
 * `python3`, then `pip install requirements`). Built in a temporary folder and renamed into
 * place, so concurrent callers never see half a venv. Returns the venv's python.
 * @throws Error naming the step that failed (no Python, no network for pip)
 */
export async function ensureVenv(
  what: string,
  venv: string,
  requirements: readonly string[],
  probe: readonly string[],
  env: NodeJS.ProcessEnv = process.env,
): Promise<string> {
  if (works(venv, probe)) return pythonIn(venv);
  await mkdir(dirname(venv), { recursive: true });
  const work = `${venv}.tmp-${process.pid}`;
  await rm(work, { recursive: true, force: true });
  const python = env.BFE_PYTHON ?? 'python3';
  const run = (cmd: string, args: readonly string[], step: string): void => {
    const r = spawnSync(cmd, args, { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
    if (r.status !== 0) {
      throw new Error(
        `${what} setup: ${step} failed (${r.error?.message ?? `exit ${r.status}`}): ${(r.stderr ?? '').slice(-2000)}`,
      );
    }
  };
  try {
    run(python, ['-m', 'venv', work], `${python} -m venv`);
    run(
      pythonIn(work),
      ['-m', 'pip', 'install', '--disable-pip-version-check', '--no-input', '-q', ...requirements],
      `pip install ${requirements.join(' ')}`,
    );
    if (works(venv, probe)) {
      await rm(work, { recursive: true, force: true }); // another process finished first
      return pythonIn(venv);
    }
    await rm(venv, { recursive: true, force: true }); // a broken one, if any
    await rename(work, venv);
  } catch (error) {
    await rm(work, { recursive: true, force: true });
    if (works(venv, probe)) return pythonIn(venv); // another process put one in place meanwhile
    throw error;
  }
  run(pythonIn(venv), probe, `the probe of the new venv (${probe.join(' ')})`);
  return pythonIn(venv);
}

/** A free TCP port on 127.0.0.1 (free when probed: a caller retries if it is taken meanwhile). */
export async function freePort(): Promise<number> {
  return (await freePorts(1))[0]!;
}

/** `n` distinct free ports on 127.0.0.1: all held open until every one is chosen. */
export async function freePorts(n: number): Promise<number[]> {
  const servers = Array.from({ length: n }, () => createServer());
  try {
    return await Promise.all(
      servers.map(
        (server) =>
          new Promise<number>((resolvePort, reject) => {
            server.once('error', reject);
            server.listen(0, '127.0.0.1', () => {
              const address = server.address();
              resolvePort(typeof address === 'object' && address !== null ? address.port : 0);
            });
          }),
      ),
    );
  } finally {
    await Promise.all(
      servers.map((server) => new Promise<void>((done) => server.close(() => done()))),
    );
  }
}

/** Signals `child` (SIGTERM, then SIGKILL after `graceMs`) and waits for it to exit. */
export function stopChild(
  child: ChildProcess,
  signal: NodeJS.Signals = 'SIGTERM',
  graceMs = 5_000,
): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((done) => {
    const kill = setTimeout(() => child.kill('SIGKILL'), graceMs);
    child.once('exit', () => {
      clearTimeout(kill);
      done();
    });
    child.kill(signal);
  });
}

/**
 * For test files: runs `ensure`, or returns `undefined` (with a note) when it fails — the
 * tests are then skipped and counted as skipped, unless `BFE_REQUIRE_MILVUS=1` (CI), where the
 * failure is thrown.
 */
export async function forTests(
  what: string,
  ensure: () => Promise<string>,
): Promise<string | undefined> {
  try {
    return await ensure();
  } catch (error) {
    if (process.env.BFE_REQUIRE_MILVUS === '1') throw error;
    process.stdout.write(`note: ${what} is unavailable, its tests are skipped: ${String(error)}\n`);
    return undefined;
  }
}
