import { ConfigError, startWorker } from '@bfe/core';
import { resolve } from 'node:path';
import type { Worker } from 'node:worker_threads';
import { loadModelManifest, resolveModelDir } from '@bfe/models';
import type { EmbedderOptions } from './embedder.js';
import type { WorkerMessage, WorkerRequest } from './embedder-worker.js';
import type { EmbedOptions, EncodedTexts, Embedder } from '../types.js';

/** Options of {@link openEmbedderPool}. */
export interface EmbedderPoolOptions extends EmbedderOptions {
  /** Worker threads, each with its own encoder session. Default 1. */
  readonly workers?: number;
  /** Most query texts coalesced into one encoder run. Default {@link DEFAULT_ENCODE_BATCH}. */
  readonly maxBatch?: number;
}

/**
 * Query texts one encoder run takes at most, by default: 2. A free worker takes that many of the
 * queued queries and leaves the rest to the next worker to free up, so that queries spread over
 * every worker instead of one run taking the whole queue while the other workers idle. The
 * pass costs no more per query at 2 than at 16 texts a run (`pnpm bench:search-floor
 * --batch 2`, `--batch 16`), and `bfe serve` with two workers answers more searches at 8
 * connections at 2 than at 16 (BENCHMARKS.md, "The service": `--encode-batch 16` beside the
 * default).
 */
export const DEFAULT_ENCODE_BATCH = 2;

/** What a pool has done: calls answered, encoder runs made (a coalesced run answers several). */
export interface EmbedderPoolStats {
  readonly calls: number;
  readonly runs: number;
  /** The most calls one run answered. */
  readonly largestBatch: number;
}

/** An {@link Embedder} whose encoder runs on worker threads. */
export interface EmbedderPool extends Embedder {
  readonly workers: number;
  stats(): EmbedderPoolStats;
}

interface Pending {
  readonly texts: readonly string[];
  readonly role: 'passage' | 'query';
  /** A passage call's window (queries are never windowed). */
  readonly window: EmbedOptions['window'];
  readonly resolve: (e: EncodedTexts) => void;
  readonly reject: (e: Error) => void;
}

interface Slot {
  readonly worker: Worker;
  busy: Pending[] | undefined;
}

/**
 * Opens a model's encoder on worker threads, as an {@link Embedder}: the encoder pass
 * (tokenizer and onnxruntime session) leaves the caller's thread, where onnxruntime-node
 * would run it synchronously and block the event loop. Queries that arrive while every worker is
 * busy are coalesced: the next free worker encodes up to `maxBatch` of them in one pass (the
 * experiment's pass over several texts, whose vectors are the same as one text's alone: tested
 * bit for bit), and each caller gets its own rows. Passages (adds) are encoded one call per run.
 * `tokenText` answers from the vocabulary the workers send at start.
 * @throws DataMissingError when the model is not installed (before any worker starts)
 * @example
 * const embedder = await openEmbedderPool({ model: 'all-minilm-l6-v2', threads: 1 });
 * const store = await MemoryStore.open(dir, { embedder, threads: 1 });
 * // … close the store, then: await embedder.dispose();
 */
