// The worker side of `residentKernelPool` (kernel-pool.ts): resident onnxruntime kernels, one
// per bank view, held on this thread, so their runs leave the caller's event loop. It imports
// the kernel's own module, not `@bfe/index` whole: usearch (HNSW) never finishes loading in a
// worker thread.
import { parentPort, workerData } from 'node:worker_threads';
import { bestTokensInto } from '@bfe/index/dots';
import { OrtSimilarityKernel } from '@bfe/index/ort-kernel';
import type { ScorePrecision } from '@bfe/index';

/** A request from the pool; each gets one answer with its `seq`. */
export type KernelRequest =
  | {
      readonly op: 'resident';
      readonly seq: number;
      readonly id: number;
      readonly bank: Float32Array;
      readonly n: number;
      readonly dim: number;
      /** `'int8'`: the bank held as int8, its top-k approximate (`makeResident`). */
      readonly precision: ScorePrecision;
    }
  | {
      readonly op: 'topK';
      readonly seq: number;
      readonly id: number;
      readonly queries: Float32Array;
      readonly rows: number;
      readonly k: number;
    }
  | {
      /** Diagnostic bests (`bestTokensInto`) over the resident bank's tokens. */
      readonly op: 'bests';
      readonly seq: number;
      readonly id: number;
      readonly queries: Float32Array;
      readonly quads: Int32Array;
    }
  | { readonly op: 'dispose'; readonly seq: number; readonly id: number };

/** A worker's answer. */
export type KernelAnswer =
  | {
      readonly seq: number;
      readonly ok: true;
      readonly kOut?: number;
      /** Top-k requests the kernel call that answered this one answered (1: alone). */
      readonly batch?: number;
      /** The top-k came from an int8 resident bank (`ChunkTopK.approximate`). */
      readonly approximate?: boolean;
      values?: Float32Array;
      indices?: Int32Array;
      token?: Int32Array;
      similarity?: Float64Array;
    }
  | {
      readonly seq: number;
      readonly ok: false;
      readonly message: string;
      readonly nonFinite: boolean;
    };

const port = parentPort;
if (port === null) throw new Error('kernel-worker: not started as a worker thread');
const { threads } = workerData as { threads?: number };
const kernels = new Map<
  number,
  {
    kernel: OrtSimilarityKernel;
    n: number;
    dim: number;
    bank: Float32Array;
    /**
     * The bank's largest |component|, the evidence bests' float32 bound (`bestTokensInto`):
     * taken at the bank's first bests request.
     */
    maxAbs?: number;
  }
>();

/** The largest |component| of `bank`. */
function largestMagnitude(bank: Float32Array): number {
  let m = 0;
  for (let i = 0; i < bank.length; i++) {
    const a = Math.abs(bank[i]!);
    if (a > m) m = a;
  }
  return m;
}

async function answer(r: KernelRequest): Promise<KernelAnswer> {
  if (r.op === 'resident') {
    // Idle intra-op threads sleep, as the scorer's do (store.ts).
    const kernel = new OrtSimilarityKernel({
      ...(threads === undefined ? {} : { threads }),
      spin: false,
    });
    await kernel.makeResident(r.bank, r.n, r.dim, r.precision);
    kernels.set(r.id, { kernel, n: r.n, dim: r.dim, bank: r.bank });
    return { seq: r.seq, ok: true };
  }
  const entry = kernels.get(r.id);
  if (r.op === 'dispose') {
    kernels.delete(r.id);
    await entry?.kernel.dispose();
    return { seq: r.seq, ok: true };
  }
  if (entry === undefined) throw new Error(`kernel-worker: no resident kernel ${r.id}`);
  const { kernel, n, dim, bank } = entry;
  if (r.op === 'bests') {
    const count = r.quads.length >> 2;
    const token = new Int32Array(count);
    const similarity = new Float64Array(count);
    entry.maxAbs ??= largestMagnitude(bank);
    bestTokensInto(bank, dim, r.queries, r.quads, token, similarity, entry.maxAbs);
    return { seq: r.seq, ok: true, token, similarity };
  }
  const top = await kernel.topK(r.queries, r.rows, bank, n, dim, r.k);
  return {
    seq: r.seq,
    ok: true,
    kOut: top.kOut,
    values: top.values,
    indices: top.indices,
    ...(top.approximate === true ? { approximate: true } : {}),
  };
}

