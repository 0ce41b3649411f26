import { readFile, stat } from 'node:fs/promises';
import { extname, join, resolve } from 'node:path';
import { BfeError, ConfigError, decodeUtf8Strict } from '@bfe/core';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { adapterSectionSchema } from './sections/adapter.js';
import { checkAdapter } from './sections/adapter-from.js';
import { seedSchema } from './sections/common.js';
import { checkCrossFit } from './sections/crossfit.js';
import { datasetSectionSchema } from './sections/dataset.js';
import { evalSectionSchema } from './sections/eval.js';
import { modelSectionSchema } from './sections/model.js';
import { scorerSectionSchema } from './sections/scorer.js';
import { splitSectionSchema } from './sections/split.js';
import { checkChunkedPooled, systemsConfigSchema } from './sections/systems.js';
import { indexSectionSchema } from './sections/token-index.js';

/**
 * An experiment file (`bfe run <file>`, YAML or JSON): dataset → split → encode → score →
 * adapt → evaluate → report. Every key is checked (unknown keys are errors, named with their
 * path); every stage's part of it goes into that stage's cache key. A section left out is
 * parsed from `{}` (`prefault`), so each default is written once, on its field.
 *
 * @example
 * experimentSchema.parse({ name: 'locomo-minilm', dataset: { name: 'locomo' } });
 * // { name: 'locomo-minilm', dataset: { name: 'locomo', options: {} }, seeds: [42],
 * //   split: { policy: 'connected-bank', seed: 42, ratios: [0.6, 0.2, 0.2], evaluate: 'test' },
 * //   model: { name: 'all-minilm-l6-v2', …}, scorer: { k: 64, alpha: 0.5, … }, adapter: { enabled: false, … }, … }
 */
export const experimentSchema = z.strictObject({
  /** The experiment's name: its folder under `runs/`. */
  name: z.string().regex(/^[a-z0-9][a-z0-9._-]*$/, 'lowercase letters, digits, . _ -'),
  description: z.string().default(''),
  dataset: datasetSectionSchema,
  /**
   * The training seeds: the adapter's initialisation and batch order (METHOD.md §6 and §8:
   * 42, 43, 44). One adapt and one score stage per seed; the run's results.json is their mean
   * with the standard deviation. The split has its own seed (`split.seed`).
   */
  seeds: z
    .array(seedSchema)
    .min(1)
    .refine((s) => new Set(s).size === s.length, 'seeds must not repeat')
    .default([42]),
  split: splitSectionSchema,
  model: modelSectionSchema,
  scorer: scorerSectionSchema,
  adapter: adapterSectionSchema,
  /** The token index the scorer proposes from (token-index.ts); left out: exact float32. */
  index: indexSectionSchema,
  /**
   * Systems beyond METHOD.md §6 (sections/systems.ts: METHOD.md §8's lexical branch, the paper's
   * chunked-pooled control). Left out: none, and every key and file of the run stays as it was.
   */
  systems: systemsConfigSchema.optional(),
  eval: evalSectionSchema,
});

/** An experiment as written. */
export type ExperimentInput = z.input<typeof experimentSchema>;
/** An experiment with defaults filled in. */
export type Experiment = z.output<typeof experimentSchema>;

/**
 * Validates an experiment object, refusing what the method forbids: an adapter without a
 * split to train and select on. The old `split.seeds` key is refused with where its seeds went.
 * @throws {ConfigError} naming each bad key with its path.
 */
export function parseExperiment(raw: unknown, source = 'experiment'): Experiment {
  const oldSeeds = fieldOf(fieldOf(raw, 'split'), 'seeds');
  if (oldSeeds !== undefined) {
    throw new ConfigError(
      `${source}: split.seeds is no longer a key: the training seeds moved to the top-level ` +
        '`seeds` key, and the split has its own `split.seed` (default 42: one split shared by ' +
        'every training seed)',
      {
        suggestion:
          `Write \`seeds: ${JSON.stringify(oldSeeds)}\` at the top level; add \`split.seed: per-seed\` ` +
          'only to draw a new split per seed, as split.seeds did.',
      },
    );
  }
  const parsed = experimentSchema.safeParse(raw);
  if (!parsed.success) {
    throw new ConfigError(`${source}: invalid experiment:\n${z.prettifyError(parsed.error)}`, {
      suggestion: 'See configs/experiments/ for complete examples.',
    });
  }
  const e = parsed.data;
  checkCrossFit(raw, e, source);
  checkAdapter(raw, e, source);
  checkChunkedPooled(e, source);
  if (e.systems?.hybrid?.grid !== undefined && e.split.policy === 'none') {
    throw new ConfigError(
      `${source}: systems.hybrid.grid selects weights on validation queries, but split.policy ` +
        "is 'none': there are none, and nothing may be selected on the evaluated queries",
      { suggestion: 'Leave systems.hybrid.grid out for the predeclared weights only.' },
    );
  }
  if (e.split.policy === 'none' && e.seeds.length > 1) {
    throw new ConfigError(
      `${source}: seeds lists ${e.seeds.length} training seeds, but split.policy is 'none': ` +
        'nothing is split or trained, so every seed would be the same run',
      { suggestion: 'Leave seeds out (or list one) for a training-free run on every query.' },
    );
  }
  return e;
}

