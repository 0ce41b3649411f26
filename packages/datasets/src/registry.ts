import type { Dirent } from 'node:fs';
import { readFile, readdir } from 'node:fs/promises';
import { basename, join, relative, resolve } from 'node:path';
import { z } from 'zod';
import {
  ConfigError,
  DataError,
  DataMissingError,
  EmptyDatasetError,
  UnknownDatasetError,
  decodeUtf8Strict,
  fileSha256,
  type LoadedDataset,
} from '@bfe/core';
import { parseCovidQa, covidQaOptionsSchema } from './covidqa.js';
import {
  OFFICIAL_FILES,
  fetchOfficialFile,
  resolveOfficialFile,
  type DataLocation,
  type FetchResult,
  type OfficialFile,
} from './files.js';
import { loadLmebFolder, lmebOptionsSchema } from './lmeb.js';
import { parseLocomo, locomoOptionsSchema } from './locomo.js';
import { longMemEvalOptionsSchema } from './longmemeval-options.js';
import { parseLongMemEval } from './longmemeval.js';

/** A registered benchmark: its official file, its options schema and its parser. */
interface DatasetSpec {
  readonly description: string;
  readonly file: OfficialFile;
  readonly optionsSchema: z.ZodType<Record<string, unknown>>;
  /** Options this name fixes (e.g. `locomo-session` is LoCoMo at session granularity). */
  readonly preset: Record<string, unknown>;
  /** The language of its texts, as declared (BM25 stems and drops stop words by it). */
  readonly language: DatasetLanguage;
  readonly parse: (
    raw: unknown,
    options: Record<string, unknown>,
    fetched: FetchResult,
  ) => LoadedDataset;
}

const SPECS: Record<string, DatasetSpec> = {
  locomo: {
    description:
      'LoCoMo, turn level: a memory is one turn, candidates are the query’s own conversation',
    file: OFFICIAL_FILES.locomo,
    optionsSchema: locomoOptionsSchema,
    preset: {},
    language: 'english',
    parse: (raw, options, f) => parseLocomo(raw, locomoOptionsSchema.parse(options), f.source),
  },
  'locomo-session': {
    description: 'LoCoMo, session level: a memory is one session',
    file: OFFICIAL_FILES.locomo,
    optionsSchema: locomoOptionsSchema,
    preset: { granularity: 'session' },
    language: 'english',
    parse: (raw, options, f) => parseLocomo(raw, locomoOptionsSchema.parse(options), f.source),
  },
  'longmemeval-s': {
    description:
      'LongMemEval S (cleaned, 498 questions): sessions as memories, own haystack as candidates',
    file: OFFICIAL_FILES.longmemevalS,
    optionsSchema: longMemEvalOptionsSchema,
    preset: {},
    language: 'english',
    parse: (raw, options, f) =>
      parseLongMemEval(raw, longMemEvalOptionsSchema.parse(options), f.source, 'longmemeval-s'),
  },
  'longmemeval-oracle': {
    description: 'LongMemEval oracle: only the evidence sessions in each haystack',
    file: OFFICIAL_FILES.longmemevalOracle,
    optionsSchema: longMemEvalOptionsSchema,
    preset: {},
    language: 'english',
    parse: (raw, options, f) =>
      parseLongMemEval(
        raw,
        longMemEvalOptionsSchema.parse(options),
        f.source,
        'longmemeval-oracle',
      ),
  },
  covidqa: {
    description: 'COVID-QA: a memory is one paragraph, candidates are the question’s article',
    file: OFFICIAL_FILES.covidqa,
    optionsSchema: covidQaOptionsSchema,
    preset: {},
    language: 'english',
    parse: (raw, options, f) => parseCovidQa(raw, covidQaOptionsSchema.parse(options), f.source),
  },
};

/**
 * A dataset's declared language: `english`, or `undeclared` (an `lmeb:` folder declares none).
 */
export type DatasetLanguage = 'english' | 'undeclared';

/** Registered dataset names (plus `lmeb:<folder>`). */
export const DATASET_NAMES: readonly string[] = Object.keys(SPECS);

const LMEB_PREFIX = 'lmeb:';

/**
 * The declared language of a dataset's texts: what its registration states (LoCoMo,
 * LongMemEval and COVID-QA are English), `undeclared` for an `lmeb:<folder>`.
 *
 * @throws UnknownDatasetError for a name neither registered nor `lmeb:`.
 * @example
 * datasetLanguage('locomo'); // 'english'
 * datasetLanguage('lmeb:./my-task'); // 'undeclared'
 */
export function datasetLanguage(name: string): DatasetLanguage {
  if (name.startsWith(LMEB_PREFIX)) return 'undeclared';
  return specOf(name).language;
}

/** A one-line description per registered dataset. */
export function describeDatasets(): Array<{ name: string; description: string; file: string }> {
  return Object.entries(SPECS).map(([name, s]) => ({
    name,
    description: s.description,
    file: s.file.name,
  }));
}

/**
 * Fetches the official file(s) a dataset needs into the data directory (mirror first, then
 * the pinned public address), verifying SHA-256 either way. An `lmeb:` folder is local already.
 */
