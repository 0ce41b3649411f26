import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, rename, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';

/**
 * What the Milvus Lite virtualenv holds, pinned. milvus-lite 3.2.2 does not declare its
 * pymilvus dependency (its server imports `pymilvus.grpc_gen`), so both are listed.
 */
export const MILVUS_LITE_REQUIREMENTS = ['milvus-lite==3.2.2', 'pymilvus==3.0.2'] as const;

/**
 * The Milvus Lite virtualenv: `$BFE_MILVUS_LITE_VENV`, else beside the model cache
 * (`$XDG_CACHE_HOME/bfe/milvus-lite-3.2.2`, else `~/.cache/bfe/milvus-lite-3.2.2`), so it is
 * created once per machine and reused by every later run.
 */
export function milvusLiteVenv(env: NodeJS.ProcessEnv = process.env): string {
  if (env.BFE_MILVUS_LITE_VENV !== undefined && env.BFE_MILVUS_LITE_VENV !== '')
    return resolve(env.BFE_MILVUS_LITE_VENV);
  const cacheHome =
    env.XDG_CACHE_HOME !== undefined && env.XDG_CACHE_HOME !== ''
      ? env.XDG_CACHE_HOME
      : join(homedir(), '.cache');
  return resolve(cacheHome, 'bfe', 'milvus-lite-3.2.2');
}

const pythonIn = (venv: string): string => join(venv, 'bin', 'python');
const PROBE = ['-c', 'import milvus_lite.cmdline, pymilvus.grpc_gen'];
const works = (venv: string): boolean =>
  existsSync(pythonIn(venv)) && spawnSync(pythonIn(venv), PROBE).status === 0;

/**
 * Makes sure the Milvus Lite virtualenv exists and imports (`python -m venv` with `$BFE_PYTHON`
 * or `python3`, then `pip install` of {@link MILVUS_LITE_REQUIREMENTS}; about a minute, once).
 * Built in a temporary folder and renamed into place, so concurrent callers never see half a
 * venv. Returns the venv's python.
 * @throws Error naming the step that failed (no Python, no network for pip)
 */
export async function ensureMilvusLite(env: NodeJS.ProcessEnv = process.env): Promise<string> {
  const venv = milvusLiteVenv(env);
  if (works(venv)) return pythonIn(venv);
  await mkdir(dirname(venv), { recursive: true });
  const work = `${venv}.tmp-${process.pid}`;
  await rm(work, { recursive: true, force: true });
  const python = env.BFE_PYTHON ?? 'python3';
  const run = (cmd: string, args: string[], what: string): void => {
    const r = spawnSync(cmd, args, { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
    if (r.status !== 0) {
      throw new Error(
        `Milvus Lite setup: ${what} failed (${r.error?.message ?? `exit ${r.status}`}): ${(r.stderr ?? '').slice(-2000)}`,
      );
    }
  };
  try {
    run(python, ['-m', 'venv', work], `${python} -m venv`);
    run(
      pythonIn(work),
      [
        '-m',
        'pip',
        'install',
        '--disable-pip-version-check',
        '--no-input',
        '-q',
        ...MILVUS_LITE_REQUIREMENTS,
      ],
      `pip install ${MILVUS_LITE_REQUIREMENTS.join(' ')}`,
    );
    if (works(venv)) {
      await rm(work, { recursive: true, force: true }); // another process finished first
      return pythonIn(venv);
    }
    await rm(venv, { recursive: true, force: true }); // a broken one, if any
    await rename(work, venv);
  } catch (error) {
    await rm(work, { recursive: true, force: true });
    if (works(venv)) return pythonIn(venv); // another process put one in place meanwhile
    throw error;
  }
  run(pythonIn(venv), PROBE, 'importing milvus_lite from the new venv');
  return pythonIn(venv);
}

/** A running Milvus Lite server. */
export interface MilvusLite {
  /** `127.0.0.1:port`, for `TokenCollection.open`. */
  readonly address: string;
  readonly port: number;
  /** Stops the server (SIGTERM, then SIGKILL after 5 s) and waits for it to exit. */
  stop(): Promise<void>;
}

async function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => resolvePort(port));
    });
  });
}

/**
 * Starts `milvus-lite server` on 127.0.0.1 (never 0.0.0.0, the server's default) on a free
 * port, with its data in `dataDir`, and resolves once it listens.
 * @example
 * const lite = await startMilvusLite({ dataDir: tmp });
 * const c = await TokenCollection.open(lite.address, 384);
 * await lite.stop();
 */
export async function startMilvusLite(options: {
  readonly dataDir: string;
  readonly python?: string;
  readonly timeoutMs?: number;
}): Promise<MilvusLite> {
  const python = options.python ?? (await ensureMilvusLite());
  for (let attempt = 0; ; attempt++) {
    const port = await freePort();
    const child = spawn(
      python,
      [
        '-m',
        'milvus_lite.cmdline',
        'server',
        '--data-dir',
        options.dataDir,
        '--host',
        '127.0.0.1',
        '--port',
        String(port),
      ],
      { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, PYTHONUNBUFFERED: '1' } },
    );
    try {
      await listening(child, options.timeoutMs ?? 60_000);
      return { address: `127.0.0.1:${port}`, port, stop: () => stop(child) };
    } catch (error) {
      await stop(child);
      if (attempt >= 2) throw error; // the port was taken between probe and bind, thrice
    }
  }
}

function listening(child: ChildProcess, timeoutMs: number): Promise<void> {
  return new Promise((resolveReady, reject) => {
    let output = '';
    const timer = setTimeout(
      () =>
        reject(
          new Error(`milvus-lite did not listen within ${timeoutMs} ms: ${output.slice(-2000)}`),
        ),
      timeoutMs,
    );
    const onData = (chunk: Buffer): void => {
      output = (output + chunk.toString()).slice(-8192); // keep draining the pipes
      if (output.includes('listening on')) {
        clearTimeout(timer);
        resolveReady();
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`milvus-lite exited with ${code} before listening: ${output.slice(-2000)}`));
    });
  });
}

function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((done) => {
    const kill = setTimeout(() => child.kill('SIGKILL'), 5_000);
    child.once('exit', () => {
      clearTimeout(kill);
      done();
    });
    child.kill('SIGTERM');
  });
}

/**
 * For test files: the venv's python, or `undefined` (with a note) when it cannot be set up —
 * the Milvus tests are then skipped and counted as skipped, unless `BFE_REQUIRE_MILVUS=1` (CI),
 * where the failure is thrown.
 */
export async function milvusLiteForTests(): Promise<string | undefined> {
  try {
    return await ensureMilvusLite();
  } catch (error) {
    if (process.env.BFE_REQUIRE_MILVUS === '1') throw error;
    process.stdout.write(
      `note: Milvus Lite is unavailable, its tests are skipped: ${String(error)}\n`,
    );
    return undefined;
  }
}
