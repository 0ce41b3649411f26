import { join } from 'node:path';
import { EncoderSession, TextTokenizer } from '@bfe/encoder';
import type { ArtifactResult } from '../../cache/store.js';
import { readChunkFiles, writeChunkFiles, type ChunkLayout } from '../../chunks/files.js';
import { encodeChunks } from '../../chunks/pass.js';
import { codeVersion } from '../code-version.js';
import { checkChunkSizes } from '../sections/systems.js';
import type { Experiment } from '../config.js';
import type { StageContext } from '../stage.js';
import type { DatasetStage } from './dataset.js';
import type { EncodeStage } from './encode.js';
import { encodeIdentity } from './encode-shard.js';

/** The runner modules whose code the chunks stage runs (part of its cache key). */
export const CHUNKS_STAGE_FILES = [
  'chunks/cut.ts',
  'chunks/pass.ts',
  'chunks/files.ts',
  'experiment/stages/chunks.ts',
];

/** One `chunks@<size>` artifact: where its files are, and its layout. */
export interface ChunksStage {
  readonly size: number;
  readonly artifact: ArtifactResult;
  /** Reads `chunks.json` and the window vectors. */
  readonly load: () => Promise<Awaited<ReturnType<typeof readChunkFiles>>>;
}

/**
 * chunks@<size>: the `chunked-pooled@<size>` systems' windows (the paper's Appendix D control).
 * Every memory's whole text is tokenised untruncated; one longer than `size` tokens is cut into
 * independent, non-overlapping windows (`cutChunks`), each run through the same frozen encoder
 * and pooled natively. Memories that fit one window are not encoded again: scoring takes their
 * bank pooled vector. Keyed by the model, the dataset, the size and the code, not by the encode
 * artifact, so runs that truncate or window the bank differently share it. Reads no labels.
 */
export async function runChunksStages(
  ctx: StageContext,
  e: Experiment,
  dataset: DatasetStage,
  encode: EncodeStage,
): Promise<ChunksStage[]> {
  const config = e.systems?.chunkedPooled;
  if (config === undefined) return [];
  const id = await encodeIdentity(e, dataset);
  const { modelDir, modelManifest } = id;
  checkChunkSizes(config, modelManifest, {
    maxLength: encode.encoding.maxLength,
    windowSize: encode.encoding.window?.size,
  });
  const version = await codeVersion(
    ['@bfe/core', '@bfe/models', '@bfe/encoder'],
    CHUNKS_STAGE_FILES,
  );
  const out: ChunksStage[] = [];
  for (const size of config.sizes) {
    const artifact = await ctx.run(
      `chunks@${size}`,
      {
        stage: 'chunks',
        version,
        config: { model: modelManifest.name, size, executionProvider: e.model.executionProvider },
        inputs: { dataset: dataset.artifact.key, model: modelManifest.modelSha256 },
      },
      async (dir) => {
        // The texts only: the label-free benchmark, as the encode stage hands the encoder.
        const { benchmark } = await dataset.load();
        const session = await EncoderSession.open(join(modelDir, modelManifest.onnxFile), {
          executionProvider: e.model.executionProvider,
          ...(e.model.threads === undefined ? {} : { threads: e.model.threads }),
        });
        try {
          const tokenizer = new TextTokenizer(
            join(modelDir, modelManifest.tokenizerFile),
            undefined,
          );
          const pass = await encodeChunks(
            session,
            tokenizer,
            { pooling: modelManifest.pooling, normalize: modelManifest.normalize },
            benchmark.memories.map((m) => m.text),
            size,
            {
              prefix: modelManifest.prefixes.passage,
              onProgress: (done, total) => ctx.progress(`chunks@${size} windows`, done, total),
            },
          );
          const layout: ChunkLayout = await writeChunkFiles(
            dir,
            benchmark.memories.map((m) => m.id),
            pass,
            { name: modelManifest.name, pooling: modelManifest.pooling },
          );
          return {
            size,
            memories: layout.memories,
            cutMemories: layout.cut.length,
            windows: layout.windows,
            longest: layout.longest,
          };
        } finally {
          await session.dispose();
        }
      },
    );
    out.push({ size, artifact, load: () => readChunkFiles(artifact.dir) });
  }
  return out;
}
