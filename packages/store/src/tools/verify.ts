import { readdir } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { BfeError, toStorageError } from '@bfe/core';
import { GRAPHS_DIR } from '../index/graph/graph-files.js';
import { acquireLock, LOCK_FILE } from '../log/lock.js';
import { MANIFEST_FILE, walFile, walGenerationOf, type Manifest } from '../log/manifest.js';
import { readSegment } from '../log/segment.js';
import { readWal } from '../log/wal.js';
import { requireManifest } from './open.js';

/** One thing wrong with a store directory, naming the file (relative to the store). */
export interface VerifyProblem {
  readonly file: string;
  readonly kind: 'manifest' | 'segment' | 'wal' | 'unlisted';
  readonly message: string;
}

/** What one WAL generation holds. */
export interface WalReport {
  readonly file: string;
  readonly generation: number;
  /** Intact records, adds and deletes, and the rows the adds carry. */
  readonly records: number;
  readonly adds: number;
  readonly deletes: number;
  readonly rows: number;
  /** Records below the manifest's checkpoint: already in segments, skipped by replay. */
  readonly checkpointed: number;
  readonly bytes: number;
  /** Bytes after the last intact record: a torn or corrupt tail (0 when none). */
  readonly tornBytes: number;
}

/** What {@link verifyStore} found. */
export interface VerifyReport {
  readonly dir: string;
  /** No problem found (a torn tail of the last WAL generation is not one: see `notes`). */
  readonly intact: boolean;
  readonly segments: {
    readonly checked: number;
    readonly bytes: number;
    readonly rows: number;
    readonly tokens: number;
  };
  readonly wal: readonly WalReport[];
  readonly problems: readonly VerifyProblem[];
  /** Findings that are not damage: a torn WAL tail no write acknowledged, a WAL not yet made. */
  readonly notes: readonly string[];
}

/** Options of {@link verifyStore}. */
export interface VerifyOptions {
  /** Called after each segment is read: segments done, segments named by the manifest. */
  readonly onProgress?: (done: number, total: number) => void;
}

/**
 * Checks a store directory without changing it: every segment the manifest names is read in
 * full and checked against the manifest (size, SHA-256, Arrow schema and metadata, rows and
 * tokens), every WAL generation from the checkpoint on is decoded (records, CRCs, the vectors'
 * dimension, a torn tail), the generations must follow each other, and every file must be one
 * the manifest accounts for. Unlike `MemoryStore.open` it repairs nothing: no garbage removed,
 * no torn tail cut.
 *
 * It takes the store's writer lock while it reads (the `LOCK` file, removed afterwards), so no
 * writer flushes, compacts or recovers under it; a store another live process has open is
 * refused, not read half-way through a change. A stale lock (its process gone) is taken over,
 * as an open would.
 * @throws DataMissingError when `dir` is not a store
 * @throws StoreLockedError when another live process (or an open store in this one) holds it
 * @example
 * const report = await verifyStore('/data/memories');
 * report.intact; // false
 * report.problems[0]; // { file: 'segments/000003.arrow', kind: 'segment', message: '… SHA-256 differs …' }
 */
export async function verifyStore(dir: string, options: VerifyOptions = {}): Promise<VerifyReport> {
  const root = resolve(dir);
  const problems: VerifyProblem[] = [];
  let manifest: Manifest | undefined;
  try {
    manifest = await requireManifest(root);
  } catch (error) {
    if (!(error instanceof BfeError) || error.code !== 'ARTIFACT_CORRUPT') throw error;
    problems.push({ file: MANIFEST_FILE, kind: 'manifest', message: error.message });
  }
  const release = await acquireLock(root);
  try {
    // Read again under the lock: a writer may have swapped it between the first read and now.
    if (manifest !== undefined) manifest = await requireManifest(root);
    return await verifyLocked(root, manifest, problems, options);
  } finally {
    await release();
  }
}

async function verifyLocked(
  root: string,
  manifest: Manifest | undefined,
  problems: VerifyProblem[],
  options: VerifyOptions,
): Promise<VerifyReport> {
  const notes: string[] = [];
  const segments = { checked: 0, bytes: 0, rows: 0, tokens: 0 };
  if (manifest !== undefined) {
    const entries = manifest.segments;
    const seen = new Set<string>();
    for (const [i, entry] of entries.entries()) {
      const number = Number(/(\d+)\.arrow$/.exec(entry.file)![1]);
      if (seen.has(entry.file))
        problems.push({
          file: entry.file,
          kind: 'manifest',
          message: 'named twice by the manifest',
        });
      seen.add(entry.file);
      if (number >= manifest.nextSegment)
        problems.push({
          file: MANIFEST_FILE,
          kind: 'manifest',
          message: `nextSegment ${manifest.nextSegment} is not above live segment ${entry.file}: a later flush would overwrite it`,
        });
      try {
        const rows = await readSegment(join(root, entry.file), {
          ...entry,
          model: manifest.model,
          dim: manifest.dim,
        });
        const tokens = rows.encoded.tokenOffsets[rows.encoded.count]!;
        if (tokens !== entry.tokens)
          problems.push({
            file: entry.file,
            kind: 'segment',
            message: `holds ${tokens} tokens, the manifest says ${entry.tokens}`,
          });
        segments.checked++;
        segments.bytes += entry.bytes;
        segments.rows += entry.rows;
        segments.tokens += tokens;
      } catch (error) {
        // Corrupt, missing or unreadable (permissions, I/O): each a finding about this file.
        if (!(error instanceof BfeError)) throw error;
        problems.push({ file: entry.file, kind: 'segment', message: error.message });
      }
      options.onProgress?.(i + 1, entries.length);
    }
  }
  const wal = await checkWal(root, manifest, problems, notes);
  await checkListed(root, manifest, problems);
  return { dir: root, intact: problems.length === 0, segments, wal, problems, notes };
}