/**
 * Whether the evaluated part is one the adapter is trained (`train`) or selected
 * (`validation`) on: every output of such a run says `selectionData: true`.
 */
export function isSelectionData(e: Experiment): boolean {
  return e.split.policy !== 'none' && e.split.evaluate !== 'test';
}

/** `value[key]` of a plain object; undefined for anything else. */
function fieldOf(value: unknown, key: string): unknown {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)[key]
    : undefined;
}

/**
 * Reads an experiment file: `.yaml`/`.yml` or `.json`.
 * @throws {ConfigError} for an unreadable file, bad syntax or an invalid experiment.
 */
export async function readExperiment(path: string): Promise<Experiment> {
  let text: string;
  try {
    text = decodeUtf8Strict(await readFile(path), path);
  } catch (cause) {
    if (cause instanceof BfeError) throw cause;
    throw new ConfigError(`cannot read experiment file ${path}: ${(cause as Error).message}`, {
      cause,
    });
  }
  let raw: unknown;
  try {
    raw = extname(path) === '.json' ? JSON.parse(text) : parseYaml(text);
  } catch (cause) {
    throw new ConfigError(
      `${path}: not valid ${extname(path) === '.json' ? 'JSON' : 'YAML'}: ${(cause as Error).message}`,
      { cause },
    );
  }
  const experiment = parseExperiment(raw, path);
  await checkExperimentRefs(experiment, path);
  return experiment;
}

/**
 * Checks what the schema alone cannot, before any stage runs: the dataset is registered (or an
 * `lmeb:` folder that exists, relative to the file), its options pass the dataset's own zod
 * schema, and the model is registered, or in the model cache, or given as `model.dir`. Every
 * message names the file and the field.
 * @throws {ConfigError} naming `path` and the field (`dataset.name`, `dataset.options.<key>`,
 *   `model.name`, `model.dir`).
 */
export async function checkExperimentRefs(e: Experiment, path: string): Promise<void> {
  const [{ DATASET_NAMES, datasetOptionsSchema }, { MODEL_NAMES, modelCacheDir }] =
    await Promise.all([import('@bfe/datasets'), import('@bfe/models')]);
  const name = e.dataset.name;
  if (name.startsWith('lmeb:')) {
    const dir = resolve(path, '..', name.slice('lmeb:'.length));
    if (!(await isDirectory(dir))) {
      throw new ConfigError(`${path}: dataset.name: LMEB folder ${dir} does not exist`, {
        suggestion: 'lmeb:<folder> is taken relative to the experiment file.',
      });
    }
  } else if (!DATASET_NAMES.includes(name)) {
    throw new ConfigError(`${path}: dataset.name: unknown dataset '${name}'`, {
      suggestion: `Known datasets: ${DATASET_NAMES.join(', ')}, or lmeb:<folder>.`,
    });
  }
  const options = datasetOptionsSchema(name).safeParse(e.dataset.options);
  if (!options.success) {
    const issues = options.error.issues.map((i) => ({
      ...i,
      path: ['dataset', 'options', ...i.path],
    }));
    throw new ConfigError(
      `${path}: invalid dataset.options for '${name}':\n${z.prettifyError({ issues })}`,
      { suggestion: '`bfe data inspect <name> --set key=value` tries options without a run.' },
    );
  }
  if (e.model.dir !== undefined) {
    const dir = resolve(e.model.dir); // as the encode stage reads it: from the working directory
    if (!(await isDirectory(dir))) {
      throw new ConfigError(`${path}: model.dir: ${dir} is not a directory`);
    }
  } else if (
    !MODEL_NAMES.includes(e.model.name) &&
    !(await isDirectory(join(modelCacheDir(), e.model.name)))
  ) {
    throw new ConfigError(`${path}: model.name: unknown model '${e.model.name}'`, {
      suggestion:
        `Registered models: ${MODEL_NAMES.join(', ')}; or import one first with ` +
        '`bfe model fetch <name> --model-dir <dir>`.',
    });
  }
}

async function isDirectory(path: string): Promise<boolean> {
  try {
    return (await stat(path)).isDirectory();
  } catch {
    return false;
  }
}
