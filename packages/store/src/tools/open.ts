import { readdir, stat } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { DataMissingError, toStorageError } from '@bfe/core';
import { emptyEncoded } from '../log/encoded.js';
import { MANIFEST_FILE, readManifest, type Manifest } from '../log/manifest.js';
import { MemoryStore } from '../store.js';
import type { EncodedTexts, Embedder } from '../types.js';
import { residentIndexFactory } from '../index/resident-index.js';

/**
 * Reads the manifest of an existing store directory, refusing a directory that is not a
 * store: the operator tools never create one (`MemoryStore.open` would).
 * @throws DataMissingError when `dir` does not exist or holds no `MANIFEST.json`
 * @throws ArtifactCorruptError when the manifest is not valid
 * @example
 * const m = await requireManifest('/data/memories'); // { model, dim, codec, segments: [...], … }
 */
export async function requireManifest(dir: string): Promise<Manifest> {
  const root = resolve(dir);
  try {
    if (!(await stat(root)).isDirectory())
      throw new DataMissingError(`${root} is not a directory`, {
        suggestion: 'Name the directory a memory store was opened in.',
      });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT')
      throw new DataMissingError(`store directory ${root} does not exist`, {
        suggestion: 'Name the directory a memory store was opened in.',
      });
    throw await toStorageError(error, root);
  }
  const manifest = await readManifest(root);
  if (manifest === undefined)
    throw new DataMissingError(`${root} is not a memory store: it has no ${MANIFEST_FILE}`, {
      suggestion: 'Name the directory a memory store was opened in (it holds MANIFEST.json).',
    });
  return manifest;
}

/**
 * An {@link Embedder} that stands for the store's own model without loading it: its identity
 * is the manifest's model hash and dimension, so the store opens, and it refuses to encode.
 * Maintenance (stats, compaction, export) reads stored vectors and never encodes.
 * @example
 * const e = manifestEmbedder(await requireManifest(dir)); // e.model === manifest.model
 */
export function manifestEmbedder(manifest: Pick<Manifest, 'model' | 'dim'>): Embedder {
  return {
    model: manifest.model,
    dim: manifest.dim,
    encode(texts): Promise<EncodedTexts> {
      // An empty call (the open's check of a windowed store) has nothing to encode.
      if (texts.length === 0) return Promise.resolve(emptyEncoded(0, 0, manifest.dim));
      return Promise.reject(
        new Error('manifestEmbedder: a store opened for maintenance encodes nothing'),
      );
    },
    tokenText: (id: number) => `[${id}]`,
    dispose: () => Promise.resolve(),
  };
}

/** A store opened by {@link openForMaintenance}, and its manifest at open. */
export interface MaintenanceStore {
  readonly store: MemoryStore;
  readonly manifest: Manifest;
  readonly dir: string;
}

/**
 * Opens an existing store for maintenance: no model is loaded (the vectors are the stored
 * ones), no background compaction starts, and searches would run exactly (no HNSW graph is
 * attached; `graphs/` is left as it is: compaction keeps write sequences, so the graphs stay
 * valid). It is an ordinary open otherwise: it takes the writer lock and recovers (replays the
 * WAL, cuts a torn tail, removes garbage of interrupted writes).
 * @throws DataMissingError when `dir` is not a store
 * @throws StoreLockedError when another live process has it open
 * @example
 * const { store } = await openForMaintenance('/data/memories');
 * try { console.log((await store.stats()).memories); } finally { await store.close({ flush: false }); }
 */
export async function openForMaintenance(dir: string): Promise<MaintenanceStore> {
  const root = resolve(dir);
  const manifest = await requireManifest(root);
  const store = await MemoryStore.open(root, {
    embedder: manifestEmbedder(manifest),
    compactSegments: 0,
    index: residentIndexFactory(),
  });
  return { store, manifest, dir: root };
}

/**
 * Total bytes of the files directly under `dir/sub` (0 when it does not exist).
 * @example
 * await directoryBytes('/data/memories', 'graphs'); // 1_572_864
 */
export async function directoryBytes(dir: string, sub: string): Promise<number> {
  const path = join(dir, sub);
  let names: string[];
  try {
    names = await readdir(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return 0;
    throw await toStorageError(error, path);
  }
  let total = 0;
  for (const name of names) {
    const s = await stat(join(path, name)).catch(() => undefined);
    if (s?.isFile() === true) total += s.size;
  }
  return total;
}
