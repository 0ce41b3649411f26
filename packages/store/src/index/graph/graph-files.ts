import { mkdir, readdir, readFile, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import { fileSha256, fsyncPath, writeFileAtomic } from '@bfe/core';
import { failpoint } from '../../log/faults.js';
import { removeUnnamed } from '../derived-files.js';
import { BankGraph, type GraphEntry, type GraphParams } from './bank-graph.js';
import type { GraphHnswMaker } from './graph-hnsw.js';

/** The folder of a store that holds its HNSW graphs (derived data: removable at any time). */
export const GRAPHS_DIR = 'graphs';
const FORMAT = 'bfe-store-graph/1';
const count = z.number().int().nonnegative();

/**
 * `graphs/<bank hex>.json`: what a bank's graph file holds — the store's model, the graph's
 * settings, the usearch file's size and SHA-256, and every row version in it (id, write sequence, first key, token count, pooled
 * fingerprint). A graph is trusted for a version only where all five match the store's live
 * row; the rest is topped up or removed at load.
 */
export const graphMetaSchema = z.strictObject({
  format: z.literal(FORMAT),
  bank: z.string().min(1),
  model: z.string().min(1),
  dim: z.number().int().positive(),
  kind: z.enum(['f32', 'f16', 'i8']),
  M: z.number().int().positive(),
  efConstruction: z.number().int().positive(),
  /** The usearch file (same folder) and its size. */
  file: z.string().regex(/^[0-9a-f]+-\d{6,}\.usearch$/),
  bytes: z.number().int().positive(),
  sha256: z.string().regex(/^[0-9a-f]{64}$/),
  generation: z.number().int().positive(),
  nextKey: count,
  /** Vectors in the usearch file (its `size()`): the entries' token counts sum to it. */
  size: count,
  entries: z.array(z.tuple([z.string(), count, count, count, count])),
});
export type GraphMeta = z.infer<typeof graphMetaSchema>;

/** The file stem of a bank's graph: the bank name's UTF-8 bytes in hex (any file system). */
export function graphStem(bank: string): string {
  return Buffer.from(bank, 'utf8').toString('hex');
}
const metaName = (bank: string): string => `${graphStem(bank)}.json`;
const graphName = (bank: string, generation: number): string =>
  `${graphStem(bank)}-${String(generation).padStart(6, '0')}.usearch`;

/**
 * Writes `graph` as generation `generation`: the usearch file (fsynced), then the meta file
 * (atomic swap), then removes the previous generation's file. A crash leaves the old pair or
 * the new one (an unnamed usearch file is garbage, removed at the next open).
 */
export async function saveGraph(
  storeDir: string,
  graph: BankGraph,
  model: string,
  generation: number,
): Promise<void> {
  const dir = join(storeDir, GRAPHS_DIR);
  await mkdir(dir, { recursive: true });
  const file = graphName(graph.bank, generation);
  const path = join(dir, file);
  const held = await graph.save(path);
  await fsyncPath(path);
  await fsyncPath(dir);
  failpoint('graph-file');
  const entries: GraphMeta['entries'] = [];
  for (const e of held.entries) entries.push([e.id, e.seq, e.first, e.count, e.fp]);
  const meta: GraphMeta = {
    format: FORMAT,
    bank: graph.bank,
    model,
    dim: graph.dim,
    kind: graph.params.kind,
    M: graph.params.M,
    efConstruction: graph.params.efConstruction,
    file,
    bytes: (await stat(path)).size,
    sha256: await fileSha256(path),
    generation,
    nextKey: held.nextKey,
    size: held.size,
    entries,
  };
  await writeFileAtomic(
    join(dir, metaName(graph.bank)),
    JSON.stringify(graphMetaSchema.parse(meta)),
  );
  failpoint('graph-meta');
  graph.changedTokens -= held.changed;
  if (generation > 1) await rm(join(dir, graphName(graph.bank, generation - 1)), { force: true });
}

/** A loaded graph, or why the files were not used. */
export type LoadedGraph =
  | { readonly graph: BankGraph; readonly generation: number }
  | { readonly graph: undefined; readonly generation: number; readonly reason: string };

/**
 * Loads `bank`'s graph when its files match the store (model, dimension, settings, file size,
 * vector count); otherwise says why (`no graph file`, `unreadable`, `settings differ`, …) and
 * the caller builds a new one. Never throws for bad files: a graph is derived data.
 */
export async function loadGraph(
  storeDir: string,
  bank: string,
  model: string,
  dim: number,
  params: GraphParams,
  maker: GraphHnswMaker,
): Promise<LoadedGraph> {
  const dir = join(storeDir, GRAPHS_DIR);
  let meta: GraphMeta;
  try {
    const raw: unknown = JSON.parse(await readFile(join(dir, metaName(bank)), 'utf8'));
    const parsed = graphMetaSchema.safeParse(raw);
    if (!parsed.success) return { graph: undefined, generation: 0, reason: 'meta invalid' };
    meta = parsed.data;
  } catch (error) {
    const missing = (error as NodeJS.ErrnoException).code === 'ENOENT';
    return {
      graph: undefined,
      generation: 0,
      reason: missing ? 'no graph file' : 'meta unreadable',
    };
  }
  const miss = (reason: string): LoadedGraph => ({
    graph: undefined,
    generation: meta.generation,
    reason,
  });
  if (meta.bank !== bank || meta.model !== model || meta.dim !== dim)
    return miss('another store or model');
  if (
    meta.kind !== params.kind ||
    meta.M !== params.M ||
    meta.efConstruction !== params.efConstruction
  )
    return miss('settings differ');
  const path = join(dir, meta.file);
  const bytes = await stat(path).then(
    (s) => s.size,
    () => -1,
  );
  if (bytes !== meta.bytes) return miss('graph file missing or of another size');
  if ((await fileSha256(path)) !== meta.sha256) return miss('graph file checksum differs');
  let entries: GraphEntry[];
  let tokens = 0;
  try {
    entries = meta.entries.map(([id, seq, first, n, fp]) => {
      if (first + n > meta.nextKey) throw new Error('key past nextKey');
      tokens += n;
      return { id, seq, first, count: n, fp };
    });
  } catch {
    return miss('meta entries invalid');
  }
  if (tokens !== meta.size) return miss('meta entries do not sum to the graph size');
  try {
    const { hnsw, size } = await maker.load(path, dim, params);
    if (size !== meta.size) {
      hnsw.dispose();
      return miss('graph size differs from its meta');
    }
    const graph = new BankGraph(bank, dim, params, hnsw, { entries, nextKey: meta.nextKey });
    return { graph, generation: meta.generation };
  } catch {
    return miss('graph file unreadable');
  }
}

/**
 * Removes from `graphs/` what no meta names (usearch files of interrupted saves, temporary
 * files); returns the names removed.
 */
export function removeGraphGarbage(storeDir: string): Promise<string[]> {
  return removeUnnamed(storeDir, GRAPHS_DIR, '.usearch', (meta) => {
    const parsed = graphMetaSchema.safeParse(meta);
    return parsed.success ? parsed.data.file : undefined;
  });
}

/** The banks that have a graph meta file in `graphs/`. */
export async function graphBanks(storeDir: string): Promise<string[]> {
  const names = await readdir(join(storeDir, GRAPHS_DIR)).catch(() => [] as string[]);
  return names
    .filter((n) => /^(?:[0-9a-f]{2})+\.json$/.test(n))
    .map((n) => Buffer.from(n.slice(0, -5), 'hex').toString('utf8'));
}