export async function fetchDataset(name: string, location: DataLocation): Promise<FetchResult[]> {
  if (name.startsWith(LMEB_PREFIX)) return [];
  return [await fetchOfficialFile(specOf(name).file, location)];
}

/**
 * Loads a dataset by name into the canonical form, with its labels apart and its load report.
 * `options` override the dataset's defaults and are validated by its zod schema.
 *
 * @example
 * const { benchmark, labels, report } = await loadDataset('locomo', { location });
 * benchmark.memories.length; // 5882 (turns)
 */
export async function loadDataset(
  name: string,
  { location, options = {} }: { location: DataLocation; options?: Record<string, unknown> },
): Promise<LoadedDataset> {
  if (name.startsWith(LMEB_PREFIX)) {
    const dir = resolve(name.slice(LMEB_PREFIX.length));
    const loaded = await loadLmebFolder(dir, parseOptions(lmebOptionsSchema, options, name));
    return refuseEmpty(
      loaded,
      loaded.benchmark.sources.map((s) => join(dir, s.name)),
    );
  }
  const spec = specOf(name);
  const merged = parseOptions(spec.optionsSchema, { ...options, ...spec.preset }, name);
  const fetched = await resolveOfficialFile(spec.file, name, location);
  const raw = await readJsonFile(fetched.path);
  return refuseEmpty(spec.parse(raw, merged, fetched), [fetched.path]);
}

/**
 * A dataset with no memory or no query left after loading cannot be split or scored: it is
 * its own error, naming the files read and what the load report dropped (not a later
 * SPLIT_IMPOSSIBLE).
 */
function refuseEmpty(loaded: LoadedDataset, files: readonly string[]): LoadedDataset {
  const { memories, queries } = loaded.benchmark;
  if (memories.length > 0 && queries.length > 0) return loaded;
  const json = loaded.report.toJSON();
  const dropped = Object.entries(json.dropped).map(([reason, n]) => `${n} ${reason}`);
  const what =
    memories.length === 0 && queries.length === 0
      ? 'no memories and no queries'
      : memories.length === 0
        ? 'no memories'
        : 'no queries';
  throw new EmptyDatasetError(
    `dataset ${loaded.benchmark.name} has ${what} after loading ` +
      `(${memories.length} memories, ${queries.length} queries; dropped: ` +
      `${dropped.length === 0 ? 'none' : dropped.join(', ')}). Files read: ${files.join(', ')}`,
    {
      files,
      suggestion:
        'Check that the files hold records (and, for queries, qrels with score > 0 to corpus ' +
        'documents); `bfe data inspect <name>` prints the full load report.',
    },
  );
}

/** The zod options schema of a dataset, for help texts and config validation. */
/**
 * The files a dataset is loaded from, with their SHA-256, without parsing them: the identity
 * of the data for content-addressed caches. Official files are resolved (and verified) as
 * {@link loadDataset} would; an `lmeb:<folder>` lists every regular file of the folder, hashed.
 *
 * @throws {DataMissingError} naming `bfe data fetch` when an official file is absent.
 * @example
 * await datasetSources('locomo', dataLocationFromEnv());
 * // [{ name: 'locomo10.json', sha256: '79fa87e9…' }]
 */
export async function datasetSources(
  name: string,
  location: DataLocation,
): Promise<Array<{ name: string; sha256: string }>> {
  if (name.startsWith(LMEB_PREFIX)) {
    const dir = resolve(name.slice(LMEB_PREFIX.length));
    let entries: Dirent[];
    try {
      entries = await readdir(dir, { withFileTypes: true, recursive: true });
    } catch (cause) {
      throw new DataMissingError(`LMEB folder ${dir} cannot be read`, { cause });
    }
    const files = entries
      .filter((e) => e.isFile())
      .map((e) => relative(dir, join(e.parentPath, e.name)))
      .sort();
    return Promise.all(
      files.map(async (f) => ({ name: f, sha256: await fileSha256(join(dir, f)) })),
    );
  }
  const fetched = await resolveOfficialFile(specOf(name).file, name, location);
  return [{ name: fetched.source.name, sha256: fetched.source.sha256 }];
}

export function datasetOptionsSchema(name: string): z.ZodType<Record<string, unknown>> {
  return name.startsWith(LMEB_PREFIX) ? lmebOptionsSchema : specOf(name).optionsSchema;
}

function specOf(name: string): DatasetSpec {
  const spec = SPECS[name];
  if (spec === undefined) throw new UnknownDatasetError(name, DATASET_NAMES);
  return spec;
}

function parseOptions<T>(schema: z.ZodType<T>, options: Record<string, unknown>, name: string): T {
  const result = schema.safeParse(options);
  if (!result.success) {
    throw new ConfigError(
      `Invalid options for dataset '${name}':\n${z.prettifyError(result.error)}`,
    );
  }
  return result.data;
}

/** Reads and parses a JSON file; a syntax error names the file. */
export async function readJsonFile(path: string): Promise<unknown> {
  const text = decodeUtf8Strict(await readFile(path), path);
  try {
    return JSON.parse(text) as unknown;
  } catch (cause) {
    throw new DataError(`${basename(path)}: malformed JSON (${(cause as Error).message})`, {
      file: path,
      cause,
    });
  }
}
