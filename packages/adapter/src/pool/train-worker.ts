/**
 * Worker-thread entry of the parallel training path (started by `loss-pool.ts`, never
 * imported): loads its kernel, then receives its data (its first message: views of the shared
 * token states), and answers each request with the sum of `queryLoss` over its queries, in
 * the order given, and their summed gradient (float64) — on the JavaScript kernel; or, on
 * onnxruntime (MaxSim's GEMM there, its float64 parts in WebAssembly or JavaScript,
 * `ort-maxsim.ts`), a step request: items of the step taken from a shared counter, then its
 * own run's sums (`pool-step.ts`): the same sums, in the same order, as its run alone.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { queryLoss, type LossQuery } from '../loss/loss.js';
import type { PoolBoot, PoolData, PoolReply, PoolRequest, POOL_CLOSE } from './loss-pool.js';
import { lossSumOrt } from '../loss/loss-ort.js';
import { workerStep, type StepRequest } from './pool-step.js';
import { ORT_SET_CACHE_BYTES, OrtMaxSim } from '../kernels/ort-maxsim.js';

if (parentPort === null) throw new Error('train-worker: must run in a worker thread');
const port = parentPort;
const boot = workerData as PoolBoot;
const { dim, rank, temperature } = boot;

// Test failpoint: BFE_FAULT_ADAPTER_WORKER=<worker>:<request>[:item] makes that worker throw on
// its n-th request (from 1; 0 = while starting) — with `:item`, inside a step, as it takes an
// item (its results never written: another worker may be waiting for them) — to check that a
// failure rejects the run and stops every thread.
const fault = /^(\d+):(\d+)(:item)?$/.exec(process.env.BFE_FAULT_ADAPTER_WORKER ?? '');
const faultRequest = fault !== null && Number(fault[1]) === boot.worker ? Number(fault[2]) : -1;
const faultInItem = fault?.[3] !== undefined;
if (faultRequest === 0) throw new Error('injected fault at start (BFE_FAULT_ADAPTER_WORKER)');
let requests = 0;
if (boot.kernel !== 'js' && boot.graph === undefined)
  throw new Error(`training worker ${boot.worker}: the ${boot.kernel} kernel needs its graph`);
const kernel =
  boot.kernel === 'js' || boot.graph === undefined
    ? undefined
    : await OrtMaxSim.create(
        boot.graph,
        dim,
        ORT_SET_CACHE_BYTES,
        boot.kernel === 'onnxruntime' ? 'wasm' : 'js',
      );

/** Releases the session, then ends this thread (in a worker, `process.exit` ends the thread). */
async function exit(): Promise<void> {
  await kernel?.release();
  process.exit(0);
}

// the data follows as the first message (the pool shares it while this thread starts), unless
// the pool closes first
const first = await new Promise<PoolData | typeof POOL_CLOSE>((resolve) =>
  port.once('message', resolve),
);
const setup = 'kind' in first ? await exitAndPark() : first;

/** {@link exit}; typed `never` so the data below is known to be there. */
async function exitAndPark(): Promise<never> {
  await exit();
  throw new Error('train-worker: still running after exit');
}
const queries: (LossQuery & { readonly candidates: { readonly tokenVectors: Float32Array } })[] =
  [];
for (let q = 0; q < setup.querySet.length; q++) {
  const first = setup.queryRows[q]!;
  const rows = setup.queryRows[q + 1]! - first;
  queries.push({
    tokens: setup.queryTokens.subarray(first * dim, (first + rows) * dim),
    rows,
    candidates: setup.sets[setup.querySet[q]!]!,
    positives: Array.from(
      setup.positives.subarray(setup.positiveStart[q], setup.positiveStart[q + 1]),
    ),
  });
}

// One request at a time (the pool waits for each reply); a close waits for the one running.
let running: Promise<void> = Promise.resolve();
port.on('message', (message: PoolRequest | StepRequest | typeof POOL_CLOSE) => {
  if ('kind' in message && message.kind === 'close') running = running.then(exit);
  else running = running.then(() => answer(message as PoolRequest | StepRequest));
});

async function answer(request: PoolRequest | StepRequest): Promise<void> {
  requests += 1;
  let reply: PoolReply;
  const transfer: ArrayBuffer[] = [];
  try {
    const injected = (): never => {
      throw new Error(`injected fault on request ${requests} (BFE_FAULT_ADAPTER_WORKER)`);
    };
    if (requests === faultRequest && !faultInItem) injected();
    const params = { dim, rank, a: request.a, b: request.b };
    const grads = request.gradients
      ? { a: new Float64Array(rank * dim), b: new Float64Array(dim * rank) }
      : undefined;
    let sum = 0;
    if ('kind' in request) {
      if (kernel === undefined) throw new Error('train-worker: a step request needs onnxruntime');
      const onItem = requests === faultRequest ? injected : undefined;
      sum = await workerStep(kernel, params, queries, temperature, request, grads, onItem);
    } else {
      const run = Array.from(request.queries, (id) => {
        const query = queries[id];
        if (query === undefined) throw new Error(`train-worker: no query ${id}`);
        return query;
      });
      if (kernel !== undefined) sum = await lossSumOrt(kernel, params, run, temperature, grads);
      else for (const query of run) sum += queryLoss(params, query, temperature, grads);
    }
    if (grads === undefined) reply = { kind: 'result', loss: sum };
    else {
      reply = { kind: 'result', loss: sum, a: grads.a, b: grads.b };
      transfer.push(grads.a.buffer, grads.b.buffer);
    }
  } catch (error) {
    // message and stack only: an arbitrary thrown value need not survive structured cloning
    const e = error instanceof Error ? error : new Error(String(error));
    reply = {
      kind: 'error',
      message: e.message,
      ...(e.stack === undefined ? {} : { stack: e.stack }),
    };
  }
  port.postMessage(reply, transfer);
}

port.postMessage({ kind: 'ready' } satisfies PoolReply);
