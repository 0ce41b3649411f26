// The clustered index's scan threads: worker threads that share its codes (the scanner's shared
// WebAssembly memory), each with a lane of its own, and share one search's rows with the caller.
import { availableParallelism } from 'node:os';
import type { Worker } from 'node:worker_threads';
import { startWorker } from '@bfe/core';
import { JOINED, scanRows, type ScanCount, type ScanIndex, type ScanJob } from './scan-rows.js';
import type { ScanAnswer, ScanRequest, ScanWorkerData } from './scan-worker.js';
import { MAX_SCAN_LANES, type WasmScanner } from './wasm-scan.js';

/**
 * Threads one search's scan runs on when the options leave it out: 2 (the calling thread and one
 * worker) where the machine has 2 cores or more, else 1. One search is one request: a server
 * runs several at once, so a search takes at most a second core rather than all of them; and
 * one thread reads codes at about half the machine's bandwidth (BENCHMARKS.md: 8–9 of 15.7 GB/s),
 * so two come near the read bound, where more would wait on memory.
 */
export function defaultScanThreads(): number {
  return Math.min(2, availableParallelism());
}

/** Checks a thread count: an integer in `1 ..` {@link MAX_SCAN_LANES}. */
export function checkScanThreads(threads: number): number {
  if (!Number.isInteger(threads) || threads < 1 || threads > MAX_SCAN_LANES) {
    throw new Error(`IVF scan threads must be an integer in 1..${MAX_SCAN_LANES}, got ${threads}`);
  }
  return threads;
}

/**
 * A drain of `job`'s finished rows: each call hands every row whose `done` word is set and that
 * it has not handed before to `consume`.
 */
export function finishedRows(job: ScanJob, consume: (row: number) => void): () => void {
  const handed = new Uint8Array(job.rows);
  let from = 0;
  return () => {
    for (let r = from; r < job.rows; r++) {
      if (handed[r] === 1 || Atomics.load(job.done, r) !== 1) continue;
      handed[r] = 1;
      consume(r);
    }
    while (from < job.rows && handed[from] === 1) from++;
  };
}

interface Pending {
  readonly resolve: (count: ScanCount) => void;
  readonly reject: (error: Error) => void;
}

interface Slot {
  readonly worker: Worker;
  readonly lane: number;
  readonly ready: Promise<void>;
  readonly pending: Map<number, Pending>;
}

/**
 * An index's scan workers, started on a search's first need and kept (unreferenced while idle:
 * they never hold the process open) until {@link close}. A job's rows go to whichever thread
 * claims them first, so the split follows the threads' speed; a worker that has not joined when
 * the caller ran out of rows is cancelled rather than waited for.
 */
export class ScanPool {
  readonly #scanner: WasmScanner;
  readonly #index: ScanIndex;
  #slots: Slot[] = [];
  /** Lanes of ended workers, for the next ones. */
  readonly #freeLanes: number[] = [];
  #seq = 0;

  constructor(scanner: WasmScanner, index: ScanIndex) {
    this.#scanner = scanner;
    this.#index = index;
  }

  /** Workers running now. */
  get workers(): number {
    return this.#slots.length;
  }

  /**
   * Scans `job` on the calling thread (the scanner's lane) and `workers` worker threads; returns
   * what all of them scanned once every joined worker is done (`rows`: the workers' rows). With
   * `consume`, the calling thread hands each finished row (its own or a worker's) to it once,
   * between the rows it scans and after, so the rows' next step overlaps the workers' scan.
   */
  async run(job: ScanJob, workers: number, consume?: (row: number) => void): Promise<ScanCount> {
    const slots = await this.#start(workers);
    const id = ++this.#seq;
    const answers = slots.map((slot, w) => {
      const answer = new Promise<ScanCount>((resolve, reject) => {
        if (slot.pending.size === 0) slot.worker.ref();
        slot.pending.set(id, { resolve, reject });
        slot.worker.postMessage({ id, slot: w, job } satisfies ScanRequest);
      });
      // Awaited in turn below; a failure before its turn is not an unhandled rejection.
      answer.catch(() => undefined);
      return answer;
    });
    const total: ScanCount = { scored: 0, probed: 0, rows: 0, blocksRead: 0 };
    const drain = consume === undefined ? undefined : finishedRows(job, consume);
    let failed: unknown;
    try {
      const own = scanRows(this.#index, this.#scanner, job, drain);
      drain?.();
      total.scored += own.scored;
      total.probed += own.probed;
      total.blocksRead += own.blocksRead;
    } catch (error) {
      failed = error;
    }
    for (let w = 0; w < slots.length; w++) {
      const slot = slots[w]!;
      // Not joined yet: cancelled (it will skip the job), so nothing to wait for.
      if (Atomics.compareExchange(job.control, JOINED + w, 0, -1) === 0) {
        this.#settled(slot, id);
        continue;
      }
      try {
        const count = await answers[w]!;
        total.scored += count.scored;
        total.probed += count.probed;
        total.rows += count.rows;
        total.blocksRead += count.blocksRead;
      } catch (error) {
        failed ??= error;
      }
      // Acquires the worker's writes (it stored 2 after them).
      if (Atomics.load(job.control, JOINED + w) !== 2)
        failed ??= new Error('IVF scan worker failed');
    }
    if (failed !== undefined) throw failed;
    drain?.();
    return total;
  }

  /** Ends the workers (a later search starts new ones). */
  async close(): Promise<void> {
    const slots = this.#slots;
    this.#slots = [];
    await Promise.all(slots.map((s) => s.worker.terminate()));
  }

  #settled(slot: Slot, id: number): void {
    slot.pending.delete(id);
    if (slot.pending.size === 0) slot.worker.unref();
  }

  /** The first `n` workers, started if needed, each ready. */
  async #start(n: number): Promise<readonly Slot[]> {
    while (this.#slots.length < n) this.#slots.push(this.#spawn());
    const slots = this.#slots.slice(0, n);
    await Promise.all(slots.map((s) => s.ready));
    return slots;
  }

  #spawn(): Slot {
    const lane = this.#freeLanes.pop() ?? this.#scanner.addLane();
    const data: ScanWorkerData = { share: this.#scanner.share, lane, index: this.#index };
    let worker: Worker;
    try {
      worker = startWorker(import.meta.url, 'scan-worker', data);
    } catch (error) {
      this.#freeLanes.push(lane);
      throw error;
    }
    const pending = new Map<number, Pending>();
    let started: (() => void) | undefined;
    let failedStart: ((error: Error) => void) | undefined;
    const ready = new Promise<void>((resolve, reject) => {
      started = resolve;
      failedStart = reject;
    });
    const slot: Slot = { worker, lane, ready, pending };
    let ended = false;
    const fail = (error: Error): void => {
      // 'error' is followed by 'exit': the lane is freed once.
      if (ended) return;
      ended = true;
      failedStart!(error);
      for (const p of pending.values()) p.reject(error);
      pending.clear();
      if (this.#slots.includes(slot)) this.#slots = this.#slots.filter((s) => s !== slot);
      this.#freeLanes.push(lane);
    };
    worker.on('message', (message: ScanAnswer | 'ready') => {
      if (message === 'ready') {
        worker.unref();
        started!();
        return;
      }
      const p = pending.get(message.id);
      this.#settled(slot, message.id);
      p?.resolve(message);
    });
    worker.once('error', (error) => fail(new Error(`IVF scan worker failed: ${error.message}`)));
    worker.once('exit', (code) => fail(new Error(`IVF scan worker exited (${code})`)));
    return slot;
  }
}
