import { readFile, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { z } from 'zod';
import { ConfigError } from '@bfe/core';
import { openEncoder, type EncodedChunk } from '@bfe/encoder';
import { loadModelManifest, resolveModelDir, type ModelManifest } from '@bfe/models';
import type { ArtifactResult } from '../../cache/store.js';
import type { ArtifactSpec } from '../../cache/key.js';
import { codeVersion } from '../code-version.js';
import type { Experiment } from '../config.js';
import { readShardChunks, readShardIndex, writeShard } from '../shard-file.js';
import type { StageContext } from '../stage.js';
import type { DatasetStage } from './dataset.js';

// A sharded encode: `bfe run … --shard i/n` computes the i-th slice of the memories' encoding
// (whole encoder chunks, so each slice holds exactly the chunks a single pass computes there)
// and records the plan (n) under a key without n; a run without --shard that misses the bank
// finds the plan (local or team cache), gets every slice (computing a missing one) and writes
// the bank from their chunks: the same files, the same content hash as a single-machine encode.

/** The encoder's own chunk size (`encodePass`), the default slice unit. */
export const DEFAULT_ENCODE_CHUNK = 2048;

/** What identifies an encode: the key's parts, and the model it runs. */
export interface EncodeIdentity {
  readonly version: string;
  readonly config: Record<string, unknown>;
  readonly inputs: Readonly<Record<string, string>>;
  readonly chunkSize: number;
  readonly modelDir: string;
  readonly modelManifest: ModelManifest;
}

/** The encode stage's key parts (chunkSize in the config only when the experiment sets it). */
export async function encodeIdentity(
  e: Experiment,
  dataset: DatasetStage,
): Promise<EncodeIdentity> {
  const modelDir = e.model.dir === undefined ? resolveModelDir(e.model.name) : resolve(e.model.dir);
  const modelManifest = await loadModelManifest(modelDir);
  return {
    version: await codeVersion(['@bfe/core', '@bfe/models', '@bfe/encoder']),
    config: {
      model: modelManifest.name,
      maxLength: e.model.maxLength ?? modelManifest.maxLength,
      // Only when set, so an experiment without windows keeps its key.
      ...(e.model.window === undefined ? {} : { window: e.model.window }),
      dtype: e.model.dtype,
      executionProvider: e.model.executionProvider,
      ...(e.model.chunkSize === undefined ? {} : { chunkSize: e.model.chunkSize }),
    },
    inputs: { dataset: dataset.artifact.key, model: modelManifest.modelSha256 },
    chunkSize: e.model.chunkSize ?? DEFAULT_ENCODE_CHUNK,
    modelDir,
    modelManifest,
  };
}

/**
 * Memory rows [start, end) of slice `index` of `count`: whole chunks of `chunkSize`, the
 * chunks spread as evenly as they go (a slice may be empty when there are fewer chunks).
 * @example shardRange(5000, 2048, 1, 2) // { start: 2048, end: 5000 } (chunks 1 and 2 of 0..2)
 */
export function shardRange(
  rows: number,
  chunkSize: number,
  index: number,
  count: number,
): { start: number; end: number } {
  const chunks = Math.ceil(rows / chunkSize);
  const first = Math.floor((index * chunks) / count);
  const last = Math.floor(((index + 1) * chunks) / count);
  return { start: Math.min(first * chunkSize, rows), end: Math.min(last * chunkSize, rows) };
}

function shardSpec(id: EncodeIdentity, index: number, count: number): ArtifactSpec {
  return {
    stage: 'encode-shard',
    version: id.version,
    config: { ...id.config, chunkSize: id.chunkSize, shard: { index, count } },
    inputs: id.inputs,
  };
}

function planSpec(id: EncodeIdentity): ArtifactSpec {
  return {
    stage: 'encode-plan',
    version: id.version,
    config: { ...id.config, chunkSize: id.chunkSize },
    inputs: id.inputs,
  };
}

const planSchema = z.strictObject({ shards: z.int().positive() });

function runShard(
  ctx: StageContext,
  e: Experiment,
  dataset: DatasetStage,
  id: EncodeIdentity,
  index: number,
  count: number,
): Promise<ArtifactResult> {
  return ctx.run(`encode-shard ${index}/${count}`, shardSpec(id, index, count), async (dir) => {
    // The texts only: the label-free benchmark, as the encode stage hands the encoder.
    const { benchmark } = await dataset.load();
    const texts = benchmark.memories.map((m) => m.text);
    const { start, end } = shardRange(texts.length, id.chunkSize, index, count);
    const encoder = await openEncoder(id.modelDir, id.modelManifest, {
      executionProvider: e.model.executionProvider,
      ...(e.model.maxLength === undefined ? {} : { maxLength: e.model.maxLength }),
      ...(e.model.threads === undefined ? {} : { threads: e.model.threads }),
    });
    try {
      const written = await writeShard(
        dir,
        { shard: { index, count }, chunkSize: id.chunkSize, start, end },
        encoder.encode(texts.slice(start, end), 'passage', {
          chunkSize: id.chunkSize,
          onProgress: (done, total, tokens) =>
            ctx.progress(`encode-shard ${index}/${count}`, done, total, `${tokens} tokens`),
        }),
      );
      return { start, end, chunks: written.chunks.length };
    } finally {
      await encoder.dispose();
    }
  });
}

/**
 * `bfe run … --shard i/n`: the i-th slice of the memories' encoding, and the plan (n) that
 * tells a later run to assemble; both go to the team cache when one is configured.
 */
export async function runEncodeShardStage(
  ctx: StageContext,
  e: Experiment,
  dataset: DatasetStage,
  index: number,
  count: number,
): Promise<{ shard: ArtifactResult; plannedShards: number }> {
  if (e.model.window !== undefined)
    throw new ConfigError('a sharded encode (--shard) of windowed memories is not supported', {
      suggestion: 'Run without --shard, or leave model.window out.',
    });
  const id = await encodeIdentity(e, dataset);
  const shard = await runShard(ctx, e, dataset, id, index, count);
  const plan = await ctx.run('encode-plan', planSpec(id), async (dir) => {
    await writeFile(join(dir, 'plan.json'), `${JSON.stringify({ shards: count })}\n`);
    return { shards: count };
  });
  const { shards } = planSchema.parse(
    JSON.parse(await readFile(join(plan.dir, 'plan.json'), 'utf8')),
  );
  if (shards !== count) {
    ctx.log(
      `warning: the plan for this encode says ${shards} shards (another run chose it first); a run without --shard assembles ${shards}, so this slice of ${count} is not used`,
    );
  }
  return { shard, plannedShards: shards };
}

/**
 * The memories' chunks from the slices of a sharded encode, when a plan exists (local or team
 * cache): every slice is got (computed when missing) and checked to continue the previous
 * one. Undefined when no sharded encode was planned.
 */
export async function assembleShards(
  ctx: StageContext,
  e: Experiment,
  dataset: DatasetStage,
  id: EncodeIdentity,
  rows: number,
): Promise<{ shards: number; chunks: AsyncIterable<EncodedChunk> } | undefined> {
  const plan = await ctx.find(planSpec(id));
  if (plan === undefined) return undefined;
  const { shards } = planSchema.parse(
    JSON.parse(await readFile(join(plan.dir, 'plan.json'), 'utf8')),
  );
  const dirs: string[] = [];
  for (let i = 0; i < shards; i++) dirs.push((await runShard(ctx, e, dataset, id, i, shards)).dir);
  async function* chunks(): AsyncGenerator<EncodedChunk> {
    let next = 0;
    for (const [i, dir] of dirs.entries()) {
      const index = await readShardIndex(dir);
      const range = shardRange(rows, id.chunkSize, i, shards);
      if (
        index.start !== range.start ||
        index.end !== range.end ||
        index.chunkSize !== id.chunkSize
      ) {
        throw new Error(
          `encode-shard ${i}/${shards} holds rows ${index.start}..${index.end}, expected ${range.start}..${range.end}`,
        );
      }
      for await (const c of readShardChunks(dir, index)) {
        if (c.start !== next)
          throw new Error(`encode-shard ${i}/${shards}: chunk at ${c.start}, expected ${next}`);
        next += c.count;
        yield c;
      }
    }
    if (next !== rows) throw new Error(`the shards hold ${next} memories, the dataset ${rows}`);
  }
  return { shards, chunks: chunks() };
}
