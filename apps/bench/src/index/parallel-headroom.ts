// What a second thread can buy on this machine right now: a trivially parallel integer loop,
// twice its work on the calling thread against half of it on each of two threads, interleaved.
// On a machine shared with other jobs this bounds the speedup any two-thread search can show.
import { Worker } from 'node:worker_threads';
import { median } from '../shared/stats.js';

function spin(n: number): number {
  let x = 0;
  for (let i = 0; i < n; i++) x = (Math.imul(x, 1664525) + 1013904223) | 0;
  return x;
}
/** The same loop's source, for the worker (as the runtime holds it: plain JavaScript). */
const SPIN = spin.toString();

/**
 * The median ratio, over `reps` interleaved trials, of `2n` loop steps on this thread to `n` on
 * this thread beside `n` on a worker (≈ 2 on two free cores, ≈ 1 when no second core is free).
 */
export async function parallelHeadroom(reps = 9, n = 20_000_000): Promise<number> {
  const worker = new Worker(
    `const { parentPort } = require('node:worker_threads'); ${SPIN}
     parentPort.on('message', (n) => parentPort.postMessage(spin(n)));`,
    { eval: true },
  );
  const remote = (steps: number): Promise<unknown> =>
    new Promise((resolve) => {
      worker.once('message', resolve);
      worker.postMessage(steps);
    });
  try {
    await remote(n); // warm: both loops compiled
    let sink = spin(n);
    const one: number[] = [];
    const two: number[] = [];
    for (let r = 0; r < reps; r++) {
      let t = performance.now();
      sink ^= spin(2 * n);
      one.push(performance.now() - t);
      t = performance.now();
      const other = remote(n);
      sink ^= spin(n);
      await other;
      two.push(performance.now() - t);
    }
    // `sink` keeps the loops' results alive (it is never 0.5).
    return median(one) / median(two) + (sink === 0.5 ? 1 : 0);
  } finally {
    await worker.terminate();
  }
}