export async function openEmbedderPool(options: EmbedderPoolOptions): Promise<EmbedderPool> {
  const workers = options.workers ?? 1;
  const maxBatch = options.maxBatch ?? DEFAULT_ENCODE_BATCH;
  if (!Number.isInteger(workers) || workers < 1)
    throw new Error(`openEmbedderPool: workers must be a positive integer, got ${workers}`);
  if (!Number.isInteger(maxBatch) || maxBatch < 1)
    throw new Error(`openEmbedderPool: maxBatch must be a positive integer, got ${maxBatch}`);
  const dir =
    typeof options.model === 'string' ? resolveModelDir(options.model) : resolve(options.model.dir);
  await loadModelManifest(dir); // a missing or broken model fails here, with its own error
  const setup: EmbedderOptions = {
    model: { dir },
    ...(options.maxLength === undefined ? {} : { maxLength: options.maxLength }),
    ...(options.threads === undefined ? {} : { threads: options.threads }),
  };
  const slots: Slot[] = [];
  const queue: Pending[] = [];
  let broken: Error | undefined;
  let calls = 0;
  let runs = 0;
  let largestBatch = 0;
  let ready: Extract<WorkerMessage, { type: 'ready' }> | undefined;

  const fail = (error: Error): void => {
    broken ??= error;
    for (const p of queue.splice(0)) p.reject(error);
    for (const s of slots) for (const p of s.busy?.splice(0) ?? []) p.reject(error);
  };
  const pump = (): void => {
    for (const slot of slots) {
      if (slot.busy !== undefined || queue.length === 0) continue;
      const batch = takeBatch(queue, maxBatch);
      slot.busy = batch;
      runs += 1;
      largestBatch = Math.max(largestBatch, batch.length);
      // A passage run is one call: its window, when it has one, is the run's.
      const window = batch[0]!.role === 'passage' ? batch[0]!.window : undefined;
      const request: WorkerRequest = {
        id: runs,
        texts: batch.flatMap((p) => p.texts),
        role: batch[0]!.role,
        ...(window === undefined ? {} : { window }),
      };
      slot.worker.postMessage(request);
    }
  };

  try {
    for (let i = 0; i < workers; i++) {
      const worker = startWorker(import.meta.url, 'embedder-worker', setup);
      const slot: Slot = { worker, busy: undefined };
      slots.push(slot);
      const started = new Promise<void>((resolveStart, rejectStart) => {
        worker.on('message', (m: WorkerMessage) => {
          if (m.type === 'ready') {
            ready = m;
            resolveStart();
          } else if (m.type === 'failed') rejectStart(new Error(`encoder worker: ${m.message}`));
          else {
            const batch = slot.busy ?? [];
            slot.busy = undefined;
            if (m.type === 'encoded') {
              let row = 0;
              for (const p of batch) {
                p.resolve(rowsOf(m.encoded, row, p.texts.length));
                row += p.texts.length;
              }
            } else {
              // A refused configuration (a window the model cannot run) stays a ConfigError.
              const config = m.type === 'error' ? m.config : undefined;
              const error = (): Error =>
                config === undefined
                  ? new Error(`encoder worker: ${m.message}`)
                  : new ConfigError(
                      m.message,
                      config.suggestion === undefined ? {} : { suggestion: config.suggestion },
                    );
              for (const p of batch) p.reject(error());
            }
            pump();
          }
        });
        worker.once('error', (error) => {
          rejectStart(error);
          fail(new Error(`encoder worker failed: ${error.message}`, { cause: error }));
        });
        worker.once('exit', (code) => {
          rejectStart(new Error(`encoder worker exited ${code}`));
          fail(new Error(`encoder worker exited ${code}`));
        });
      });
      await started;
    }
  } catch (error) {
    await Promise.all(slots.map((s) => s.worker.terminate()));
    throw error;
  }
  const { model, dim, vocab } = ready!;
  let disposed = false;
  return {
    model,
    dim,
    workers,
    encode(texts, role, embed = {}) {
      if (broken !== undefined) return Promise.reject(broken);
      if (disposed) return Promise.reject(new Error('openEmbedderPool: used after dispose()'));
      calls += 1;
      return new Promise<EncodedTexts>((resolveCall, rejectCall) => {
        queue.push({
          texts: [...texts],
          role,
          window: embed.window,
          resolve: resolveCall,
          reject: rejectCall,
        });
        pump();
      });
    },
    tokenText: (id) => vocab[id] ?? `[${id}]`,
    stats: () => ({ calls, runs, largestBatch }),
    async dispose() {
      if (disposed) return;
      disposed = true;
      // In-flight and queued calls finish first.
      while (queue.length > 0 || slots.some((s) => s.busy !== undefined)) {
        if (broken !== undefined) break;
        await new Promise((r) => setTimeout(r, 5));
      }
      broken ??= new Error('openEmbedderPool: used after dispose()');
      for (const s of slots) s.worker.removeAllListeners('exit');
      await Promise.all(slots.map((s) => s.worker.terminate()));
    },
  };
}

/**
 * The next run's calls: the queue's first call, and when it is a query, every further queued
 * query call that fits in `maxBatch` texts (passages stay one call per run, in order).
 */
function takeBatch(queue: Pending[], maxBatch: number): Pending[] {
  const first = queue.shift()!;
  const batch = [first];
  if (first.role !== 'query') return batch;
  let texts = first.texts.length;
  for (let i = 0; i < queue.length && texts < maxBatch;) {
    const p = queue[i]!;
    if (p.role === 'query' && texts + p.texts.length <= maxBatch) {
      batch.push(p);
      texts += p.texts.length;
      queue.splice(i, 1);
    } else i += 1;
  }
  return batch;
}

/** Rows `from … from + count` of an encoded batch, as their own {@link EncodedTexts}. */
export function rowsOf(e: EncodedTexts, from: number, count: number): EncodedTexts {
  const { dim } = e;
  const t0 = e.tokenOffsets[from]!;
  const t1 = e.tokenOffsets[from + count]!;
  const tokenOffsets = new Int32Array(count + 1);
  for (let i = 0; i <= count; i++) tokenOffsets[i] = e.tokenOffsets[from + i]! - t0;
  return {
    count,
    dim,
    pooled: e.pooled.slice(from * dim, (from + count) * dim),
    tokenOffsets,
    tokenVectors: e.tokenVectors.slice(t0 * dim, t1 * dim),
    tokenIds: e.tokenIds.slice(t0, t1),
    tokenPositions: e.tokenPositions.slice(t0, t1),
    truncated: e.truncated.slice(from, from + count),
  };
}
