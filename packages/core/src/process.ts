import { Worker } from 'node:worker_threads';

/**
 * Whether process `pid` runs on this host: signal 0 (EPERM means it runs, as another user).
 * The one liveness check behind stale locks, leases and temporary folders of dead processes.
 * @example
 * isProcessAlive(process.pid); // true
 */
export function isProcessAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Where {@link startWorker} takes a worker's entry from, besides the module beside `here`. */
export interface StartWorkerOptions {
  /**
   * From TypeScript sources: a fresh built entry to start instead of the `.ts` one (no tsx in
   * the thread); undefined: the `.ts` entry under tsx's loader.
   */
  readonly built?: URL | undefined;
}

/**
 * The workspace's one worker start-up: starts the module `name` beside `here` (the caller's
 * `import.meta.url`) as a worker thread with `workerData`. From `dist` (`here` ends in `.js`) it
 * is `name.js`; from TypeScript sources it is `options.built` when given, else `name.ts` started
 * from a one-line script that registers tsx's loader first — Node 20 does not apply
 * `--import tsx` to a worker's entry module. This works under `node --import tsx` and inside
 * vitest's forks alike.
 * @throws {Error} from sources when tsx cannot be resolved (build the package instead).
 * @example
 * const worker = startWorker(import.meta.url, 'kernel-worker', { threads: 1 });
 */
export function startWorker(
  here: string,
  name: string,
  workerData: unknown,
  options: StartWorkerOptions = {},
): Worker {
  if (!here.endsWith('.ts')) return new Worker(new URL(`./${name}.js`, here), { workerData });
  if (options.built !== undefined) return new Worker(options.built, { workerData });
  const entry = new URL(`./${name}.ts`, here).href;
  let tsx: string;
  try {
    tsx = import.meta.resolve('tsx/esm/api');
  } catch (cause) {
    throw new Error(
      `worker ${name}: running from TypeScript sources needs tsx, which could not be resolved; build the package`,
      { cause },
    );
  }
  const bootstrap =
    `import(${JSON.stringify(tsx)})` +
    `.then((tsx) => { tsx.register(); return import(${JSON.stringify(entry)}); });`;
  return new Worker(bootstrap, { eval: true, workerData });
}
