/**
 * How `loss-pool.ts` starts a training worker: the `.js` entry beside it when running from
 * `dist`; from TypeScript sources, the package's built `dist/pool/train-worker.js` when that build
 * is up to date (see {@link builtWorker}), else the `.ts` entry under tsx's loader.
 */
import { readdirSync, statSync } from 'node:fs';
import { sep } from 'node:path';
import type { Worker } from 'node:worker_threads';
import { startWorker } from '@bfe/core';

/**
 * The built worker entry `../dist/pool/train-worker.js` beside the source folder `src` (a
 * `file:` URL ending in `/`), when every non-test `.ts` file under `src` (its rooms included,
 * `testing/` excluded) has a `.js` file at the same place in `dist` that is at least as new (by
 * modification time); otherwise `undefined`, also when `dist` is missing or unreadable. The
 * worker's modules are all in this package and import nothing from other workspace packages
 * (its graph arrives in `workerData`), so a fresh build runs the same code as the sources
 * without tsx's loader in the thread.
 */
export function builtWorker(src: URL): URL | undefined {
  const dist = new URL('../dist/', src);
  try {
    const names = readdirSync(src, { recursive: true, encoding: 'utf8' });
    for (const name of names) {
      const path = name.split(sep).join('/');
      if (!path.endsWith('.ts') || path.endsWith('.test.ts') || path.startsWith('testing/'))
        continue;
      const built = statSync(new URL(`${path.slice(0, -3)}.js`, dist));
      if (built.mtimeMs < statSync(new URL(path, src)).mtimeMs) return undefined;
    }
    return new URL('pool/train-worker.js', dist);
  } catch {
    return undefined;
  }
}

/**
 * Starts `train-worker` for the module at `here` (`loss-pool`'s `import.meta.url`) through
 * `@bfe/core`'s `startWorker`, the workspace's one worker start-up: the `.js` file beside it when
 * running from `dist`; from sources, the fresh build if any ({@link builtWorker}), else the `.ts`
 * source under tsx's loader.
 */
export function startTrainWorker(here: string, workerData: unknown): Worker {
  const built = here.endsWith('.ts') ? builtWorker(new URL('../', here)) : undefined;
  return startWorker(here, 'train-worker', workerData, { built });
}
