import { stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  DataError,
  LabelLeakError,
  benchmarkHash,
  contentHash,
  fileSha256,
  writeDirAtomic,
  type Benchmark,
} from '@bfe/core';
import { BANK_MANIFEST_FILE, type BankManifest } from './bank-manifest.js';
import { bankFileNames, writeBankTables, type VectorDtype } from './bank-files.js';
import type { Encoder } from './encoder.js';
import type { EncodedChunk } from './pass.js';
import { WINDOW_POOLING } from './window.js';

export interface EncodeBenchmarkOptions {
  readonly dtype?: VectorDtype;
  readonly executionProvider?: string;
  readonly chunkSize?: number;
  readonly maxBatchTokens?: number;
  /**
   * The memories' chunks computed elsewhere (e.g. assembled from the slices of a sharded
   * encode): used instead of running the encoder over the memories. They must be exactly what
   * `encoder.encode(memoryTexts, 'passage', { chunkSize })` yields, in order; the queries are
   * still encoded here.
   */
  readonly memoryChunks?: AsyncIterable<EncodedChunk>;
  /** Progress per side: texts done, total, content tokens kept. */
  readonly onProgress?: (
    role: 'memories' | 'queries',
    done: number,
    total: number,
    tokens: number,
  ) => void;
}

/**
 * Encodes a benchmark's memories and queries once (METHOD.md §1) into `outDir`: four Arrow
 * tables and `bank.json`. It takes the label-free {@link Benchmark} only, so gold cannot reach
 * the encoder; it refuses an object that carries labels anyway. Everything is written into a
 * temporary sibling directory and renamed into place at the end (`writeDirAtomic`), so an
 * interrupted run leaves no directory that looks complete.
 */
export async function encodeBenchmark(
  benchmark: Benchmark,
  encoder: Encoder,
  outDir: string,
  options: EncodeBenchmarkOptions = {},
): Promise<BankManifest> {
  if ('labels' in (benchmark as object) || 'qrels' in (benchmark as object)) {
    throw new LabelLeakError(
      'encodeBenchmark received an object with labels: pass the benchmark alone',
    );
  }
  for (const m of benchmark.memories) {
    if (typeof m.text !== 'string' || m.text.trim() === '') {
      throw new DataError(`memory ${m.id} has an empty text: the loader should have dropped it`);
    }
  }
  for (const q of benchmark.queries) {
    if (typeof q.text !== 'string' || q.text.trim() === '')
      throw new DataError(`query ${q.id} has an empty text`);
  }
  const started = performance.now();
  const dtype = options.dtype ?? 'float32';
  const m = encoder.manifest;
  const hash = benchmarkHash(benchmark);
  return writeDirAtomic(outDir, async (tmp) => {
    const common = {
      modelId: m.modelId,
      modelSha256: m.modelSha256,
      pooling: m.pooling,
      dim: m.dimension,
      dtype,
      maxLength: encoder.maxLength,
    };
    const passOptions = (role: 'memories' | 'queries') => ({
      ...(options.chunkSize === undefined ? {} : { chunkSize: options.chunkSize }),
      ...(options.maxBatchTokens === undefined ? {} : { maxBatchTokens: options.maxBatchTokens }),
      onProgress: (done: number, total: number, tokens: number) =>
        options.onProgress?.(role, done, total, tokens),
    });
    const memNames = bankFileNames('memories');
    const memories = await writeBankTables(
      'memories',
      { rows: join(tmp, memNames.rows), tokens: join(tmp, memNames.tokens) },
      benchmark.memories.map((x) => x.id),
      benchmark.memories.map((x) => x.bankId),
      options.memoryChunks ??
        encoder.encode(
          benchmark.memories.map((x) => x.text),
          'passage',
          passOptions('memories'),
        ),
      {
        ...common,
        inputHash: contentHash({ benchmark: hash, role: 'memories', prefix: m.prefixes.passage }),
        ...(encoder.window === undefined ? {} : { window: encoder.window }),
      },
    );
    const { windowed, ...memoryCounts } = memories;
    const qNames = bankFileNames('queries');
    const queries = await writeBankTables(
      'queries',
      { rows: join(tmp, qNames.rows), tokens: join(tmp, qNames.tokens) },
      benchmark.queries.map((x) => x.id),
      undefined,
      encoder.encode(
        benchmark.queries.map((x) => x.text),
        'query',
        passOptions('queries'),
      ),
      {
        ...common,
        inputHash: contentHash({ benchmark: hash, role: 'queries', prefix: m.prefixes.query }),
      },
    );
    const files = [];
    for (const name of [memNames.rows, memNames.tokens, qNames.rows, qNames.tokens]) {
      const path = join(tmp, name);
      files.push({ path: name, bytes: (await stat(path)).size, sha256: await fileSha256(path) });
    }
    const manifest: BankManifest = {
      schemaVersion: 1,
      dataset: benchmark.name,
      benchmarkHash: hash,
      model: {
        name: m.name,
        modelId: m.modelId,
        sha256: m.modelSha256,
        pooling: m.pooling,
        dimension: m.dimension,
        prefixes: m.prefixes,
      },
      dtype,
      maxLength: encoder.maxLength,
      ...(encoder.window === undefined
        ? {}
        : {
            window: {
              size: encoder.window.size,
              stride: encoder.window.stride,
              pooling: WINDOW_POOLING,
              windowedMemories: windowed?.rows ?? 0,
              memoryWindows: windowed?.windows ?? 0,
            },
          }),
      executionProvider: options.executionProvider ?? 'cpu',
      memories: memoryCounts,
      queries,
      files,
      seconds: (performance.now() - started) / 1000,
      createdAt: new Date().toISOString(),
    };
    await writeFile(join(tmp, BANK_MANIFEST_FILE), `${JSON.stringify(manifest, null, 2)}\n`);
    return manifest;
  });
}
