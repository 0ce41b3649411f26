import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

// A real team cache for tests: `tools/cache-serve.mjs` (what `pnpm cache:serve` runs), i.e. npm
// `turborepo-remote-cache` on 127.0.0.1, on a free port the server picks itself (port 0), with
// local storage in a folder the test owns. The test stops it.

const serveScript = fileURLToPath(new URL('../../../../../tools/cache-serve.mjs', import.meta.url));

/** A running team cache. */
export interface TestCacheServer {
  /** `TURBO_API`, e.g. `http://127.0.0.1:41234`. */
  readonly api: string;
  readonly token: string;
  readonly team: string;
  /** `TURBO_API`, `TURBO_TOKEN`, `TURBO_TEAM` for a client's environment. */
  readonly env: Readonly<Record<string, string>>;
  /** Stops the server and waits for it to exit. */
  readonly stop: () => Promise<void>;
}

/** Options of {@link startCacheServer}. */
export interface StartCacheServerOptions {
  /** Where the server stores artifacts. */
  readonly storage: string;
  /** The server's request body limit in bytes (default its own, 100 MiB). */
  readonly bodyLimit?: number;
  readonly token?: string;
  readonly team?: string;
}

/**
 * Starts `tools/cache-serve.mjs --port 0` and resolves once it listens.
 * @example const server = await startCacheServer({ storage: dir }); … await server.stop();
 */
export async function startCacheServer(options: StartCacheServerOptions): Promise<TestCacheServer> {
  const token = options.token ?? 'test-token-0123456789';
  const team = options.team ?? 'bfe-test';
  const args = [serveScript, '--port', '0', '--storage', options.storage];
  if (options.bodyLimit !== undefined) args.push('--body-limit', String(options.bodyLimit));
  const child = spawn(process.execPath, args, {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { PATH: process.env.PATH ?? '', TURBO_TOKEN: token, TURBO_TEAM: team },
  });
  const api = await new Promise<string>((resolve, reject) => {
    let out = '';
    let err = '';
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`cache server did not start within 60 s:\n${out}\n${err}`));
    }, 60_000);
    child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /export TURBO_API=(\S+)/.exec(out);
      if (m !== null) {
        clearTimeout(timer);
        resolve(m[1]!);
      }
    });
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`cache server exited (${code}) before it listened:\n${out}\n${err}`));
    });
  });
  return {
    api,
    token,
    team,
    env: { TURBO_API: api, TURBO_TOKEN: token, TURBO_TEAM: team },
    stop: () => stopChild(child),
  };
}

function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const hard = setTimeout(() => child.kill('SIGKILL'), 15_000);
    child.once('exit', () => {
      clearTimeout(hard);
      resolve();
    });
    child.kill('SIGTERM');
  });
}
