// A large bank's clustered index on disk: `ivf/<bank hex>-<generation>.ivf` (the index's
// `toBytes`, laid out: no tails, no pending deletions) and `ivf/<bank hex>.json` naming it with
// the row versions it holds, so a reopened store reads it by position instead of training again.
import { mkdir, open, readFile, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import { fsyncPath, writeFileAtomic } from '@bfe/core';
import { failpoint } from '../../log/faults.js';
import { removeUnnamed } from '../derived-files.js';
import { graphStem } from '../graph/graph-files.js';

/** The folder of a store that holds its IVF indexes (derived data: removable at any time). */
export const IVF_DIR = 'ivf';
const FORMAT = 'bfe-store-ivf/1';
const count = z.number().int().nonnegative();

/**
 * `ivf/<bank hex>.json`: the store's model, the index's settings, its file's name and size, and
 * every row of the index in order — id, write sequence, token count, 1 where tombstoned.
 */
export const ivfMetaSchema = z.strictObject({
  format: z.literal(FORMAT),
  bank: z.string().min(1),
  model: z.string().min(1),
  dim: z.number().int().positive(),
  residualBits: z.union([z.literal(2), z.literal(4)]),
  centroids: z.number().int().positive(),
  file: z.string().regex(/^[0-9a-f]+-\d{6,}\.ivf$/),
  bytes: z.number().int().positive(),
  generation: z.number().int().positive(),
  rows: z.array(z.tuple([z.string(), count, count, z.union([z.literal(0), z.literal(1)])])),
});
export type IvfMeta = z.infer<typeof ivfMetaSchema>;

/** One row of a saved index: its id, write sequence, token count and whether it is tombstoned. */
export interface SavedRow {
  readonly id: string;
  readonly seq: number;
  readonly count: number;
  readonly dead: boolean;
}

/** What a bank's index writes: its laid-out bytes and its rows in index order. */
export interface IvfSnapshot {
  readonly bank: string;
  readonly dim: number;
  readonly residualBits: 2 | 4;
  readonly centroids: number;
  readonly bytes: Uint8Array;
  readonly rows: readonly SavedRow[];
}

const metaName = (bank: string): string => `${graphStem(bank)}.json`;
const fileName = (bank: string, generation: number): string =>
  `${graphStem(bank)}-${String(generation).padStart(6, '0')}.ivf`;

/**
 * Writes `snap` as generation `generation`: the index file (fsynced), then the meta (atomic
 * swap), then removes the previous generation's file. A crash leaves the old pair or the new
 * one (an unnamed index file is garbage, removed by {@link removeIvfGarbage}).
 */
export async function saveIvf(
  storeDir: string,
  snap: IvfSnapshot,
  model: string,
  generation: number,
): Promise<void> {
  const dir = join(storeDir, IVF_DIR);
  await mkdir(dir, { recursive: true });
  const file = fileName(snap.bank, generation);
  const path = join(dir, file);
  const handle = await open(path, 'w');
  try {
    await handle.writeFile(snap.bytes);
    await handle.sync();
  } finally {
    await handle.close();
  }
  await fsyncPath(dir);
  failpoint('ivf-file');
  const meta: IvfMeta = {
    format: FORMAT,
    bank: snap.bank,
    model,
    dim: snap.dim,
    residualBits: snap.residualBits,
    centroids: snap.centroids,
    file,
    bytes: snap.bytes.length,
    generation,
    rows: snap.rows.map((r) => [r.id, r.seq, r.count, r.dead ? 1 : 0]),
  };
  await writeFileAtomic(join(dir, metaName(snap.bank)), JSON.stringify(ivfMetaSchema.parse(meta)));
  failpoint('ivf-meta');
  if (generation > 1) await rm(join(dir, fileName(snap.bank, generation - 1)), { force: true });
}

/** A saved index to open, or why there is none to use. */
export type FoundIvf =
  | {
      readonly path: string;
      readonly rows: readonly SavedRow[];
      readonly centroids: number;
      readonly generation: number;
    }
  | { readonly path: undefined; readonly generation: number; readonly reason: string };

/**
 * `bank`'s saved index when its meta matches the store and the settings (model, dimension,
 * residual bits, centroids when set) and its file has the size the meta says; otherwise why
 * not (`no index file`, `settings differ`, …): the caller trains a new one. Never throws for
 * bad files: an index is derived data.
 */
export async function findIvf(
  storeDir: string,
  bank: string,
  want: {
    readonly model: string;
    readonly dim: number;
    readonly residualBits: 2 | 4;
    readonly centroids?: number | undefined;
  },
): Promise<FoundIvf> {
  const dir = join(storeDir, IVF_DIR);
  let meta: IvfMeta;
  try {
    const parsed = ivfMetaSchema.safeParse(
      JSON.parse(await readFile(join(dir, metaName(bank)), 'utf8')),
    );
    if (!parsed.success) return { path: undefined, generation: 0, reason: 'meta invalid' };
    meta = parsed.data;
  } catch (error) {
    const missing = (error as NodeJS.ErrnoException).code === 'ENOENT';
    return {
      path: undefined,
      generation: 0,
      reason: missing ? 'no index file' : 'meta unreadable',
    };
  }
  const miss = (reason: string): FoundIvf => ({
    path: undefined,
    generation: meta.generation,
    reason,
  });
  if (meta.bank !== bank || meta.model !== want.model || meta.dim !== want.dim)
    return miss('another store or model');
  if (
    meta.residualBits !== want.residualBits ||
    (want.centroids !== undefined && meta.centroids !== want.centroids)
  )
    return miss('settings differ');
  const path = join(dir, meta.file);
  const size = await stat(path).then(
    (s) => s.size,
    () => -1,
  );
  if (size !== meta.bytes) return miss('index file missing or of another size');
  const rows = meta.rows.map(([id, seq, n, dead]) => ({ id, seq, count: n, dead: dead === 1 }));
  return { path, rows, centroids: meta.centroids, generation: meta.generation };
}

/** Removes from `ivf/` the index files no meta names and temporary files; returns them. */
export function removeIvfGarbage(storeDir: string): Promise<string[]> {
  return removeUnnamed(storeDir, IVF_DIR, '.ivf', (meta) => {
    const parsed = ivfMetaSchema.safeParse(meta);
    return parsed.success ? parsed.data.file : undefined;
  });
}
