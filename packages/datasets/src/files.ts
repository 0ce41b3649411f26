import { readFile, rm, stat } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { xz } from '@napi-rs/lzma';
import {
  DataMissingError,
  FetchError,
  HashMismatchError,
  bytesSha256,
  fileSha256,
  writeFileAtomic,
  type SourceFile,
} from '@bfe/core';

/**
 * One official benchmark file: where it comes from, and the SHA-256 it must have. Files that
 * ship xz-compressed are unpacked once into the data directory and verified again unpacked.
 */
export interface OfficialFile {
  /** The name in a mirror directory (e.g. `../shared/data`). */
  readonly name: string;
  /** SHA-256 of the file as fetched or mirrored. */
  readonly sha256: string;
  /** For `.xz` files: the unpacked name and its SHA-256. */
  readonly unpacked?: { readonly name: string; readonly sha256: string };
  /** Public download addresses at a pinned revision, tried in order. */
  readonly urls: readonly string[];
  readonly licence: string;
  /** Why there is no public address, where that is so. */
  readonly note?: string;
}

/** The official files bfe knows, keyed by file name. */
export const OFFICIAL_FILES = {
  locomo: {
    name: 'locomo10.json',
    sha256: '79fa87e90f04081343b8c8debecb80a9a6842b76a7aa537dc9fdf651ea698ff4',
    urls: [
      'https://raw.githubusercontent.com/snap-research/LoCoMo/3eb6f2c585f5e1699204e3c3bdf7adc5c28cb376/data/locomo10.json',
    ],
    licence: 'CC BY-NC 4.0',
  },
  covidqa: {
    name: 'covidqa_200423.json',
    sha256: 'ab310b4e39f726e087c8fa3d1787c73771dacddc584977204ebe3cc889ee1264',
    urls: [
      'https://raw.githubusercontent.com/deepset-ai/COVID-QA/fb2eb5e249618457e5359806601086c635c8eb8f/data/question-answering/200423_covidQA.json',
    ],
    licence: 'Apache-2.0',
  },
  longmemevalOracle: {
    name: 'longmemeval_oracle.json.xz',
    sha256: 'a45684d898795c058ce80d2f0169509a00208ce05b60b5be79304ef271b8e89a',
    unpacked: {
      name: 'longmemeval_oracle.json',
      sha256: 'db9dd414bc1ce15b55c2fa713bec8185ce4854d0f2b5fbc735c180f3e3a54f52',
    },
    urls: [],
    licence: 'MIT (LongMemEval)',
    note: 'reassembled from per-question files and sorted by question_id; no public address serves these exact bytes, so it comes from a mirror (BFE_DATA_MIRROR)',
  },
  longmemevalS: {
    name: 'longmemeval_s_cleaned.partial498.json.xz',
    sha256: '949e5a3102c431713f3a20650d1ecf1950ff77ab19fd57ae9cf6e1d863728c34',
    unpacked: {
      name: 'longmemeval_s_cleaned.partial498.json',
      sha256: 'f670478b0c3bc88a46f0c42a46859b644a429e90cae484dfcec5477f541c7f5b',
    },
    urls: [],
    licence: 'MIT (LongMemEval)',
    note: '498 of 500 questions reassembled and sorted by question_id; no public address serves these exact bytes, so it comes from a mirror (BFE_DATA_MIRROR)',
  },
} as const satisfies Record<string, OfficialFile>;

export type OfficialFileKey = keyof typeof OFFICIAL_FILES;

/** Where data lives: the verified local copies, and an optional read-only mirror. */
export interface DataLocation {
  /** Directory of verified local copies (default `$BFE_DATA_DIR` or `~/.cache/bfe/data`). */
  readonly dataDir: string;
  /** A directory holding the official files by name (default `$BFE_DATA_MIRROR`). */
  readonly mirror: string | undefined;
}

/** The data location from the environment. */
export function dataLocationFromEnv(env: NodeJS.ProcessEnv = process.env): DataLocation {
  const cacheHome = env.XDG_CACHE_HOME ?? join(homedir(), '.cache');
  return {
    dataDir: resolve(env.BFE_DATA_DIR ?? join(cacheHome, 'bfe', 'data')),
    mirror:
      env.BFE_DATA_MIRROR === undefined || env.BFE_DATA_MIRROR === ''
        ? undefined
        : resolve(env.BFE_DATA_MIRROR),
  };
}

