import { mkdir, readFile, readdir, rename, rm, stat, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { basename, dirname, isAbsolute, join, normalize, resolve, sep } from 'node:path';
import { z } from 'zod';
import {
  ArtifactCorruptError,
  ConfigError,
  DataMissingError,
  fileSha256,
  isProcessAlive,
  writeDirAtomic,
} from '@bfe/core';
import { MODEL_MANIFEST_FILE, modelManifestSchema, type ModelManifest } from './model-manifest.js';

// The model cache: where models live, how a fetched model is read back and checked, and how a
// new one is put in place atomically. Shared by model-fetch.ts (registry) and model-dir.ts
// (local imports).

// A model name becomes a directory name: keep it to one safe path segment.
const MODEL_NAME_PATTERN = /^[a-z0-9][a-z0-9._-]*$/;

/**
 * The model cache: `$BFE_MODEL_DIR`, else `$XDG_CACHE_HOME/bfe/models`, else
 * `~/.cache/bfe/models`. Each model is one sub-folder named after it.
 * @example modelCacheDir({ BFE_MODEL_DIR: '/data/models' }) // '/data/models'
 */
export function modelCacheDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env.BFE_MODEL_DIR !== undefined && env.BFE_MODEL_DIR !== '')
    return resolve(env.BFE_MODEL_DIR);
  const cacheHome =
    env.XDG_CACHE_HOME !== undefined && env.XDG_CACHE_HOME !== ''
      ? env.XDG_CACHE_HOME
      : join(homedir(), '.cache');
  return resolve(cacheHome, 'bfe', 'models');
}

/**
 * The directory that holds model `name` (fetched or not).
 * @throws ConfigError when `name` is not a plain lower-case name (`a-z0-9._-`)
 * @example resolveModelDir('all-minilm-l6-v2', { BFE_MODEL_DIR: '/m' }) // '/m/all-minilm-l6-v2'
 */
export function resolveModelDir(name: string, env: NodeJS.ProcessEnv = process.env): string {
  assertModelName(name);
  return join(modelCacheDir(env), name);
}

/** Throws ConfigError unless `name` is one safe, lower-case path segment. (Package-internal.) */
export function assertModelName(name: string): void {
  if (!MODEL_NAME_PATTERN.test(name)) {
    throw new ConfigError(
      `Invalid model name '${name}': use lower-case letters, digits, '.', '_' and '-'.`,
    );
  }
}

/** Options of {@link loadModelManifest}. */
export interface LoadModelManifestOptions {
  /**
   * Re-hash every file (SHA-256) instead of only comparing sizes. About 0.3 s for a 90 MB
   * graph: `bfe model fetch` always does it; a hot path may rely on sizes.
   */
  readonly verifyHashes?: boolean;
}

/**
 * Reads and checks `bfe-model.json` in a model directory: the manifest must pass
 * {@link modelManifestSchema}, list the ONNX and tokenizer files, and every listed file must be
 * present with its recorded size (and SHA-256 with `verifyHashes`).
 *
 * @throws DataMissingError when the directory, the manifest or a listed file is missing (the
 *   suggestion names `bfe model fetch`)
 * @throws ArtifactCorruptError when the manifest is invalid or a file has another size or hash
 * @example
 * const manifest = await loadModelManifest(resolveModelDir('all-minilm-l6-v2'));
 * manifest.dimension; // 384
 * join(dir, manifest.onnxFile); // the graph: last_hidden_state float32 [batch, seq, 384]
 */