/** Most query rows one shared kernel call stacks (a single call may still bring more). */
const MAX_SHARED_ROWS = 256;

/**
 * The top-k requests that wait for one resident bank with the same `k` (the first, and any
 * queued behind it, up to {@link MAX_SHARED_ROWS} rows): one kernel call with their rows
 * stacked, so the bank is streamed through the GEMM once for all of them. Each row's top-k is
 * that row's alone (an int8 bank quantises each row on its own); the caller's float64 rescoring
 * decides the hits either way.
 */
function takeShared(queue: KernelRequest[]): KernelRequest[] {
  const first = queue.shift()!;
  if (first.op !== 'topK') return [first];
  const batch = [first];
  let rows = first.rows;
  for (let i = 0; i < queue.length && rows < MAX_SHARED_ROWS;) {
    const r = queue[i]!;
    if (
      r.op === 'topK' &&
      r.id === first.id &&
      r.k === first.k &&
      rows + r.rows <= MAX_SHARED_ROWS
    ) {
      batch.push(r);
      rows += r.rows;
      queue.splice(i, 1);
    } else i += 1;
  }
  return batch;
}

/** One kernel call for `batch` (top-k requests of one bank and k), split back per request. */
async function answerShared(
  batch: readonly Extract<KernelRequest, { op: 'topK' }>[],
): Promise<KernelAnswer[]> {
  const entry = kernels.get(batch[0]!.id);
  if (entry === undefined) throw new Error(`kernel-worker: no resident kernel ${batch[0]!.id}`);
  const { kernel, n, dim, bank } = entry;
  let rows = 0;
  for (const r of batch) rows += r.rows;
  const queries = new Float32Array(rows * dim);
  let at = 0;
  for (const r of batch) {
    queries.set(r.queries.subarray(0, r.rows * dim), at * dim);
    at += r.rows;
  }
  const top = await kernel.topK(queries, rows, bank, n, dim, batch[0]!.k);
  const { kOut } = top;
  at = 0;
  return batch.map((r) => {
    const from = at * kOut;
    const to = (at + r.rows) * kOut;
    at += r.rows;
    return {
      seq: r.seq,
      ok: true,
      kOut,
      batch: batch.length,
      ...(top.approximate === true ? { approximate: true } : {}),
      values: top.values.slice(from, to),
      indices: top.indices.slice(from, to),
    };
  });
}

function failed(r: KernelRequest, error: unknown): KernelAnswer {
  return {
    seq: r.seq,
    ok: false,
    message: (error as Error).message ?? String(error),
    nonFinite: (error as Error).name === 'NonFiniteScoresError',
  };
}

async function answerAll(batch: readonly KernelRequest[]): Promise<KernelAnswer[]> {
  if (batch.length > 1) {
    try {
      return await answerShared(batch as Extract<KernelRequest, { op: 'topK' }>[]);
    } catch {
      // A failure (a non-finite score) is answered per request, as each alone would be.
    }
  }
  const answers: KernelAnswer[] = [];
  for (const r of batch) answers.push(await answer(r).catch((error: unknown) => failed(r, error)));
  return answers;
}

function send(a: KernelAnswer): void {
  const transfer: ArrayBuffer[] = [];
  if (a.ok && a.values !== undefined)
    transfer.push(a.values.buffer as ArrayBuffer, a.indices!.buffer as ArrayBuffer);
  if (a.ok && a.token !== undefined)
    transfer.push(a.token.buffer as ArrayBuffer, a.similarity!.buffer as ArrayBuffer);
  port!.postMessage(a, transfer);
}

// Requests run one after another, in arrival order, except that top-k requests waiting for the
// same bank share a call (`takeShared`). Between calls the loop turns (`setImmediate`), so the
// requests posted while a call ran are queued here before the next batch is taken.
const queue: KernelRequest[] = [];
let draining = false;
const drain = (): void => {
  if (queue.length === 0) {
    draining = false;
    return;
  }
  void answerAll(takeShared(queue)).then((answers) => {
    for (const a of answers) send(a);
    setImmediate(drain);
  });
};
port.on('message', (r: KernelRequest) => {
  queue.push(r);
  if (draining) return;
  draining = true;
  setImmediate(drain);
});
port.postMessage({ seq: 0, ok: true } satisfies KernelAnswer);
