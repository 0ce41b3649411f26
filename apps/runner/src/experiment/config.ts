import { readFile, stat } from 'node:fs/promises';
import { extname, join, resolve } from 'node:path';
import { BfeError, ConfigError, decodeUtf8Strict } from '@bfe/core';
import { TRAIN_KERNELS } from '@bfe/adapter';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { checkCrossFit } from './crossfit-config.js';
import { bm25ConfigSchema } from './bm25-config.js';
import { checkChunkedPooled, systemsConfigSchema } from './chunks-config.js';
import { adapterFromSchema, checkAdapter } from './transfer-config.js';

const seedSchema = z.int().min(0).max(0xffff_ffff);
const ksSchema = z
  .array(z.int().positive())
  .min(1)
  .refine((ks) => ks.includes(10), 'must include the headline k = 10')
  .transform((ks) => [...new Set(ks)].sort((a, b) => a - b));
const alphaSchema = z.number().min(0).max(1);

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
  dataset: z.strictObject({
    /** A registered dataset (`bfe data list`) or `lmeb:<folder>` (relative to the file). */
    name: z.string().min(1),
    /** The loader's options, as `bfe data inspect --set key=value` takes them. */
    options: z.record(z.string(), z.unknown()).default({}),
  }),
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
  split: z
    .strictObject({
      /**
       * `connected-bank` (strict), `query-disjoint-shared-bank` (explicit opt-in, diagnostic
       * only) or `none` (every query evaluated; nothing trained or selected).
       */
      policy: z
        .enum(['connected-bank', 'query-disjoint-shared-bank', 'none'])
        .default('connected-bank'),
      /**
       * The split's own seed: one split shared by every training seed (the reproduction notes'
       * protocol, METHOD.md §8), or `per-seed`: a new split per training seed, drawn with that
       * seed (the explicit option).
       */
      seed: z.union([seedSchema, z.literal('per-seed')]).default(42),
      /**
       * Train, validation, test: fractions (sum 1), percentages (sum 100) or integer counts
       * (sum: the number of units, known only once the dataset is loaded).
       */
      ratios: z
        .tuple([z.number().min(0), z.number().min(0), z.number().min(0)])
        .default([0.6, 0.2, 0.2])
        .superRefine(checkRatios),
      /**
       * The part the result tables report. `train` or `validation` marks every output
       * `selectionData: true`: the adapter is trained and selected on those parts.
       */
      evaluate: z.enum(['train', 'validation', 'test']).default('test'),
      /** Cross-fitting (METHOD.md §8): K ≥ 3 folds of units, each tested once (crossfit-config.ts). */
      folds: z.int().min(3).optional(),
    })
    .prefault({}),
  model: z
    .strictObject({
      name: z.string().min(1).default('all-minilm-l6-v2'),
      /** A model directory holding bfe-model.json (overrides `name`'s cache entry). */
      dir: z.string().min(1).optional(),
      /** Truncation in tokens (specials included), up to the model's position limit. */
      maxLength: z.int().min(2).optional(),
      /**
       * Windowed memories (METHOD.md §8): a memory longer than `size` tokens (specials included,
       * up to the model's position limit) is encoded as overlapping windows `stride` content
       * tokens apart, each content token kept once; queries stay truncated at `maxLength`.
       * Left out: memories are truncated at `maxLength`, and every key and file stays as it was.
       */
      window: z
        .strictObject({ size: z.int().min(3), stride: z.int().positive() })
        .refine((w) => w.stride < w.size, 'window.stride must be below window.size')
        .optional(),
      dtype: z.enum(['float32', 'float16']).default('float32'),
      executionProvider: z.enum(['cpu', 'webgpu']).default('cpu'),
      threads: z.int().positive().optional(),
      /**
       * Texts per encoder chunk (default 2048, the encoder's): the unit a sharded encode
       * (`bfe run --shard i/n`) slices the memories by. In the encode key only when set.
       */
      chunkSize: z.int().positive().optional(),
    })
    .prefault({}),
  scorer: z
    .strictObject({
      k: z.int().positive().default(64),
      /** The training-free fusion weight (METHOD.md §3 default 0.5). */
      alpha: alphaSchema.default(0.5),
      /** ks of the sensitivity sweep (empty: none). */
      kSweep: z.array(z.int().positive()).default([16, 32, 64, 128]),
      /** The kernel: onnxruntime (default) or the plain JavaScript reference (CPU only). */
      backend: z.enum(['onnxruntime', 'js']).default('onnxruntime'),
      executionProvider: z.enum(['cpu', 'webgpu']).default('cpu'),
      threads: z.int().positive().optional(),
      bm25: bm25ConfigSchema.optional(),
    })
    .prefault({}),
  adapter: z
    .strictObject({
      enabled: z.boolean().default(false),
      rank: z.int().positive().default(32),
      /**
       * Training epochs, at least 1 (epoch 0, the identity adapter, is always one of the
       * selectable snapshots). A run without training is `enabled: false`.
       */
      epochs: z
        .int()
        .min(1, {
          message:
            'adapter.epochs must be at least 1: epoch 0 (the identity adapter) is always evaluated beside the trained epochs; for no training set adapter.enabled: false',
        })
        .default(2),
      batchSize: z.int().positive().default(16),
      lr: z.number().positive().default(1e-4),
      weightDecay: z.number().min(0).default(1e-4),
      clip: z.number().positive().default(1),
      temperature: z.number().positive().default(0.07),
      /** α values tried on validation, with every epoch 0..epochs (METHOD.md §4). */
      alphaGrid: z.array(alphaSchema).min(1).default([0.25, 0.5, 0.75]),
      /**
       * Worker threads of the training (each batch split across them). Part of the cache key:
       * float64 sums in another order differ in the last bits, so the count is pinned, not
       * taken from the machine.
       */
      workers: z.int().min(1).max(16).default(2),
      /**
       * What runs MaxSim's heavy algebra in training: `onnxruntime` (a float32 MatMul on
       * onnxruntime's CPU provider, the maxima recomputed exactly in WebAssembly SIMD with
       * MaxSim's backward fused into that pass: the losses bit for bit, the gradients within
       * float64 rounding of the reference's), `onnxruntime-js` (the same MatMul, the float64
       * parts in JavaScript, unfused: the `js` adapter bit for bit) or `js` (the reference
       * loops). Part of the cache key.
       */
      kernel: z.enum(TRAIN_KERNELS).default('onnxruntime'),
      from: adapterFromSchema.optional(), // another experiment's adapter (transfer-config.ts)
    })
    .prefault({}),
  /**
   * The token index the scorer proposes from (METHOD.md §8, "Compressed and approximate token
   * search"): `exact` or `hnsw` (usearch) over a codec's stored codes; proposals are rescored in
   * float64 from the decoded codes. Left out: today's exact float32 search, and every key and
   * file of the run stays as it was.
   */
  index: z
    .strictObject({
      backend: z.enum(['exact', 'hnsw']).default('exact'),
      codec: z.enum(['fp32', 'fp16', 'sq8', 'sq4', 'rp128+sq4']).default('fp32'),
      /** HNSW connectivity (usearch `connectivity`). */
      M: z.int().positive().default(16),
      efConstruction: z.int().positive().default(128),
      efSearch: z.int().positive().default(128),
      /**
       * The HNSW graph's vector kind: `f32`, `f16` or `i8` (usearch's int8 cast). The graph only
       * proposes; every proposal is rescored in float64 from the stored codes. Left out: the
       * codec's own kind (fp32 → f32, fp16 → f16, the others → i8), so a section without it
       * keeps its meaning and its cache key.
       */
      graph: z.enum(['f32', 'f16', 'i8']).optional(),
      /**
       * Proposals per query token and graph: `ceil(overFetch · k) + 16`, all rescored exactly.
       * Left out: 1 (`k + 16`). A cheaper graph kind buys back what its coarser ranking misses.
       */
      overFetch: z.number().min(1).max(64).optional(),
      /**
       * Proposals beyond `ceil(overFetch · k)` per query token and graph (an integer ≥ 1).
       * Left out: 16. Smaller: usearch searches narrower (its width is at least the count asked
       * for), a cheaper, lower-recall operating point — but a tie at the last proposal (exact
       * duplicate tokens, coarse codes) widens that token's search to every candidate, which a
       * small margin makes common on real banks (BENCHMARKS.md, issue 13).
       */
      margin: z.int().min(1).max(1024).optional(),
      /**
       * Threads each HNSW graph is built with. Left out: 1, the reproducible build (the same
       * inputs, the same index bytes); more is faster, not reproducible, and keyed and reported
       * `deterministic: false`.
       */
      buildThreads: z.int().min(1).max(1024).optional(),
      /** The `rp128+sq4` projection seed (METHOD.md §6, 42). */
      seed: seedSchema.default(42),
    })
    .optional(),
  /**
   * Systems beyond METHOD.md §6 (chunks-config.ts: METHOD.md §8's lexical branch, the paper's
   * chunked-pooled control). Left out: none, and every key and file of the run stays as it was.
   */
  systems: systemsConfigSchema.optional(),
  eval: z
    .strictObject({
      /**
       * Cut-offs of Recall@k and NDCG@k: `@bfe/eval`'s DEFAULT_KS, the memory budgets
       * K ∈ {4, 8, 10, 16} of the paper's budget analysis included.
       */
      ks: ksSchema.default([1, 4, 5, 8, 10, 16, 25, 50]),
      resamples: z.int().positive().default(10_000),
      seed: seedSchema.default(42),
    })
    .prefault({}),
});

// The same readings as @bfe/split's allocateUnits, checked before any stage runs; only integer
// counts must wait for the dataset (their sum must be its number of units).
function checkRatios(ratios: readonly number[], ctx: z.RefinementCtx): void {
  const sum = ratios.reduce((a, b) => a + b, 0);
  if (sum <= 0) {
    ctx.addIssue({ code: 'custom', message: 'the ratios sum to zero; nothing to allocate' });
    return;
  }
  const near = (target: number): boolean => Math.abs(sum - target) <= target * 1e-9;
  if (ratios.every((r) => Number.isInteger(r)) || near(1) || near(100)) return;
  ctx.addIssue({
    code: 'custom',
    message:
      `[${ratios.join(', ')}] sum to ${Number(sum.toPrecision(12))}: give fractions that sum to 1 (e.g. [0.6, 0.2, 0.2]), ` +
      'percentages that sum to 100, or integer counts',
  });
}

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
