import { spawn, type ChildProcess } from 'node:child_process';
import { cacheVenv, ensureVenv, forTests, freePort, stopChild } from './venv.js';

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
  return cacheVenv('milvus-lite-3.2.2', env.BFE_MILVUS_LITE_VENV, env);
}

const PROBE = ['-c', 'import milvus_lite.cmdline, pymilvus.grpc_gen'];

/**
 * Makes sure the Milvus Lite virtualenv exists and imports (`python -m venv` with `$BFE_PYTHON`
 * or `python3`, then `pip install` of {@link MILVUS_LITE_REQUIREMENTS}; about a minute, once).
 * Returns the venv's python.
 * @throws Error naming the step that failed (no Python, no network for pip)
 */
export async function ensureMilvusLite(env: NodeJS.ProcessEnv = process.env): Promise<string> {
  return ensureVenv('Milvus Lite', milvusLiteVenv(env), MILVUS_LITE_REQUIREMENTS, PROBE, env);
}

/** A running Milvus Lite server. */
export interface MilvusLite {
  /** `127.0.0.1:port`, for `TokenCollection.open`. */
  readonly address: string;
  readonly port: number;
  /** Stops the server (SIGTERM, then SIGKILL after 5 s) and waits for it to exit. */
  stop(): Promise<void>;
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
      return { address: `127.0.0.1:${port}`, port, stop: () => stopChild(child) };
    } catch (error) {
      await stopChild(child);
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

/**
 * For test files: the venv's python, or `undefined` (with a note) when it cannot be set up —
 * the Milvus tests are then skipped and counted as skipped, unless `BFE_REQUIRE_MILVUS=1` (CI),
 * where the failure is thrown.
 */
export async function milvusLiteForTests(): Promise<string | undefined> {
  return forTests('Milvus Lite', () => ensureMilvusLite());
}