/** What {@link fetchOfficialFile} did, for the CLI to print. */
export interface FetchResult {
  /** The verified file to read (unpacked for `.xz`). */
  readonly path: string;
  readonly source: SourceFile;
  readonly from: 'local' | 'mirror' | 'download';
  readonly origin: string;
}

/**
 * Makes a verified local copy of an official file: reuse the local copy when its hash still
 * matches, else copy it from the mirror, else download it from its pinned public address.
 * Every path verifies the pinned SHA-256 (and the unpacked one for `.xz`) before the file is
 * moved into place, so a partial or wrong file is never visible under its final name.
 */
export async function fetchOfficialFile(
  file: OfficialFile,
  location: DataLocation,
  fetchImpl: typeof fetch = fetch,
): Promise<FetchResult> {
  const finalName = file.unpacked?.name ?? file.name;
  const finalSha = file.unpacked?.sha256 ?? file.sha256;
  const target = join(location.dataDir, finalName);
  const source: SourceFile = { name: finalName, sha256: finalSha };

  if (await exists(target)) {
    const actual = await fileSha256(target);
    if (actual === finalSha) return { path: target, source, from: 'local', origin: target };
    // A stale or damaged local copy is replaced, never read.
    await rm(target, { force: true });
  }

  let bytes: Uint8Array | undefined;
  let from: FetchResult['from'] = 'mirror';
  let origin = '';
  const failures: string[] = [];
  if (location.mirror !== undefined) {
    origin = join(location.mirror, file.name);
    if (await exists(origin)) bytes = await readFile(origin);
    else failures.push(`not in mirror ${location.mirror}`);
  }
  if (bytes === undefined) {
    from = 'download';
    for (const url of file.urls) {
      try {
        const response = await fetchImpl(url);
        if (!response.ok) throw new Error(`HTTP ${response.status}`);
        bytes = new Uint8Array(await response.arrayBuffer());
        origin = url;
        break;
      } catch (cause) {
        failures.push(`${url}: ${cause instanceof Error ? cause.message : String(cause)}`);
      }
    }
  }
  if (bytes === undefined) {
    throw new FetchError(
      `Could not obtain ${file.name}: ${failures.join('; ') || 'no source configured'}`,
      {
        suggestion:
          file.urls.length === 0
            ? `${file.note ?? 'No public address is pinned.'} Set BFE_DATA_MIRROR to a directory holding ${file.name}.`
            : `Set BFE_DATA_MIRROR to a directory holding ${file.name}, or check the network.`,
      },
    );
  }

  const actual = bytesSha256(bytes);
  if (actual !== file.sha256) throw new HashMismatchError(origin || file.name, file.sha256, actual);
  if (file.unpacked !== undefined) {
    bytes = await xz.decompress(bytes);
    const unpackedSha = bytesSha256(bytes);
    if (unpackedSha !== file.unpacked.sha256) {
      throw new HashMismatchError(`${origin} (unpacked)`, file.unpacked.sha256, unpackedSha);
    }
  }
  await writeFileAtomic(target, bytes);
  return { path: target, source, from, origin };
}

/**
 * The verified local path of an official file, copying it from the mirror when one is
 * configured. Without a local copy or a mirror this never downloads: it fails and names the
 * command that does.
 */
export async function resolveOfficialFile(
  file: OfficialFile,
  datasetName: string,
  location: DataLocation,
): Promise<FetchResult> {
  const finalName = file.unpacked?.name ?? file.name;
  if (location.mirror === undefined && !(await exists(join(location.dataDir, finalName)))) {
    throw new DataMissingError(`${finalName} is not in ${location.dataDir}.`, {
      suggestion: `Run \`bfe data fetch ${datasetName}\` (or set BFE_DATA_MIRROR to a directory holding ${file.name}).`,
    });
  }
  return fetchOfficialFile(file, location, () => {
    throw new Error('downloads happen only in `bfe data fetch`');
  });
}

async function exists(path: string): Promise<boolean> {
  try {
    return (await stat(path)).isFile();
  } catch {
    return false;
  }
}
