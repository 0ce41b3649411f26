import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileSha256 } from '@bfe/core';
import {
  BANK_MANIFEST_FILE,
  bankManifestSchema,
  encodeBenchmark,
  openBank,
  openEncoder,
  type FileBankSide,
  type OpenedBank,
} from '@bfe/encoder';
import type { ModelManifest } from '@bfe/models';
import type { ArtifactResult } from '../../cache/store.js';
import type { Experiment } from '../config.js';
import type { StageContext } from '../stage.js';
import type { DatasetStage } from './dataset.js';
import { assembleShards, encodeIdentity } from './encode-shard.js';

/**
 * The encode stage's outcome: its artifact, the model and the bank, opened on first use in one
 * of two forms: every memory token vector in memory (the adapter's training, the codec's
 * fitting), or the memory token vectors left in their Arrow file (scoring: read by position
 * through `@bfe/index`'s `fileTokenStore`, so a bank larger than RAM is scored with bounded RSS).
 */
export interface EncodeStage {
  readonly artifact: ArtifactResult;
  readonly modelManifest: ModelManifest;
  /** SHA-256 of the bank's `bank.json`, for the receipt. */
  readonly bankManifestSha256: string;
  /** What the encoder cut or windowed (from `bank.json`), for the receipt. */
  readonly encoding: EncodingSummary;
  /** The bank with every memory token vector in memory (opened once, kept until released). */
  readonly bank: () => Promise<OpenedBank>;
  /** The bank with its memory token vectors left in `memory-tokens.arrow` (opened once). */
  readonly fileBank: () => Promise<OpenedBank<FileBankSide>>;
  /**
   * Forgets the in-memory bank, so its token vectors can be collected once no caller holds
   * them (before scoring); a later {@link EncodeStage.bank} opens it again.
   */
  readonly releaseBank: () => void;
}

/**
 * Truncation and windows of an encoded bank: memories and queries cut at `maxLength`, and with
 * `model.window`, the window, the memories longer than one window and the windows run.
 */
export interface EncodingSummary {
  readonly maxLength: number;
  readonly memoriesTruncated: number;
  readonly queriesTruncated: number;
  readonly window?: {
    readonly size: number;
    readonly stride: number;
    readonly windowedMemories: number;
    readonly memoryWindows: number;
  };
}

/**
 * encode: one frozen pass over memories and queries (labels never reach it: the encoder is
 * handed the benchmark's texts only); the artifact is the Arrow bank under `bank/`.
 */
export async function runEncodeStage(
  ctx: StageContext,
  e: Experiment,
  dataset: DatasetStage,
): Promise<EncodeStage> {
  const id = await encodeIdentity(e, dataset);
  const { modelDir, modelManifest } = id;
  const artifact = await ctx.run(
    'encode',
    { stage: 'encode', version: id.version, config: id.config, inputs: id.inputs },
    async (dir) => {
      const { benchmark } = await dataset.load();
      // The slices of a sharded encode (`--shard i/n`), when one was planned: the same chunks.
      const sharded =
        e.model.window === undefined
          ? await assembleShards(ctx, e, dataset, id, benchmark.memories.length)
          : undefined;
      const encoder = await openEncoder(modelDir, modelManifest, {
        executionProvider: e.model.executionProvider,
        ...(e.model.maxLength === undefined ? {} : { maxLength: e.model.maxLength }),
        ...(e.model.window === undefined ? {} : { window: e.model.window }),
        ...(e.model.threads === undefined ? {} : { threads: e.model.threads }),
      });
      try {
        const manifest = await encodeBenchmark(benchmark, encoder, join(dir, 'bank'), {
          dtype: e.model.dtype,
          executionProvider: e.model.executionProvider,
          chunkSize: id.chunkSize,
          ...(sharded === undefined ? {} : { memoryChunks: sharded.chunks }),
          onProgress: (role, done, total, tokens) =>
            ctx.progress(`encode ${role}`, done, total, `${tokens} tokens`),
        });
        return {
          memoryTokens: manifest.memories.tokens,
          queryTokens: manifest.queries.tokens,
          truncated: manifest.memories.truncated + manifest.queries.truncated,
          ...(manifest.window === undefined
            ? {}
            : {
                windowedMemories: manifest.window.windowedMemories,
                memoryWindows: manifest.window.memoryWindows,
                queriesTruncated: manifest.queries.truncated,
              }),
          ...(sharded === undefined ? {} : { shards: sharded.shards }),
        };
      } finally {
        await encoder.dispose();
      }
    },
  );
  const bankDir = join(artifact.dir, 'bank');
  // The experiment's windowing: a bank encoded otherwise is refused.
  const window = e.model.window ?? null;
  let opened: Promise<OpenedBank> | undefined;
  let streamed: Promise<OpenedBank<FileBankSide>> | undefined;
  const manifestPath = join(bankDir, BANK_MANIFEST_FILE);
  const bankManifest = bankManifestSchema.parse(JSON.parse(await readFile(manifestPath, 'utf8')));
  const w = bankManifest.window;
  return {
    artifact,
    modelManifest,
    bankManifestSha256: await fileSha256(manifestPath),
    encoding: {
      maxLength: bankManifest.maxLength,
      memoriesTruncated: bankManifest.memories.truncated,
      queriesTruncated: bankManifest.queries.truncated,
      ...(w === undefined
        ? {}
        : {
            window: {
              size: w.size,
              stride: w.stride,
              windowedMemories: w.windowedMemories,
              memoryWindows: w.memoryWindows,
            },
          }),
    },
    // The store has just checked every bank file's SHA-256 against artifact.json (on this hit,
    // or when it wrote them on this miss): openBank need not hash them a second time.
    bank: () => (opened ??= openBank(bankDir, { verifyHashes: false, window })),
    fileBank: () =>
      (streamed ??= openBank(bankDir, { verifyHashes: false, memoryTokens: 'file', window })),
    releaseBank: () => {
      opened = undefined;
    },
  };
}
