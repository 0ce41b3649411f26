// A scan thread of the clustered index (`scan-pool.ts` starts it): the module instantiated on the
// index's shared memory, in its own lane; per job, it joins unless the caller already cancelled
// it, claims rows until none is left (`scan-rows.ts`), and answers with what it scanned.
import { parentPort, workerData } from 'node:worker_threads';
import { JOINED, scanRows, type ScanIndex, type ScanJob } from './scan-rows.js';
import { ScanLane, type ScanShare } from './wasm-scan.js';

/** What the pool starts a scan thread with. */
export interface ScanWorkerData {
  readonly share: ScanShare;
  /** Where this thread's lane starts in the shared memory. */
  readonly lane: number;
  readonly index: ScanIndex;
}

/** A job for worker `slot` (`JOINED + slot` is its word in `job.control`). */
export interface ScanRequest {
  readonly id: number;
  readonly slot: number;
  readonly job: ScanJob;
}

/** A joined job's answer (sent only when the worker joined it). */
export interface ScanAnswer {
  readonly id: number;
  readonly scored: number;
  readonly probed: number;
  readonly rows: number;
  readonly blocksRead: number;
}

const init = workerData as ScanWorkerData;
const lane = new ScanLane(init.share, init.lane);
const port = parentPort!;

port.on('message', ({ id, slot, job }: ScanRequest) => {
  const word = JOINED + slot;
  if (Atomics.compareExchange(job.control, word, 0, 1) !== 0) return;
  const { scored, probed, rows, blocksRead } = scanRows(init.index, lane, job);
  // Publishes this thread's writes to the job before the caller reads them.
  Atomics.store(job.control, word, 2);
  port.postMessage({ id, scored, probed, rows, blocksRead } satisfies ScanAnswer);
});
port.postMessage('ready');
