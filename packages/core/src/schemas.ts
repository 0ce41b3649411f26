import { z } from 'zod';

/**
 * The canonical in-memory form of every benchmark (issue: datasets). Relevance labels are
 * deliberately absent from these schemas: they live in {@link RelevanceLabels}, which only the
 * evaluator and the trainer accept, so labels cannot reach the encoder by accident.
 */

/** Free-form, JSON-safe metadata: provenance such as dates, speakers, source offsets. */
export const metaSchema = z.record(
  z.string(),
  z.union([z.string(), z.number(), z.boolean(), z.null(), z.array(z.string())]),
);
export type Meta = z.infer<typeof metaSchema>;

/** One retrievable memory: a conversation turn, a session or a passage. */
export const memorySchema = z.strictObject({
  id: z.string().min(1),
  /** The bank (conversation, article, scene…) the memory belongs to. */
  bankId: z.string().min(1),
  text: z.string(),
  meta: metaSchema,
});
export type Memory = z.infer<typeof memorySchema>;

/**
 * One query. Its candidates are either whole banks (`candidateBankIds`: LoCoMo's own
 * conversation, COVID-QA's article) or explicit memory ids (`candidateIds`: a LongMemEval
 * haystack, an LMEB scene) — exactly one of the two.
 */
export const querySchema = z
  .strictObject({
    id: z.string().min(1),
    text: z.string(),
    candidateBankIds: z.array(z.string().min(1)).min(1).optional(),
    candidateIds: z.array(z.string().min(1)).min(1).optional(),
    /** The subtask the query is averaged under (LoCoMo category, LongMemEval type, LMEB subset). */
    category: z.string().min(1),
    meta: metaSchema,
  })
  .refine((q) => (q.candidateBankIds === undefined) !== (q.candidateIds === undefined), {
    message: 'a query needs exactly one of candidateBankIds or candidateIds',
  });
export type Query = z.infer<typeof querySchema>;

/** Where a benchmark's data came from: each source file with its SHA-256. */
export const sourceFileSchema = z.strictObject({
  name: z.string(),
  sha256: z.string().regex(/^[0-9a-f]{64}$/),
});
export type SourceFile = z.infer<typeof sourceFileSchema>;

/** A loaded benchmark without labels: what the encoder and the scorer may see. */
export interface Benchmark {
  /** Registry name, e.g. `locomo`, `longmemeval-s`, `lmeb:/data/LoCoMo`. */
  readonly name: string;
  /** The loader options that shaped it (granularity, categories, text policy…). */
  readonly options: Readonly<Record<string, string | number | boolean | readonly string[]>>;
  readonly memories: readonly Memory[];
  readonly queries: readonly Query[];
  /** Subtask names in their declared order; every query's `category` is one of them. */
  readonly subtasks: readonly string[];
  readonly sources: readonly SourceFile[];
}

/** The two split policies of METHOD.md §5. */
export const splitPolicySchema = z.enum(['connected-bank', 'query-disjoint-shared-bank']);
export type SplitPolicy = z.infer<typeof splitPolicySchema>;

export const splitNameSchema = z.enum(['train', 'validation', 'test']);
export type SplitName = z.infer<typeof splitNameSchema>;

/** A split file: policy, seed, query ids per split, hash and the flags METHOD.md §5 requires. */
export const splitSchema = z.strictObject({
  schemaVersion: z.literal(1),
  dataset: z.string(),
  /** Content hash of the benchmark (memories and queries, no labels) the split was made from. */
  benchmarkHash: z.string(),
  policy: splitPolicySchema,
  seed: z.number().int(),
  /** Requested sizes, as given: fractions summing to 1, or unit counts. */
  ratios: z.tuple([z.number().nonnegative(), z.number().nonnegative(), z.number().nonnegative()]),
  unit: z.enum(['component', 'query']),
  /** Number of units (connected components or queries) in each split. */
  unitCounts: z.strictObject({ train: z.number(), validation: z.number(), test: z.number() }),
  /** Query ids per split, each list sorted. */
  queries: z.strictObject({
    train: z.array(z.string()),
    validation: z.array(z.string()),
    test: z.array(z.string()),
  }),
  /** Bank ids per split under the strict policy; under the shared-bank policy all banks are shared. */
  banks: z.strictObject({
    train: z.array(z.string()),
    validation: z.array(z.string()),
    test: z.array(z.string()),
  }),
  diagnosticOnly: z.boolean(),
  promotionEligible: z.boolean(),
  /** Result markers, e.g. `shared-unlabelled-memory`. */
  marks: z.array(z.enum(['shared-unlabelled-memory'])),
  /**
   * Present on one fold of a cross-fitted split (METHOD.md §8): the units are cut into `folds`
   * folds; this split tests fold `fold`, validates on fold `validationFold` and trains on the
   * rest. Absent on an ordinary split (so its hash is unchanged).
   */
  crossFit: z
    .strictObject({
      folds: z.int().min(3),
      fold: z.int().nonnegative(),
      validationFold: z.int().nonnegative(),
      rule: z.literal('validation = the previous fold (cyclic); train = the other folds'),
    })
    .optional(),
  /** SHA-256 of the canonical JSON of every other field. */
  hash: z.string().regex(/^[0-9a-f]{64}$/),
});
export type Split = z.infer<typeof splitSchema>;

/** What a stage wrote: enough to verify it and to know whether it is still valid. */
export const artifactManifestSchema = z.strictObject({
  schemaVersion: z.literal(1),
  stage: z.string(),
  /** The cache key: hash of inputs, config and stage code version. */
  key: z.string().regex(/^[0-9a-f]{64}$/),
  inputs: z.record(z.string(), z.string()),
  config: z.unknown(),
  codeVersion: z.string(),
  files: z.array(
    z.strictObject({ path: z.string(), bytes: z.number().int().nonnegative(), sha256: z.string() }),
  ),
  createdAt: z.string(),
});
export type ArtifactManifest = z.infer<typeof artifactManifestSchema>;
