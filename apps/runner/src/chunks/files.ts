import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import { ArtifactCorruptError, writeFileAtomic } from '@bfe/core';
import type { WindowPools } from '@bfe/scorer';
import type { ChunkPassResult } from './pass.js';

/** The chunks stage's files: the window layout (JSON) and the window vectors (float32 LE). */
export const CHUNK_FILES = { layout: 'chunks.json', vectors: 'chunk-vectors.f32' } as const;

/** What every chunked-pooled window is, word for word (recorded in `chunks.json`). */
export const CHUNK_DEFINITION =
  'consecutive, non-overlapping windows of at most `size` tokens, each the leading non-content ' +
  'tokens ([CLS], any passage prefix) + up to size − head − tail content tokens + the trailing ' +
  'ones ([SEP]); each window encoded alone and pooled natively (MiniLM: mean over every token, ' +
  'specials included, L2-normalised); a memory of at most `size` tokens is not cut and keeps ' +
  'the bank’s pooled vector';

const layoutSchema = z.strictObject({
  size: z.int().positive(),
  dim: z.int().nonnegative(),
  model: z.string().min(1),
  pooling: z.enum(['mean', 'cls', 'last']),
  definition: z.string(),
  memories: z.int().nonnegative(),
  /** Memories longer than one window, each with its windows, in bank order. */
  cut: z.array(
    z.strictObject({
      id: z.string().min(1),
      /** Untruncated tokens, specials and prefix included. */
      tokens: z.int().positive(),
      first: z.array(z.int().nonnegative()).min(2),
      count: z.array(z.int().positive()).min(2),
    }),
  ),
  windows: z.int().nonnegative(),
  /** Untruncated token counts of every memory: the longest, and how many exceed `size`. */
  longest: z.int().nonnegative(),
});

/** `chunks.json`. */
export type ChunkLayout = z.infer<typeof layoutSchema>;

/**
 * Writes a chunk pass over `ids` (the memories' ids, in pass order) into `dir`: `chunks.json`
 * (sizes, the cut memories and their windows) and `chunk-vectors.f32` (their pooled vectors,
 * `[windows * dim]` little-endian float32, window order as in `chunks.json`).
 */
export async function writeChunkFiles(
  dir: string,
  ids: readonly string[],
  pass: ChunkPassResult,
  model: { readonly name: string; readonly pooling: ChunkLayout['pooling'] },
): Promise<ChunkLayout> {
  const cut: ChunkLayout['cut'] = [];
  for (let w = 0; w < pass.owner.length; w++) {
    const text = pass.owner[w]!;
    const id = ids[text]!;
    let entry = cut.at(-1);
    if (entry?.id !== id) {
      entry = { id, tokens: pass.lengths[text]!, first: [], count: [] };
      cut.push(entry);
    }
    entry.first.push(pass.first[w]!);
    entry.count.push(pass.count[w]!);
  }
  let longest = 0;
  for (const l of pass.lengths) longest = Math.max(longest, l);
  const layout = layoutSchema.parse({
    size: pass.size,
    dim: pass.dim,
    model: model.name,
    pooling: model.pooling,
    definition: CHUNK_DEFINITION,
    memories: ids.length,
    cut,
    windows: pass.owner.length,
    longest,
  });
  const v = pass.vectors;
  await writeFileAtomic(
    join(dir, CHUNK_FILES.vectors),
    new Uint8Array(v.buffer, v.byteOffset, v.byteLength),
  );
  await writeFileAtomic(join(dir, CHUNK_FILES.layout), `${JSON.stringify(layout)}\n`);
  return layout;
}

/** Reads what {@link writeChunkFiles} wrote. @throws ArtifactCorruptError on a bad file. */
export async function readChunkFiles(
  dir: string,
): Promise<{ layout: ChunkLayout; vectors: Float32Array }> {
  const parsed = layoutSchema.safeParse(
    JSON.parse(await readFile(join(dir, CHUNK_FILES.layout), 'utf8')),
  );
  if (!parsed.success) {
    throw new ArtifactCorruptError(
      `${dir}/${CHUNK_FILES.layout}: ${z.prettifyError(parsed.error)}`,
    );
  }
  const layout = parsed.data;
  const bytes = await readFile(join(dir, CHUNK_FILES.vectors));
  if (bytes.byteLength !== layout.windows * layout.dim * 4) {
    throw new ArtifactCorruptError(
      `${dir}/${CHUNK_FILES.vectors}: ${bytes.byteLength} bytes for ${layout.windows} windows of ${layout.dim} floats`,
    );
  }
  const vectors = new Float32Array(layout.windows * layout.dim);
  new Uint8Array(vectors.buffer).set(bytes);
  return { layout, vectors };
}

/**
 * Every memory row's window pools for `rankChunkedPooled`: a cut memory's windows from the
 * chunk files, every other memory its bank pooled vector, copied bit for bit (it fits one
 * window of `size` tokens, and the bank holds its untruncated pooled vector: the caller checks
 * that the bank neither truncates nor windows below `size`).
 *
 * @throws ArtifactCorruptError when a cut memory is not a bank row, or dims disagree.
 * @example
 * windowPools({ ids: ['a', 'b'], pooled, dim: 384 }, layout, vectors); // b cut in 3
 * // → offsets [0, 1, 4], vectors [4 * 384]: a's pooled vector, then b's 3 windows
 */
export function windowPools(
  memories: {
    readonly ids: readonly string[];
    readonly pooled: Float32Array;
    readonly dim: number;
  },
  layout: ChunkLayout,
  vectors: Float32Array,
): WindowPools {
  const { ids, pooled, dim } = memories;
  if (layout.windows > 0 && layout.dim !== dim) {
    throw new ArtifactCorruptError(`chunk windows are ${layout.dim}-d, the bank ${dim}-d`);
  }
  const cutAt = new Map<string, { from: number; n: number }>();
  let at = 0;
  for (const c of layout.cut) {
    cutAt.set(c.id, { from: at, n: c.first.length });
    at += c.first.length;
  }
  const rowOf = new Set(ids);
  for (const id of cutAt.keys()) {
    if (!rowOf.has(id)) throw new ArtifactCorruptError(`chunked memory '${id}' is not in the bank`);
  }
  const offsets = new Int32Array(ids.length + 1);
  for (let r = 0; r < ids.length; r++) offsets[r + 1] = offsets[r]! + (cutAt.get(ids[r]!)?.n ?? 1);
  const out = new Float32Array(offsets[ids.length]! * dim);
  for (let r = 0; r < ids.length; r++) {
    const c = cutAt.get(ids[r]!);
    const to = offsets[r]! * dim;
    if (c === undefined) out.set(pooled.subarray(r * dim, (r + 1) * dim), to);
    else out.set(vectors.subarray(c.from * dim, (c.from + c.n) * dim), to);
  }
  return { dim, offsets, vectors: out };
}
