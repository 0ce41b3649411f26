/**
 * The parallel path of `trainAdapterAsync`: a small pool of worker threads that compute the
 * loss and gradient of a batch's queries (METHOD.md §4's objective, by the same `queryLoss`
 * as the single-thread path, or with MaxSim's GEMM on onnxruntime — `kernel`; on onnxruntime
 * the step's heavy part is shared out by items, `step-plan.ts`). The token states are copied
 * once into `SharedArrayBuffer`s — each distinct candidate set once, however many queries
 * share it; arrays already over one are used in place — so the workers read them in place;
 * per request they receive only `A`, `B` and query indices (with the step's plan and shared
 * buffers on onnxruntime), and send back a loss sum and a float64 gradient. The calling thread adds the workers' parts in
 * worker order: for a given worker count the result is the same on every run; it differs
 * from one thread only in the float64 summation order.
 */
import type { Worker } from 'node:worker_threads';
import { kernelGraph } from '../kernels/kernel-graph.js';
import type { AdapterGradients } from '../loss/loss.js';
import type { AdapterParams } from '../model.js';
import type { TrainKernel } from '../options.js';
import { ORT_BATCH_COLUMNS } from '../kernels/ort-maxsim.js';
import { abandon, type StepRequest } from './pool-step.js';
import { partition, planStep, stepShared, type StepShared } from './step-plan.js';
import { startTrainWorker } from './worker-start.js';
import { shareQueries, type PoolBoot, type PoolData, type PoolQuery } from './pool-data.js';

export type { PoolBoot, PoolData, PoolQuery } from './pool-data.js';

/** A request: the losses (and, with `gradients`, their gradient) of `queries` at `A`, `B`. */
/**
 * Asks a worker to finish what it is running, release its session and exit: terminating a
 * thread while onnxruntime's native work is in flight can bring down the whole process.
 */
export const POOL_CLOSE = { kind: 'close' } as const;

export interface PoolRequest {
  readonly a: Float64Array;
  readonly b: Float64Array;
  readonly queries: Int32Array;
  readonly gradients: boolean;
}

/** What a worker posts back. */
export type PoolReply =
  | { readonly kind: 'ready' }
  | {
      readonly kind: 'result';
      readonly loss: number;
      readonly a?: Float64Array;
      readonly b?: Float64Array;
    }
  | { readonly kind: 'error'; readonly message: string; readonly stack?: string };

/** A request's reply, and whether its sums are part of the result. */
interface Pending {
  readonly reply: Promise<PoolReply>;
  readonly counted: boolean;
}

interface Waiter {
  resolve(reply: PoolReply): void;
  reject(error: Error): void;
}

interface Slot {
  readonly worker: Worker;
  readonly exited: Promise<void>;
  /** Exited (the port no longer takes messages). */
  gone: boolean;
  waiter: Waiter | undefined;
  failure: Error | undefined;
}

const counts = { started: 0, live: 0 };

/** Worker threads started so far and still alive (for tests: nothing may outlive a run). */
export function trainWorkerCounts(): { readonly started: number; readonly live: number } {
  return { ...counts };
}

/**
 * A pool of training workers over a fixed list of queries (indices `0 .. queries.length`).
 * Start with {@link LossPool.start}; always {@link LossPool.close} (also on error).
 */
export class LossPool {
  readonly #slots: Slot[] = [];
  #rows = new Int32Array(0);
  #bankTokens = new Int32Array(0);
  #querySet: ArrayLike<number> = [];
  #dim = 0;
  /** Step requests (the `onnxruntime` kernels) instead of whole runs (`js`). */
  #steps = false;
  #shared: StepShared | undefined;
  #closing = false;

  private constructor() {}

