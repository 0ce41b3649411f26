import { mkdir, readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { ArtifactCorruptError, ConfigError, fsyncPath } from '@bfe/core';
import { applyRecord } from './apply.js';
import {
  readManifest,
  walFile,
  walGenerationOf,
  writeManifest,
  type Manifest,
} from './manifest.js';
import { FileRows } from './file-rows.js';
import { RowCache } from './row-cache.js';
import { readSegment, type SegmentRows } from './segment.js';
import { readSegmentKeys, type SegmentKeys } from './segment-read.js';
import {
  checkSettings,
  newSettings,
  recordedSettings,
  type RequestedSettings,
  type StoreSettings,
} from './settings.js';
import { Segment, type StoreState } from './state.js';
import { WalWriter, readWal } from './wal.js';

/** What opening a store directory found and rebuilt. */
export interface Recovered {
  readonly manifest: Manifest;
  /** The settings the store keeps (codec, window). */
  readonly settings: StoreSettings;
  readonly state: StoreState;
  /** The WAL generation new writes append to, opened. */
  readonly wal: WalWriter;
  readonly walGeneration: number;
  /** WAL records replayed, and bytes of torn tail cut off. */
  readonly replayed: { readonly records: number; readonly tornBytes: number };
  /** Files removed as garbage of interrupted flushes and compactions. */
  readonly removed: readonly string[];
}

/**
 * Opens a store directory (the caller holds its lock): reads the manifest (or starts one),
 * checks the model, loads and verifies every segment, removes files the manifest does not
 * name, replays the WAL generations from the checkpoint up to the first torn record, and cuts
 * the torn tail off so new records follow intact ones.
 * @throws ConfigError when the store holds another model's vectors, or keeps other settings
 * @throws ArtifactCorruptError naming a corrupt segment, manifest or WAL generation
 */
export async function recover(
  dir: string,
  model: string,
  dim: number,
  requested: RequestedSettings = {},
): Promise<Recovered> {
  await mkdir(join(dir, 'segments'), { recursive: true });
  let manifest = await readManifest(dir);
  if (manifest === undefined) {
    const fresh = newSettings(requested);
    manifest = {
      schemaVersion: 1,
      model,
      dim,
      codec: fresh.codec,
      ...(fresh.window === undefined ? {} : { window: fresh.window }),
      walGeneration: 1,
      checkpointSeq: 0,
      nextSegment: 1,
      segments: [],
      tombstones: {},
    };
    await writeManifest(dir, manifest);
  }
  if (manifest.model !== model || manifest.dim !== dim)
    throw new ConfigError(
      `store ${dir} holds ${manifest.dim}-d vectors of model ${manifest.model}; the embedder is ${dim}-d model ${model}`,
      { suggestion: 'Open the store with the model it was created with, or use a new directory.' },
    );
  const settings = recordedSettings(manifest);
  checkSettings(dir, settings, requested);
  const cache = new RowCache(requested.cacheBytes ?? Number.POSITIVE_INFINITY);
  const segments: Segment[] = [];
  for (const entry of manifest.segments) {
    const path = join(dir, entry.file);
    const expected = { ...entry, model, dim };
    // A format-2 segment is read by parts (its directory); a format-1 one whole, once.
    const keys =
      entry.directory === undefined
        ? keysOf(await readSegment(path, expected))
        : readSegmentKeys(path, entry.rows, entry.bytes, entry.directory);
    segments.push(new Segment(entry, path, new FileRows(entry.bank, path, expected, keys, cache)));
  }
  const removed = await removeGarbage(dir, manifest);
  const tombstones = new Map<string, Map<string, number>>();
  for (const [bank, stones] of Object.entries(manifest.tombstones))
    tombstones.set(bank, new Map(Object.entries(stones)));
  let state: StoreState = {
    segments,
    tombstones,
    memtable: [],
    nextSeq: manifest.checkpointSeq,
    cache,
  };
  const generations = (await readdir(dir))
    .map(walGenerationOf)
    .filter((g): g is number => g !== undefined && g >= manifest.walGeneration)
    .sort((a, b) => a - b);
  let records = 0;
  let tornBytes = 0;
  let lastValid: number | undefined;
  for (const [i, g] of generations.entries()) {
    const path = join(dir, walFile(g));
    const contents = await readWal(path);
    const last = i === generations.length - 1;
    if (contents.validBytes < contents.fileBytes && !last)
      throw new ArtifactCorruptError(
        `store WAL ${path} is corrupt at byte ${contents.validBytes} and a later generation follows it`,
      );
    for (const r of contents.records) {
      if (r.seq < manifest.checkpointSeq) continue;
      state = applyRecord(state, r);
      records++;
    }
    if (last) {
      tornBytes = contents.fileBytes - contents.validBytes;
      lastValid = contents.validBytes;
    }
  }
  const walGeneration = generations.at(-1) ?? manifest.walGeneration;
  const wal = await WalWriter.open(join(dir, walFile(walGeneration)), lastValid);
  if (lastValid === undefined) await fsyncPath(dir); // a new WAL file: make its name durable
  return {
    manifest,
    settings,
    state,
    wal,
    walGeneration,
    replayed: { records, tornBytes },
    removed,
  };
}

/**
 * Removes what the manifest does not name: segment files of interrupted flushes or
 * compactions (and those compaction retired), WAL generations below the checkpoint, and
 * temporary files of writers that died mid-write.
 */
async function removeGarbage(dir: string, manifest: Manifest): Promise<string[]> {
  const removed: string[] = [];
  const listed = new Set(manifest.segments.map((s) => s.file));
  for (const name of await readdir(join(dir, 'segments'))) {
    const rel = `segments/${name}`;
    if (!listed.has(rel)) removed.push(rel);
  }
  for (const name of await readdir(dir)) {
    const g = walGenerationOf(name);
    if ((g !== undefined && g < manifest.walGeneration) || /^\..*\.tmp$/.test(name))
      removed.push(name);
  }
  for (const rel of removed) await rm(join(dir, rel), { recursive: true, force: true });
  return removed;
}

function keysOf(rows: SegmentRows): SegmentKeys {
  return {
    ids: [...rows.ids],
    seqs: rows.seqs.slice(),
    tokenOffsets: rows.encoded.tokenOffsets.slice(),
  };
}
