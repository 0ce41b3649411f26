// The worker side of `residentKernelPool` (kernel-pool.ts): resident onnxruntime kernels, one
// per bank view, held on this thread, so their runs leave the caller's event loop. It imports
// the kernel's own module, not `@bfe/index` whole: usearch (HNSW) never finishes loading in a
// worker thread.
import { parentPort, workerData } from 'node:worker_threads';
import { bestTokensInto } from '@bfe/index/dots';
import { OrtSimilarityKernel } from '@bfe/index/ort-kernel';

/** A request from the pool; each gets one answer with its `seq`. */
export type KernelRequest =
  | {
      readonly op: 'resident';
      readonly seq: number;
      readonly id: number;
      readonly bank: Float32Array;
      readonly n: number;
      readonly dim: number;
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
  { kernel: OrtSimilarityKernel; n: number; dim: number; bank: Float32Array }
>();

async function answer(r: KernelRequest): Promise<KernelAnswer> {
  if (r.op === 'resident') {
    const kernel = new OrtSimilarityKernel(threads === undefined ? {} : { threads });
    await kernel.makeResident(r.bank, r.n, r.dim);
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
    bestTokensInto(bank, dim, r.queries, r.quads, token, similarity);
    return { seq: r.seq, ok: true, token, similarity };
  }
  const top = await kernel.topK(r.queries, r.rows, bank, n, dim, r.k);
  return { seq: r.seq, ok: true, kOut: top.kOut, values: top.values, indices: top.indices };
}

// Requests run one after another, in arrival order.
let chain: Promise<void> = Promise.resolve();
port.on('message', (r: KernelRequest) => {
  chain = chain.then(async () => {
    let a: KernelAnswer;
    try {
      a = await answer(r);
    } catch (error) {
      a = {
        seq: r.seq,
        ok: false,
        message: (error as Error).message ?? String(error),
        nonFinite: (error as Error).name === 'NonFiniteScoresError',
      };
    }
    const transfer: ArrayBuffer[] = [];
    if (a.ok && a.values !== undefined)
      transfer.push(a.values.buffer as ArrayBuffer, a.indices!.buffer as ArrayBuffer);
    if (a.ok && a.token !== undefined)
      transfer.push(a.token.buffer as ArrayBuffer, a.similarity!.buffer as ArrayBuffer);
    port.postMessage(a, transfer);
  });
});
port.postMessage({ seq: 0, ok: true } satisfies KernelAnswer);