export async function loadModelManifest(
  dir: string,
  options: LoadModelManifestOptions = {},
): Promise<ModelManifest> {
  const suggestion = `Run \`bfe model fetch ${basename(dir)}\` (or \`bfe model fetch <name> --model-dir <dir>\` for a local export).`;
  const manifestPath = join(dir, MODEL_MANIFEST_FILE);
  let text: string;
  try {
    text = await readFile(manifestPath, 'utf8');
  } catch (cause) {
    if (isNotFound(cause)) {
      throw new DataMissingError(`No model in ${dir}: ${MODEL_MANIFEST_FILE} is missing.`, {
        suggestion,
        cause,
      });
    }
    throw cause;
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (cause) {
    throw new ArtifactCorruptError(`${manifestPath} is not valid JSON.`, { suggestion, cause });
  }
  const parsed = modelManifestSchema.safeParse(raw);
  if (!parsed.success) {
    throw new ArtifactCorruptError(
      `${manifestPath} is not a valid model manifest:\n${z.prettifyError(parsed.error)}`,
      { suggestion },
    );
  }
  const manifest = parsed.data;
  const listed = new Map(manifest.files.map((f) => [f.path, f]));
  for (const f of manifest.files) {
    if (!isSafeRelativePath(f.path)) {
      throw new ArtifactCorruptError(`${manifestPath} lists a path outside the model: ${f.path}`);
    }
  }
  for (const role of ['onnxFile', 'tokenizerFile'] as const) {
    if (!listed.has(manifest[role])) {
      throw new ArtifactCorruptError(
        `${manifestPath}: ${role} '${manifest[role]}' is not among the listed files.`,
        { suggestion },
      );
    }
  }
  if (listed.get(manifest.onnxFile)?.sha256 !== manifest.modelSha256) {
    throw new ArtifactCorruptError(
      `${manifestPath}: modelSha256 is not the SHA-256 listed for ${manifest.onnxFile}.`,
      { suggestion },
    );
  }
  for (const f of manifest.files) {
    const path = join(dir, f.path);
    let size: number;
    try {
      size = (await stat(path)).size;
    } catch (cause) {
      if (isNotFound(cause)) {
        throw new DataMissingError(`Model file ${path} is missing.`, { suggestion, cause });
      }
      throw cause;
    }
    if (size !== f.bytes) {
      throw new ArtifactCorruptError(
        `Model file ${path} has ${size} bytes; the manifest says ${f.bytes} (truncated or replaced).`,
        { suggestion },
      );
    }
    if (options.verifyHashes === true) {
      const actual = await fileSha256(path);
      if (actual !== f.sha256) {
        throw new ArtifactCorruptError(
          `Model file ${path} has SHA-256 ${actual}; the manifest says ${f.sha256}.`,
          { suggestion },
        );
      }
    }
  }
  return manifest;
}

/** What a fetch reports while it works; library code never prints. */
export type ModelFetchEvent =
  | { readonly kind: 'step'; readonly message: string }
  | { readonly kind: 'warning'; readonly message: string }
  | {
      readonly kind: 'download';
      readonly file: string;
      readonly bytes: number;
      readonly total: number | undefined;
      readonly done: boolean;
    }
  /** One line printed by a subprocess (venv creation, pip, the export script). */
  | { readonly kind: 'output'; readonly line: string };

/** One source tried by a fetch, and what it said. */
export interface SourceAttempt {
  /** e.g. `huggingface sentence-transformers/all-MiniLM-L6-v2@c9745ed1` */
  readonly source: string;
  readonly ok: boolean;
  readonly message: string;
  readonly seconds: number;
}

/** What {@link fetchModel} and {@link importModelDir} did. */
export interface ModelFetchResult {
  readonly name: string;
  readonly dir: string;
  /** `cached`: a valid copy was there; `refetched`: a damaged or outdated copy was replaced. */
  readonly status: 'cached' | 'fetched' | 'refetched';
  readonly manifest: ModelManifest;
  readonly attempts: readonly SourceAttempt[];
  readonly seconds: number;
}

/** Options shared by {@link fetchModel} and {@link importModelDir}. */
export interface ModelCacheOptions {
  /** The model cache (default {@link modelCacheDir} of `env`). */
  readonly cacheDir?: string;
  readonly env?: NodeJS.ProcessEnv;
  /** Replace a valid cached copy anyway. */
  readonly force?: boolean;
  readonly onProgress?: (event: ModelFetchEvent) => void;
}

/** Every file under `dir` (the manifest excepted), sorted, with size and SHA-256. */
export async function hashFiles(dir: string): Promise<ModelManifest['files']> {
  const out: ModelManifest['files'] = [];
  const walk = async (rel: string): Promise<void> => {
    const entries = await readdir(join(dir, rel), { withFileTypes: true });
    for (const entry of entries) {
      const path = rel === '' ? entry.name : `${rel}/${entry.name}`;
      if (entry.isDirectory()) await walk(path);
      else if (entry.isFile() && path !== MODEL_MANIFEST_FILE) {
        const full = join(dir, path);
        out.push({ path, bytes: (await stat(full)).size, sha256: await fileSha256(full) });
      }
    }
  };
  await walk('');
  return out.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
}

/**
 * Builds a model in a temporary sibling of its final directory (`@bfe/core`'s
 * `writeDirAtomic`), writes the manifest last, checks it, and renames the directory into
 * place. `build` returning undefined keeps what is there. Temporary directories of processes
 * that died are removed on the next fetch; their names start with a dot, so they never look
 * like a model.
 */
export async function installAtomically(
  cacheRoot: string,
  name: string,
  build: (work: string) => Promise<ModelManifest | undefined>,
): Promise<ModelManifest | undefined> {
  await mkdir(cacheRoot, { recursive: true });
  await removeStaleWork(cacheRoot, name);
  const keep = Symbol('keep what is there');
  try {
    return await writeDirAtomic(join(cacheRoot, name), async (work) => {
      const manifest = await build(work);
      if (manifest === undefined) throw keep;
      const checked = modelManifestSchema.parse(manifest);
      await writeFile(join(work, MODEL_MANIFEST_FILE), `${JSON.stringify(checked, null, 2)}\n`);
      await loadModelManifest(work);
      return checked;
    });
  } catch (error) {
    if (error === keep) return undefined;
    throw error;
  }
}

/** Moves a directory out of the way (one rename), then deletes it. */
export async function removeAside(dir: string): Promise<void> {
  const trash = `${join(dirname(dir), `.${basename(dir)}.old-${process.pid}-${Date.now()}`)}`;
  await rename(dir, trash);
  await rm(trash, { recursive: true, force: true });
}

/**
 * Removes temporary and discarded siblings of model `name` left by processes that are gone.
 * (Package-internal.)
 */
export async function removeStaleWork(cacheRoot: string, name: string): Promise<void> {
  // writeDirAtomic's siblings: `.<name>.<pid>.<hex>.tmp` and, while replacing, `….tmp.old`.
  const pattern = new RegExp(
    `^\\.${name.replace(/[.]/g, '\\.')}\\.(\\d+)\\.[0-9a-f]+\\.tmp(\\.old)?$`,
  );
  let entries: string[];
  try {
    entries = await readdir(cacheRoot);
  } catch (error) {
    if (isNotFound(error)) return;
    throw error;
  }
  for (const entry of entries) {
    const m = pattern.exec(entry);
    if (m === null) continue;
    const pid = Number(m[1]);
    if (pid === process.pid || isProcessAlive(pid)) continue; // a concurrent call, ours or another's
    await rm(join(cacheRoot, entry), { recursive: true, force: true });
  }
}

/** Parses a JSON file; invalid JSON is an ArtifactCorruptError naming the file. (Package-internal.) */
export async function readJson(path: string): Promise<unknown> {
  const text = await readFile(path, 'utf8');
  try {
    return JSON.parse(text);
  } catch (cause) {
    throw new ArtifactCorruptError(`${path} is not valid JSON.`, { cause });
  }
}

/** Whether a manifest or option path stays inside its directory. (Package-internal.) */
export function isSafeRelativePath(path: string): boolean {
  if (path === '' || isAbsolute(path) || path.includes('\\')) return false;
  const norm = normalize(path);
  return norm !== '..' && !norm.startsWith(`..${sep}`) && !norm.startsWith('/');
}

/** (Package-internal.) */
export async function isDirectory(path: string): Promise<boolean> {
  try {
    return (await stat(path)).isDirectory();
  } catch {
    return false;
  }
}

/** Whether a file-system error is ENOENT. (Package-internal.) */
export function isNotFound(error: unknown): boolean {
  return (error as NodeJS.ErrnoException | undefined)?.code === 'ENOENT';
}
