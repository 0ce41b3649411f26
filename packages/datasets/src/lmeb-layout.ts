import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { ConfigError, DataMissingError } from '@bfe/core';

// How an LMEB task folder is laid out: which files it has and where its subsets are.
// (Package-internal: used by lmeb.ts.)

export const CORPUS = 'corpus.jsonl';
export const QUERIES = 'queries.jsonl';
export const QRELS = 'qrels.tsv';
export const CANDIDATES = 'candidates.jsonl';

export type Layout = 'dialogue' | 'document';

/** One subtask: where its queries and qrels are, relative to the task folder. */
export interface Subset {
  readonly name: string;
  readonly queriesFile: string;
  readonly qrelsFile: string;
}

export async function resolveLayout(root: string, requested: Layout | 'auto'): Promise<Layout> {
  if (requested !== 'auto') return requested;
  if (await isFile(join(root, QUERIES))) return 'document';
  if ((await findSubsetFolders(root)).length > 0) return 'dialogue';
  throw new DataMissingError(
    `LMEB folder ${root} has no ${QUERIES}, neither at its root (document task) nor in a subset folder (dialogue task).`,
  );
}

export async function resolveSubsets(
  root: string,
  folder: string,
  layout: Layout,
  requested: readonly string[] | undefined,
): Promise<Subset[]> {
  if (layout === 'document') {
    if (requested !== undefined) {
      throw new ConfigError(
        `LMEB option 'subsets' applies to dialogue tasks only; ${root} is loaded as a document task.`,
      );
    }
    return [{ name: folder, queriesFile: QUERIES, qrelsFile: QRELS }];
  }
  const names = requested ?? (await findSubsetFolders(root));
  if (names.length === 0) {
    throw new DataMissingError(
      `LMEB dialogue folder ${root} has no subset folder with ${QUERIES}.`,
    );
  }
  if (new Set(names).size !== names.length) {
    throw new ConfigError(`LMEB option 'subsets' lists a subset twice: ${names.join(', ')}`);
  }
  return names.map((n) => ({
    name: n,
    queriesFile: `${n}/${QUERIES}`,
    qrelsFile: `${n}/${QRELS}`,
  }));
}

/** Subfolders holding a `queries.jsonl`, sorted so the subtask order does not depend on the OS. */
export async function findSubsetFolders(root: string): Promise<string[]> {
  const entries = await readdir(root, { withFileTypes: true });
  const names: string[] = [];
  for (const e of entries) {
    if (e.isDirectory() && (await isFile(join(root, e.name, QUERIES)))) names.push(e.name);
  }
  return names.sort();
}

export async function requireFile(root: string, file: string): Promise<void> {
  if (!(await isFile(join(root, file)))) {
    throw new DataMissingError(`LMEB folder ${root} is missing ${file}.`, {
      suggestion: `An LMEB task needs ${CORPUS}, ${CANDIDATES}, and ${QUERIES} with ${QRELS} per subset.`,
    });
  }
}

export async function isFile(path: string): Promise<boolean> {
  try {
    return (await stat(path)).isFile();
  } catch {
    return false;
  }
}

export async function isDirectory(path: string): Promise<boolean> {
  try {
    return (await stat(path)).isDirectory();
  } catch {
    return false;
  }
}