  /** Each query's rows and candidate tokens, the cost of its MaxSim. */
  #measure(data: PoolData): void {
    const n = data.querySet.length;
    this.#rows = new Int32Array(n);
    this.#bankTokens = new Int32Array(n);
    for (let q = 0; q < n; q++) {
      this.#rows[q] = data.queryRows[q + 1]! - data.queryRows[q]!;
      const offsets = data.sets[data.querySet[q]!]!.memoryOffsets;
      this.#bankTokens[q] = offsets[offsets.length - 1]!;
    }
    this.#querySet = data.querySet;
  }

  /**
   * Starts `workers` threads; while they load their modules, copies the queries' token
   * states into shared memory (each distinct candidate set once; arrays already over a
   * `SharedArrayBuffer` are used in place) and sends them over; resolves once every worker
   * has its data. A worker that fails to start rejects the promise, after every thread has
   * been terminated.
   */
  static async start(options: {
    readonly dim: number;
    readonly rank: number;
    readonly temperature: number;
    readonly kernel: TrainKernel;
    readonly queries: readonly PoolQuery[];
    readonly workers: number;
  }): Promise<LossPool> {
    const { dim, rank, temperature, kernel, queries, workers } = options;
    const pool = new LossPool();
    pool.#dim = dim;
    pool.#steps = kernel !== 'js';
    const slots = pool.#slots;
    const graph = kernel === 'js' ? undefined : kernelGraph(dim);
    try {
      for (let w = 0; w < workers; w++) {
        slots.push(pool.#spawn({ dim, rank, temperature, kernel, graph, worker: w }, w));
      }
      const ready = Promise.all(slots.map((slot, w) => pool.#wait(slot, w)));
      ready.catch(() => undefined); // awaited below, unless sharing fails first
      const data = shareQueries(queries, dim);
      pool.#measure(data);
      for (const slot of slots) slot.worker.postMessage(data);
      await ready;
    } catch (error) {
      await pool.close();
      throw error;
    }
    return pool;
  }

  /**
   * Sum of the losses of `queries` at `params`; with `grads`, their gradient summed into
   * `grads` (overwritten). The queries are cut into contiguous runs of about equal cost
   * (`rows × bank tokens`, the MaxSim work), one per worker, in order; each worker sums its
   * run in order and the parts are added in worker order.
   */
  async lossSum(
    params: AdapterParams<Float64Array>,
    queries: readonly number[],
    grads?: AdapterGradients,
  ): Promise<number> {
    const costs = new Float64Array(queries.length);
    for (let i = 0; i < queries.length; i++) {
      const q = queries[i]!;
      costs[i] = this.#rows[q]! * (this.#bankTokens[q]! + 1);
    }
    const bounds = partition(costs, this.#slots.length);
    const pending = this.#steps
      ? this.#stepRequests(params, queries, bounds, grads !== undefined)
      : this.#runRequests(params, queries, bounds, grads !== undefined);
    const shared = this.#shared;
    const settled = await Promise.all(pending.map(({ reply }) => reply)).catch((error: unknown) => {
      if (this.#steps && shared !== undefined) abandon(shared.control);
      throw error;
    });
    const replies = settled.filter((_, i) => pending[i]!.counted);
    if (grads !== undefined) {
      grads.a.fill(0);
      grads.b.fill(0);
    }
    let sum = 0;
    for (const reply of replies) {
      if (reply.kind !== 'result') throw new Error(`LossPool: unexpected '${reply.kind}' reply`);
      sum += reply.loss;
      if (grads === undefined) continue;
      const { a, b } = reply;
      if (
        a === undefined ||
        b === undefined ||
        a.length !== grads.a.length ||
        b.length !== grads.b.length
      ) {
        throw new Error('LossPool: a worker sent a gradient of the wrong shape');
      }
      for (let k = 0; k < a.length; k++) grads.a[k]! += a[k]!;
      for (let k = 0; k < b.length; k++) grads.b[k]! += b[k]!;
    }
    return sum;
  }

  /** One request per worker with a non-empty run: its run, summed alone (the `js` kernel). */
  #runRequests(
    params: AdapterParams<Float64Array>,
    queries: readonly number[],
    bounds: readonly number[],
    gradients: boolean,
  ): Pending[] {
    const pending: Pending[] = [];
    for (let w = 0; w < this.#slots.length; w++) {
      const share = Int32Array.from(queries.slice(bounds[w], bounds[w + 1]));
      if (share.length === 0) continue;
      const request: PoolRequest = { a: params.a, b: params.b, queries: share, gradients };
      pending.push({ reply: this.#request(w, request), counted: true });
    }
    return pending;
  }

  /**
   * A step request to every worker (`step-plan.ts`): all take items; only the replies of
   * those with a non-empty run are added (as with whole runs), every reply is awaited.
   */
  #stepRequests(
    params: AdapterParams<Float64Array>,
    queries: readonly number[],
    bounds: readonly number[],
    gradients: boolean,
  ): Pending[] {
    if (queries.length === 0) return [];
    const ids = Int32Array.from(queries);
    const rows = Array.from(ids, (q) => this.#rows[q]!);
    let values = 0;
    for (const r of rows) values += r * this.#dim;
    const shared = stepShared(ids.length, gradients ? values : 0, this.#shared);
    this.#shared = shared;
    const plan = planStep(
      Array.from(ids, (q) => this.#querySet[q]!),
      rows,
      Array.from(ids, (q) => this.#bankTokens[q]!),
      ORT_BATCH_COLUMNS,
    );
    return this.#slots.map((_, w) => {
      const own: [number, number] = [bounds[w]!, bounds[w + 1]!];
      const { a, b } = params;
      const request: StepRequest = {
        kind: 'step',
        a,
        b,
        queries: ids,
        gradients,
        own,
        plan,
        shared,
      };
      return { reply: this.#request(w, request), counted: own[0] < own[1] };
    });
  }

  /**
   * Stops every worker and waits until each has exited; safe to call twice. Each worker
   * finishes the request it is running (an abandoned step ends at its next item or wait),
   * releases its session and exits by itself: never terminated in the middle of native work.
   */
  async close(): Promise<void> {
    if (!this.#closing && this.#shared !== undefined) abandon(this.#shared.control);
    this.#closing = true;
    await Promise.all(
      this.#slots.map(async (slot) => {
        if (!slot.gone) slot.worker.postMessage(POOL_CLOSE);
        await slot.exited;
      }),
    );
  }

  #spawn(boot: PoolBoot, index: number): Slot {
    const worker = startTrainWorker(import.meta.url, boot);
    counts.started += 1;
    counts.live += 1;
    let exit!: () => void;
    const slot: Slot = {
      worker,
      exited: new Promise<void>((resolve) => (exit = resolve)),
      gone: false,
      waiter: undefined,
      failure: undefined,
    };
    const fail = (error: Error): void => {
      slot.failure ??= error;
      const waiter = slot.waiter;
      slot.waiter = undefined;
      waiter?.reject(slot.failure);
    };
    worker.on('message', (reply: PoolReply) => {
      if (reply.kind === 'error') {
        const cause = new Error(reply.message);
        if (reply.stack !== undefined) cause.stack = reply.stack;
        fail(workerError(index, cause));
        return;
      }
      const waiter = slot.waiter;
      slot.waiter = undefined;
      waiter?.resolve(reply);
    });
    worker.on('error', (error) => fail(workerError(index, error)));
    worker.on('exit', (code) => {
      slot.gone = true;
      counts.live -= 1;
      exit();
      if (!this.#closing)
        fail(new Error(`adapter training worker ${index} exited with code ${code}`));
    });
    return slot;
  }

  /** A promise of the slot's next reply (at start: 'ready'); one message in flight per worker. */
  #wait(slot: Slot, index: number): Promise<PoolReply> {
    if (slot.failure !== undefined) return Promise.reject(slot.failure);
    if (slot.waiter !== undefined) {
      return Promise.reject(new Error(`LossPool: worker ${index} is busy`));
    }
    return new Promise<PoolReply>((resolve, reject) => (slot.waiter = { resolve, reject }));
  }

  #request(index: number, request: PoolRequest | StepRequest): Promise<PoolReply> {
    const slot = this.#slots[index]!;
    if (this.#closing) return Promise.reject(new Error('LossPool: the pool is closed'));
    if (slot.failure !== undefined || slot.waiter !== undefined) return this.#wait(slot, index);
    const reply = this.#wait(slot, index);
    slot.worker.postMessage(request);
    return reply;
  }
}

function workerError(index: number, error: unknown): Error {
  const message = error instanceof Error ? error.message : String(error);
  return new Error(`adapter training worker ${index} failed: ${message}`, { cause: error });
}
