import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import { ArtifactCorruptError, toStorageError, writeFileAtomic } from '@bfe/core';
import { segmentDirectorySchema } from './segment-read.js';
import { storeCodecSchema, storeWindowSchema } from './settings.js';

/** File name of the manifest in a store directory. */
export const MANIFEST_FILE = 'MANIFEST.json';

const count = z.number().int().nonnegative();

/**
 * `MANIFEST.json`: the one file that says what a store is. Swapped atomically (temporary
 * file, fsync, rename) by every flush and compaction; a file of the directory it does not name
 * (a segment, an old WAL generation, a temporary file) is garbage from an interrupted write.
 */
export const manifestSchema = z.strictObject({
  schemaVersion: z.literal(1),
  /** The embedder's identity (the model hash): the store refuses another model's vectors. */
  model: z.string().min(1),
  dim: z.number().int().positive(),
  /** The codec segments keep token states in (`settings.ts`); absent: fp32. */
  codec: storeCodecSchema.optional(),
  /** Windowed encoding of long memories (`settings.ts`); absent: truncated. */
  window: storeWindowSchema.optional(),
  /** WAL generations from this one up hold the writes not yet in segments (the checkpoint). */
  walGeneration: z.number().int().positive(),
  /** Write sequence at the checkpoint: every record below it lives in the segments. */
  checkpointSeq: count,
  /** Number of the next segment file (`segments/<n>.arrow`). */
  nextSegment: count,
  /** Live segments, oldest first. */
  segments: z.array(
    z.strictObject({
      file: z.string().regex(/^segments\/\d{6,}\.arrow$/),
      bank: z.string().min(1),
      rows: z.number().int().positive(),
      tokens: count,
      bytes: z.number().int().positive(),
      sha256: z.string().regex(/^[0-9a-f]{64}$/),
      /** The codec of its token states (absent: a format-1 segment, fp32). */
      codec: storeCodecSchema.optional(),
      /** Where an open reads its ids, sequences and token offsets (absent: read whole). */
      directory: segmentDirectorySchema.optional(),
    }),
  ),
  /** Tombstones, bank → id → the write sequence of the delete (older rows of the id are dead). */
  tombstones: z.record(z.string(), z.record(z.string(), count)),
});
export type Manifest = z.infer<typeof manifestSchema>;
export type SegmentEntry = Manifest['segments'][number];

/** Name of WAL generation `g` in the store directory. */
export function walFile(g: number): string {
  return `wal-${String(g).padStart(6, '0')}.log`;
}

/** The generation of a WAL file name, or undefined for another file. */
export function walGenerationOf(name: string): number | undefined {
  const m = /^wal-(\d{6,})\.log$/.exec(name);
  return m === null ? undefined : Number(m[1]);
}

/** Relative path of segment number `n`. */
export function segmentFile(n: number): string {
  return `segments/${String(n).padStart(6, '0')}.arrow`;
}

/**
 * Reads a store's manifest; `undefined` when there is none (a new store).
 * @throws ArtifactCorruptError when it is not valid JSON or not a valid manifest
 */
export async function readManifest(dir: string): Promise<Manifest | undefined> {
  const path = join(dir, MANIFEST_FILE);
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw await toStorageError(error, path);
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (cause) {
    throw new ArtifactCorruptError(`${path} is not valid JSON`, { cause });
  }
  const parsed = manifestSchema.safeParse(raw);
  if (!parsed.success)
    throw new ArtifactCorruptError(
      `${path} is not a valid store manifest:\n${z.prettifyError(parsed.error)}`,
    );
  return parsed.data;
}

/** Writes the manifest atomically: readers and a reopen see the old one or the new one. */
export async function writeManifest(dir: string, manifest: Manifest): Promise<void> {
  await writeFileAtomic(
    join(dir, MANIFEST_FILE),
    `${JSON.stringify(manifestSchema.parse(manifest), null, 1)}\n`,
  );
}
