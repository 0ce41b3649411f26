import { startWorker } from '@bfe/core';
import type { Worker } from 'node:worker_threads';
import {
  NonFiniteScoresError,
  type ChunkTopK,
  type ScorePrecision,
  type SimilarityKernel,
} from '@bfe/index';
import type { DiagnosticBests } from '@bfe/scorer';
import type { KernelAnswer, KernelRequest } from './kernel-worker.js';

/** A kernel that can hold one bank resident (what {@link residentIndexFactory} builds). */
export interface ResidentKernel extends SimilarityKernel {
  makeResident(
    bank: Float32Array,
    n: number,
    dim: number,
    precision?: ScorePrecision,
  ): Promise<void>;
  /**
   * Diagnostic bests over the resident bank's tokens where the bank lives (`bestTokensInto`:
   * quadruples `[slot, row, start, end)`, rows of `queries`), one per quadruple; undefined when
   * nothing is resident there or the worker failed (the caller computes them itself).
   */
  bests?(queries: Float32Array, quads: Int32Array): Promise<DiagnosticBests | undefined>;
}

/** Resident kernels on worker threads; {@link ResidentKernelPool.dispose} ends the workers. */
export interface ResidentKernelPool {
  /** A kernel whose resident bank lives on one of the pool's workers (round robin). */
  kernel(fallback: SimilarityKernel): ResidentKernel;
  /** Top-k calls the workers answered (the rest went to their kernels' fallbacks). */
  hits(): number;
  /** Diagnostic-bests calls the workers answered (`ResidentKernel.bests`). */
  bestsAnswered(): number;
  /** The most top-k calls one kernel run of a worker answered (concurrent calls on one bank). */
  largestBatch(): number;
  dispose(): Promise<void>;
}

interface Channel {
  readonly worker: Worker;
  readonly waiting: Map<number, (a: KernelAnswer) => void>;
}

/**
 * Worker threads that hold banks resident on their own onnxruntime kernels (`threads` intra-op
 * threads each): a search's token top-k then runs off the caller's event loop (onnxruntime-node
 * runs a session synchronously on the calling thread). A kernel sends its bank to a worker once
 * (`makeResident`, a copy), then only the query rows per search (the calls on one bank that wait
 * for its worker together run as one, their rows stacked); calls for any other bank, or
 * with scores, go to `fallback` (the scorer's kernel). Results are the resident kernel's own
 * (`OrtSimilarityKernel`), so the same as on the caller's thread (tested). Should a worker fail,
 * its kernels' calls go to their fallbacks.
 * @example
 * const pool = await residentKernelPool({ workers: 1, threads: 1 });
 * const index = residentIndexFactory({ kernel: (fallback) => pool.kernel(fallback) });
 */
export async function residentKernelPool(
  options: { readonly workers?: number; readonly threads?: number } = {},
): Promise<ResidentKernelPool> {
  const count = options.workers ?? 1;
  if (!Number.isInteger(count) || count < 1)
    throw new Error(`residentKernelPool: workers must be a positive integer, got ${count}`);
  const channels: Channel[] = [];
  let seq = 0;
  let broken: Error | undefined;
  const fail = (error: Error): void => {
    broken ??= error;
    for (const c of channels) {
      for (const settle of c.waiting.values())
        settle({ seq: -1, ok: false, message: error.message, nonFinite: false });
      c.waiting.clear();
    }
  };
  for (let i = 0; i < count; i++) {
    const worker = startWorker(import.meta.url, 'kernel-worker', { threads: options.threads });
    const channel: Channel = { worker, waiting: new Map() };
    channels.push(channel);
    const ready = new Promise<void>((resolve, reject) => {
      channel.waiting.set(0, (a) =>
        a.ok ? resolve() : reject(new Error(`kernel worker: ${a.message}`)),
      );
    });
    worker.on('message', (a: KernelAnswer) => {
      const settle = channel.waiting.get(a.seq);
      channel.waiting.delete(a.seq);
      settle?.(a);
    });
    worker.once('error', (error) => fail(new Error(`kernel worker failed: ${error.message}`)));
    worker.once('exit', (code) => fail(new Error(`kernel worker exited ${code}`)));
    await ready;
  }
  const ask = (channel: Channel, request: KernelRequest, transfer: ArrayBuffer[] = []) =>
    new Promise<KernelAnswer>((resolve) => {
      if (broken !== undefined) {
        resolve({ seq: request.seq, ok: false, message: broken.message, nonFinite: false });
        return;
      }
      channel.waiting.set(request.seq, resolve);
      channel.worker.postMessage(request, transfer);
    });
  const check = (a: KernelAnswer): Extract<KernelAnswer, { ok: true }> => {
    if (a.ok) return a;
    if (a.nonFinite) throw new NonFiniteScoresError();
    throw new Error(`kernel worker: ${a.message}`);
  };
  let next = 0;
  let ids = 0;
  let hits = 0;
  let bestsAnswered = 0;
  let largestBatch = 0;
  return {
    kernel(fallback) {
      const channel = channels[next++ % channels.length]!;
      const id = ++ids;
      let resident: { bank: Float32Array; n: number; dim: number } | undefined;
      return {
        name: 'onnxruntime (worker)',
        async makeResident(bank, n, dim, precision = 'fp32') {
          const copy = bank.slice(0, n * dim);
          check(
            await ask(channel, { op: 'resident', seq: ++seq, id, bank: copy, n, dim, precision }, [
              copy.buffer,
            ]),
          );
          resident = { bank, n, dim };
        },
        async topK(queries, rows, bank, n, dim, k, withScores = false): Promise<ChunkTopK> {
          const r = resident;
          const same =
            r !== undefined &&
            r.n === n &&
            r.dim === dim &&
            r.bank.buffer === bank.buffer &&
            r.bank.byteOffset === bank.byteOffset &&
            r.bank.length === bank.length;
          // A failed worker leaves the caller's kernel: searches go on, on this thread.
          if (withScores || !same || broken !== undefined)
            return fallback.topK(queries, rows, bank, n, dim, k, withScores);
          hits += 1;
          const q = queries.slice(0, rows * dim);
          const a = check(
            await ask(channel, { op: 'topK', seq: ++seq, id, queries: q, rows, k }, [q.buffer]),
          );
          largestBatch = Math.max(largestBatch, a.batch ?? 1);
          return {
            kOut: a.kOut!,
            values: a.values!,
            indices: a.indices!,
            scores: undefined,
            ...(a.approximate === true ? { approximate: true } : {}),
          };
        },
        async bests(queries, quads) {
          if (resident === undefined || broken !== undefined) return undefined;
          const q = queries.slice();
          const a = await ask(channel, { op: 'bests', seq: ++seq, id, queries: q, quads }, [
            q.buffer,
          ]);
          // A pure function of the bank: on any failure the caller computes them itself.
          if (!a.ok) return undefined;
          bestsAnswered += 1;
          return { token: a.token!, similarity: a.similarity! };
        },
        scores: (queries, rows, bank, n, dim) => fallback.scores(queries, rows, bank, n, dim),
        async dispose() {
          if (resident === undefined || broken !== undefined) return;
          resident = undefined;
          check(await ask(channel, { op: 'dispose', seq: ++seq, id }));
        },
      };
    },
    hits: () => hits,
    bestsAnswered: () => bestsAnswered,
    largestBatch: () => largestBatch,
    async dispose() {
      broken ??= new Error('residentKernelPool: disposed');
      for (const c of channels) c.worker.removeAllListeners('exit');
      await Promise.all(channels.map((c) => c.worker.terminate()));
    },
  };
}
