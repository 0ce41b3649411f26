// The worker side of `graphWorkerHost` (graph-hnsw.ts): the usearch indexes of a store's HNSW
// graphs, held on this thread, so their insertions (synchronous, ≈ milliseconds per token) and
// searches leave the store's event loop. Requests run one at a time, in arrival order; each gets
// one answer with its `seq`, in the same order.
import { readlinkSync } from 'node:fs';
import { setPriority } from 'node:os';
import { parentPort, workerData } from 'node:worker_threads';
import {
  createIncrementalHnsw,
  loadIncrementalHnsw,
  type IncrementalHnsw,
} from '@bfe/index/incremental';
import type { GraphParams } from './graph-params.js';

/** A request from the host. */
export type GraphRequest =
  | {
      readonly op: 'create';
      readonly seq: number;
      readonly handle: number;
      readonly dim: number;
      readonly params: GraphParams;
    }
  | {
      readonly op: 'load';
      readonly seq: number;
      readonly handle: number;
      readonly path: string;
      readonly dim: number;
      readonly params: GraphParams;
    }
  | {
      readonly op: 'add';
      readonly seq: number;
      readonly handle: number;
      readonly first: number;
      readonly vectors: Float32Array;
      readonly count: number;
    }
  | {
      readonly op: 'remove';
      readonly seq: number;
      readonly handle: number;
      readonly first: number;
      readonly count: number;
    }
  | {
      readonly op: 'search';
      readonly seq: number;
      readonly handle: number;
      readonly queries: Float32Array;
      readonly rows: number;
      readonly fetch: number;
    }
  | { readonly op: 'save'; readonly seq: number; readonly handle: number; readonly path: string }
  | { readonly op: 'dispose'; readonly seq: number; readonly handle: number };

/** The worker's answer: `size` is the graph's vector count after the request. */
export type GraphAnswer =
  | {
      readonly seq: number;
      readonly ok: true;
      readonly size: number;
      readonly keys?: Float64Array;
      readonly counts?: Int32Array;
      readonly fetch?: number;
    }
  | { readonly seq: number; readonly ok: false; readonly message: string };

/** What the host starts the worker with. */
export interface GraphWorkerData {
  /** The thread's nice value (Linux: a thread's own; elsewhere left as it is). */
  readonly nice: number;
}

const port = parentPort!;
// Below the store's thread: the graph is derived data, the writes and searches come first. On
// Linux a thread has its own nice value (its id from /proc/thread-self); elsewhere, or where
// that fails, the worker keeps the process's.
try {
  const { nice } = workerData as GraphWorkerData;
  if (nice > 0) setPriority(Number(readlinkSync('/proc/thread-self').split('/').pop()), nice);
} catch {
  // not Linux, or no /proc: the same priority as the store's thread
}
const graphs = new Map<number, IncrementalHnsw>();

function graph(handle: number): IncrementalHnsw {
  const g = graphs.get(handle);
  if (g === undefined) throw new Error(`graph ${handle} is not open`);
  return g;
}

async function run(r: GraphRequest): Promise<GraphAnswer> {
  const options = (p: GraphParams) => ({ kind: p.kind, threads: p.threads });
  switch (r.op) {
    case 'create':
      graphs.set(r.handle, createIncrementalHnsw(r.dim, r.params, options(r.params)));
      return { seq: r.seq, ok: true, size: 0 };
    case 'load': {
      const g = await loadIncrementalHnsw(r.path, r.dim, r.params, options(r.params));
      graphs.set(r.handle, g);
      return { seq: r.seq, ok: true, size: g.size };
    }
    case 'add': {
      const g = graph(r.handle);
      g.add(r.first, r.vectors, r.count);
      return { seq: r.seq, ok: true, size: g.size };
    }
    case 'remove': {
      const g = graph(r.handle);
      g.remove(r.first, r.count);
      return { seq: r.seq, ok: true, size: g.size };
    }
    case 'search': {
      const g = graph(r.handle);
      const { keys, counts, fetch } = g.search(r.queries, r.rows, r.fetch);
      return { seq: r.seq, ok: true, size: g.size, keys, counts, fetch };
    }
    case 'save': {
      const g = graph(r.handle);
      g.save(r.path);
      return { seq: r.seq, ok: true, size: g.size };
    }
    case 'dispose':
      graphs.get(r.handle)?.dispose();
      graphs.delete(r.handle);
      return { seq: r.seq, ok: true, size: 0 };
  }
}

// One request at a time (a load awaits its file's header), answers in arrival order.
let chain: Promise<void> = Promise.resolve();
port.on('message', (r: GraphRequest) => {
  chain = chain.then(async () => {
    let answer: GraphAnswer;
    try {
      answer = await run(r);
    } catch (error) {
      answer = { seq: r.seq, ok: false, message: String(error) };
    }
    const transfer = answer.ok && answer.keys !== undefined ? [answer.keys.buffer] : [];
    port.postMessage(answer, transfer as ArrayBuffer[]);
  });
});
port.postMessage({ seq: 0, ok: true, size: 0 } satisfies GraphAnswer);
