import { Worker } from 'node:worker_threads';

/**
 * Starts the worker module `name` beside this one: the `.js` file when running from `dist`, the
 * `.ts` source otherwise (through tsx's loader, registered first, as the adapter's training
 * workers do: Node 20 does not apply `--import tsx` to a worker's entry module).
 */
export function startWorker(name: string, workerData: unknown): Worker {
  const here = import.meta.url;
  if (!here.endsWith('.ts')) return new Worker(new URL(`./${name}.js`, here), { workerData });
  const entry = new URL(`./${name}.ts`, here).href;
  const tsx = import.meta.resolve('tsx/esm/api');
  const bootstrap =
    `import(${JSON.stringify(tsx)})` +
    `.then((tsx) => { tsx.register(); return import(${JSON.stringify(entry)}); });`;
  return new Worker(bootstrap, { eval: true, workerData });
}
