/**
 * The adapter file: one small JSON document (≈ 130 kB at d = 384, r = 32) with the provenance
 * in plain fields and the weights as base64 little-endian float32, `A [rank × dim]` then
 * `B [dim × rank]`, guarded by their SHA-256. Validated with zod on read; written atomically.
 */
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { z } from 'zod';
import { ArtifactCorruptError, writeFileAtomic } from '@bfe/core';
import type { Adapter } from './adapter.js';
import { trainingConfigSchema } from './options.js';

/** The `format` field of every adapter file. */
export const ADAPTER_FORMAT = 'bfe-query-adapter';

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/** An adapter file as JSON: the source of truth for its fields. */
export const adapterFileSchema = z.strictObject({
  format: z.literal(ADAPTER_FORMAT),
  version: z.literal(1),
  dim: z.number().int().min(1).max(65536),
  rank: z.number().int().min(1).max(65536),
  seed: z.number().int(),
  epoch: z.number().int().min(0),
  splitHash: z.string().min(1).nullable(),
  modelHash: z.string().min(1).nullable(),
  trainingConfig: trainingConfigSchema,
  weights: z.strictObject({
    dtype: z.literal('float32'),
    byteOrder: z.literal('little-endian'),
    layout: z.literal('A [rank x dim] then B [dim x rank], row-major'),
    /** SHA-256 (hex) of the decoded weight bytes. */
    sha256: z.string().regex(/^[0-9a-f]{64}$/),
    base64: z.string().regex(BASE64),
  }),
});

/** An adapter file as JSON. */
export type AdapterFile = z.infer<typeof adapterFileSchema>;

/** Little-endian float32 bytes of A then B. */
function weightBytes(adapter: Adapter): Uint8Array {
  const { a, b } = adapter;
  const bytes = new Uint8Array((a.length + b.length) * 4);
  const view = new DataView(bytes.buffer);
  for (let i = 0; i < a.length; i++) view.setFloat32(i * 4, a[i]!, true);
  const at = a.length * 4;
  for (let i = 0; i < b.length; i++) view.setFloat32(at + i * 4, b[i]!, true);
  return bytes;
}

/**
 * SHA-256 (hex) of an adapter's weights as stored: little-endian float32 A then B.
 * @example adapterWeightsSha256(adapter); // '3f1c…' (64 hex digits)
 */
export function adapterWeightsSha256(adapter: Adapter): string {
  return createHash('sha256').update(weightBytes(adapter)).digest('hex');
}

/**
 * The adapter file's text.
 * @example JSON.parse(serializeAdapter(adapter)).weights.sha256; // 64 hex digits
 */
export function serializeAdapter(adapter: Adapter): string {
  const { dim, rank, a, b, meta } = adapter;
  if (a.length !== rank * dim || b.length !== dim * rank) {
    throw new Error(`serializeAdapter: weights do not have the shape ${rank} × ${dim}`);
  }
  const bytes = weightBytes(adapter);
  const file: AdapterFile = {
    format: ADAPTER_FORMAT,
    version: 1,
    dim,
    rank,
    seed: meta.seed,
    epoch: meta.epoch,
    splitHash: meta.splitHash,
    modelHash: meta.modelHash,
    trainingConfig: meta.trainingConfig,
    weights: {
      dtype: 'float32',
      byteOrder: 'little-endian',
      layout: 'A [rank x dim] then B [dim x rank], row-major',
      sha256: createHash('sha256').update(bytes).digest('hex'),
      base64: Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64'),
    },
  };
  return `${JSON.stringify(file, null, 1)}\n`;
}

/**
 * Parses and verifies an adapter file's text: JSON, the schema, the weight byte count, the
 * SHA-256, finite weights, and that the header agrees with `trainingConfig`.
 * @param source the file name, for messages.
 * @throws {ArtifactCorruptError} on any failure.
 */
export function parseAdapter(text: string, source = 'adapter file'): Adapter {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new ArtifactCorruptError(`${source}: not JSON (truncated or overwritten?).`, {
      cause: error,
    });
  }
  const parsed = adapterFileSchema.safeParse(json);
  if (!parsed.success) {
    throw new ArtifactCorruptError(
      `${source}: not a valid adapter file: ${z.prettifyError(parsed.error)}`,
    );
  }
  const file = parsed.data;
  const { dim, rank, weights } = file;
  const corrupt = (what: string): ArtifactCorruptError =>
    new ArtifactCorruptError(`${source}: ${what}`, {
      suggestion: 'The adapter file is damaged; train the adapter again or restore it.',
    });
  if (file.rank !== file.trainingConfig.rank || file.seed !== file.trainingConfig.seed) {
    throw corrupt('rank or seed disagree with trainingConfig.');
  }
  if (file.epoch > file.trainingConfig.epochs) {
    throw corrupt(`epoch ${file.epoch} exceeds the ${file.trainingConfig.epochs} trained.`);
  }
  const bytes = Buffer.from(weights.base64, 'base64');
  const expected = 2 * rank * dim * 4;
  if (bytes.length !== expected) {
    throw corrupt(`${bytes.length} weight bytes, expected ${expected} (2 × ${rank} × ${dim} × 4).`);
  }
  const sha256 = createHash('sha256').update(bytes).digest('hex');
  if (sha256 !== weights.sha256) {
    throw corrupt(`weights have SHA-256 ${sha256}, the header says ${weights.sha256}.`);
  }
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const a = new Float32Array(rank * dim);
  const b = new Float32Array(dim * rank);
  for (let i = 0; i < a.length; i++) a[i] = view.getFloat32(i * 4, true);
  const at = a.length * 4;
  for (let i = 0; i < b.length; i++) b[i] = view.getFloat32(at + i * 4, true);
  for (const w of [a, b]) {
    for (let i = 0; i < w.length; i++) {
      if (!Number.isFinite(w[i]!)) throw corrupt(`weight ${i} is ${w[i]}.`);
    }
  }
  return {
    dim,
    rank,
    a,
    b,
    meta: {
      seed: file.seed,
      epoch: file.epoch,
      splitHash: file.splitHash,
      modelHash: file.modelHash,
      trainingConfig: file.trainingConfig,
    },
  };
}

/**
 * Writes an adapter file atomically (a temporary sibling, then a rename: readers see the old
 * file or the whole new one). Returns the weights' SHA-256 and the file's size.
 * @example
 * await saveAdapter('runs/locomo-minilm/adapter-epoch1.json', result.snapshots[1]!.adapter);
 */
export async function saveAdapter(
  path: string,
  adapter: Adapter,
): Promise<{ weightsSha256: string; bytes: number }> {
  const text = serializeAdapter(adapter);
  await writeFileAtomic(path, text);
  return { weightsSha256: adapterWeightsSha256(adapter), bytes: Buffer.byteLength(text) };
}

/**
 * Reads and verifies an adapter file ({@link parseAdapter}).
 * @throws {ArtifactCorruptError} when the file is not a valid, intact adapter file.
 * @example
 * const adapter = await loadAdapter('runs/locomo-minilm/adapter-epoch1.json');
 * adapter.a; // Float32Array [rank * dim]
 */
export async function loadAdapter(path: string): Promise<Adapter> {
  return parseAdapter(await readFile(path, 'utf8'), path);
}