async function checkWal(
  root: string,
  manifest: Manifest | undefined,
  problems: VerifyProblem[],
  notes: string[],
): Promise<WalReport[]> {
  const from = manifest?.walGeneration ?? 1;
  const generations = (await list(root))
    .map(walGenerationOf)
    .filter((g): g is number => g !== undefined && g >= from)
    .sort((a, b) => a - b);
  if (manifest !== undefined && generations[0] !== manifest.walGeneration) {
    const first = walFile(manifest.walGeneration);
    if (generations.length === 0)
      notes.push(
        `${first} (the checkpoint's WAL generation) does not exist: no write reached it; the next open creates it`,
      );
    else
      problems.push({
        file: first,
        kind: 'wal',
        message: `the checkpoint's WAL generation is missing and ${walFile(generations[0]!)} follows it: the writes it held are lost`,
      });
  }
  const reports: WalReport[] = [];
  for (const [i, g] of generations.entries()) {
    const file = walFile(g);
    const last = i === generations.length - 1;
    const previous = generations[i - 1];
    if (previous !== undefined && g !== previous + 1)
      problems.push({
        file,
        kind: 'wal',
        message: `WAL generation ${previous + 1} is missing between ${walFile(previous)} and ${file}`,
      });
    let contents: Awaited<ReturnType<typeof readWal>>;
    try {
      contents = await readWal(join(root, file));
    } catch (error) {
      if (!(error instanceof BfeError)) throw error;
      problems.push({ file, kind: 'wal', message: error.message });
      continue;
    }
    let adds = 0;
    let deletes = 0;
    let rows = 0;
    let checkpointed = 0;
    for (const r of contents.records) {
      if (manifest !== undefined && r.seq < manifest.checkpointSeq) checkpointed++;
      if (r.kind === 'delete') {
        deletes++;
        continue;
      }
      adds++;
      rows += r.ids.length;
      if (manifest !== undefined && r.encoded.dim !== manifest.dim)
        problems.push({
          file,
          kind: 'wal',
          message: `the add at write sequence ${r.seq} holds ${r.encoded.dim}-d vectors, the store ${manifest.dim}-d`,
        });
    }
    const tornBytes = contents.fileBytes - contents.validBytes;
    if (tornBytes > 0 && !last)
      problems.push({
        file,
        kind: 'wal',
        message: `corrupt at byte ${contents.validBytes} of ${contents.fileBytes} and a later generation follows it: the records after it are lost`,
      });
    else if (tornBytes > 0)
      notes.push(
        `${file}: a torn tail of ${tornBytes} bytes after byte ${contents.validBytes} (a write no caller was told had succeeded; the next open cuts it off)`,
      );
    reports.push({
      file,
      generation: g,
      records: contents.records.length,
      adds,
      deletes,
      rows,
      checkpointed,
      bytes: contents.fileBytes,
      tornBytes,
    });
  }
  return reports;
}

/** Every file must be one the manifest accounts for; what else is there is named. */
async function checkListed(
  root: string,
  manifest: Manifest | undefined,
  problems: VerifyProblem[],
): Promise<void> {
  if (manifest === undefined) return;
  const listed = new Set(manifest.segments.map((s) => s.file));
  const unlisted = (file: string, why: string): void => {
    problems.push({ file, kind: 'unlisted', message: `not named by the manifest: ${why}` });
  };
  for (const name of await list(join(root, 'segments'))) {
    const rel = `segments/${name}`;
    if (listed.has(rel)) continue;
    unlisted(
      rel,
      /^\..*\.tmp$/.test(name)
        ? 'the temporary file of an interrupted write (the next open removes it)'
        : 'a segment of an interrupted flush or compaction, or one compaction retired (the next open removes it)',
    );
  }
  for (const name of await list(root)) {
    if (name === MANIFEST_FILE || name === LOCK_FILE || name === 'segments' || name === GRAPHS_DIR)
      continue;
    const g = walGenerationOf(name);
    if (g !== undefined && g >= manifest.walGeneration) continue;
    unlisted(
      name,
      g !== undefined
        ? `a WAL generation below the checkpoint's (${manifest.walGeneration}), already in segments (the next open removes it)`
        : /^\..*\.tmp$/.test(name)
          ? 'the temporary file of an interrupted write (the next open removes it)'
          : 'not a file of a memory store (the next open leaves it)',
    );
  }
}

async function list(path: string): Promise<string[]> {
  try {
    return await readdir(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw await toStorageError(error, path);
  }
}
