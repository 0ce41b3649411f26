import type { Worker } from 'node:worker_threads';
import { startWorker } from '@bfe/core';
import {
  createIncrementalHnsw,
  loadIncrementalHnsw,
  type IncrementalHnsw,
  type KeyProposals,
} from '@bfe/index';
import type { GraphParams } from './graph-params.js';
import type { GraphAnswer, GraphRequest, GraphWorkerData } from './graph-worker.js';

/**
 * A bank graph's usearch index where it lives (a worker thread, or this one). Calls run in the
 * order made; each `applied` / `read` callback runs synchronously when its call has run, in that
 * order, before its promise settles — so a caller that records its effect in `applied` holds,
 * when `read` runs, exactly the state the search saw.
 */
export interface GraphHnsw {
  add(first: number, vectors: Float32Array, count: number, applied: () => void): Promise<void>;
  remove(first: number, count: number, applied: () => void): Promise<void>;
  search<T>(
    queries: Float32Array,
    rows: number,
    fetch: number,
    read: (proposals: KeyProposals) => T,
  ): Promise<T>;
  save(path: string): Promise<void>;
  /** Frees the index (after the calls made before it). */
  dispose(): void;
}

/** Makes a store's graph indexes; {@link close} ends what it started. */
export interface GraphHnswMaker {
  create(dim: number, params: GraphParams): Promise<GraphHnsw>;
  /** Loads a usearch file (throws for a file usearch refuses or of another kind). */
  load(path: string, dim: number, params: GraphParams): Promise<{ hnsw: GraphHnsw; size: number }>;
  close(): Promise<void>;
}

const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/**
 * Indexes on the caller's thread (`hnsw.worker: false`): each call runs synchronously, then
 * yields to the event loop once, so a build or a backlog still lets other work in between.
 */
export function localHnswMaker(): GraphHnswMaker {
  const wrap = (g: IncrementalHnsw): GraphHnsw => ({
    async add(first, vectors, count, applied) {
      g.add(first, vectors, count);
      applied();
      await nextTurn();
    },
    async remove(first, count, applied) {
      g.remove(first, count);
      applied();
      await nextTurn();
    },
    search: (queries, rows, fetch, read) => Promise.resolve(read(g.search(queries, rows, fetch))),
    save: (path) => Promise.resolve(g.save(path)),
    dispose: () => g.dispose(),
  });
  const options = (p: GraphParams) => ({ kind: p.kind, threads: p.threads });
  return {
    create: (dim, params) =>
      Promise.resolve(wrap(createIncrementalHnsw(dim, params, options(params)))),
    async load(path, dim, params) {
      const g = await loadIncrementalHnsw(path, dim, params, options(params));
      return { hnsw: wrap(g), size: g.size };
    },
    close: () => Promise.resolve(),
  };
}

type Settle = (a: GraphAnswer) => void;

/**
 * Indexes on one worker thread (`graph-worker.ts`), started at the first index: usearch's
 * insertions are synchronous, so on the store's thread they would hold up every write behind
 * them. The worker runs the calls of all indexes in arrival order; the worker is referenced
 * (keeps the process alive) only while a call is pending. Should it fail, every pending and
 * later call rejects (the keeper then drops the graphs: their banks are searched exactly).
 */
export function graphWorkerHost(options: { readonly nice?: number } = {}): GraphHnswMaker {
  let worker: Worker | undefined;
  let ready: Promise<void> | undefined;
  let broken: Error | undefined;
  const waiting = new Map<number, Settle>();
  let seq = 0;
  let handles = 0;
  const fail = (error: Error): void => {
    broken ??= error;
    for (const settle of waiting.values()) settle({ seq: -1, ok: false, message: error.message });
    waiting.clear();
  };
  const start = (): Promise<void> => {
    const data: GraphWorkerData = { nice: options.nice ?? 0 };
    const w = startWorker(import.meta.url, 'graph-worker', data);
    worker = w;
    const up = new Promise<void>((resolve, reject) =>
      waiting.set(0, (a) => (a.ok ? resolve() : reject(new Error(a.message)))),
    );
    w.on('message', (a: GraphAnswer) => {
      const settle = waiting.get(a.seq);
      waiting.delete(a.seq);
      if (waiting.size === 0) w.unref();
      settle?.(a);
    });
    w.once('error', (error) => fail(new Error(`graph worker failed: ${error.message}`)));
    w.once('exit', (code) => fail(new Error(`graph worker exited ${code}`)));
    return up;
  };
  /** Posts `r`; `settle` runs in the message handler itself (see {@link GraphHnsw}). */
  const ask = async <T>(
    make: (seq: number) => GraphRequest,
    settle: (a: Extract<GraphAnswer, { ok: true }>) => T,
    transfer: ArrayBuffer[] = [],
  ): Promise<T> => {
    await (ready ??= start());
    return new Promise<T>((resolve, reject) => {
      if (broken !== undefined) return reject(broken);
      const r = make(++seq);
      waiting.set(r.seq, (a) => {
        if (!a.ok) return reject(new Error(`graph worker: ${a.message}`));
        try {
          resolve(settle(a));
        } catch (error) {
          reject(error as Error);
        }
      });
      worker!.ref();
      worker!.postMessage(r, transfer);
    });
  };
  const wrap = (handle: number, dim: number): GraphHnsw => ({
    add(first, vectors, count, applied) {
      const copy = vectors.slice(0, count * dim);
      return ask(
        (s) => ({ op: 'add', seq: s, handle, first, vectors: copy, count }),
        () => applied(),
        [copy.buffer],
      );
    },
    remove: (first, count, applied) =>
      ask(
        (s) => ({ op: 'remove', seq: s, handle, first, count }),
        () => applied(),
      ),
    search(queries, rows, fetch, read) {
      const q = queries.slice();
      return ask(
        (s) => ({ op: 'search', seq: s, handle, queries: q, rows, fetch }),
        (a) => read({ keys: a.keys!, counts: a.counts!, fetch: a.fetch! }),
        [q.buffer],
      );
    },
    save: (path) =>
      ask(
        (s) => ({ op: 'save', seq: s, handle, path }),
        () => undefined,
      ),
    dispose() {
      if (broken === undefined)
        void ask(
          (s) => ({ op: 'dispose', seq: s, handle }),
          () => undefined,
        ).catch(() => undefined);
    },
  });
  return {
    async create(dim, params) {
      const handle = ++handles;
      await ask(
        (s) => ({ op: 'create', seq: s, handle, dim, params }),
        () => undefined,
      );
      return wrap(handle, dim);
    },
    async load(path, dim, params) {
      const handle = ++handles;
      const size = await ask(
        (s) => ({ op: 'load', seq: s, handle, path, dim, params }),
        (a) => a.size,
      );
      return { hnsw: wrap(handle, dim), size };
    },
    async close() {
      const w = worker;
      if (w === undefined) return;
      await ready?.catch(() => undefined);
      // The calls run in order: once this one is answered, every call before it has run (a
      // worker terminated inside a native call, a dispose's, can abort the whole process).
      await ask(
        (s) => ({ op: 'dispose', seq: s, handle: 0 }),
        () => undefined,
      ).catch(() => undefined);
      fail(new Error('graph worker: closed'));
      w.removeAllListeners('exit');
      await w.terminate();
    },
  };
}
