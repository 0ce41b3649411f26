import { ConfigError, DataError } from '@bfe/core';
import { z } from 'zod';
import type { Evaluation } from './evaluate.js';
import { metricNames } from './metrics.js';
import type { MetricName, MetricValues } from './metrics.js';
import { DEFAULT_RESAMPLES, DEFAULT_SEED, comparePaired } from './significance.js';
import {
  MIN_HEADLINE_CLUSTERS,
  pairedDifferenceSchema,
  significanceSchema,
} from './significance-schema.js';
import { countClusters } from './significance-cluster.js';
import type { PairedDifference } from './significance.js';
import { transitionIssues, transitionsBetween, transitionsSchema } from './transitions.js';

/**
 * The system names METHOD.md §6 reports side by side. Any non-empty name is accepted (a k
 * sweep may add `sparse-fusion-k32`); these are the ones the tables expect.
 *
 * @example
 * KNOWN_SYSTEMS.includes('bm25'); // true
 */
export const KNOWN_SYSTEMS = Object.freeze([
  'pooled',
  'maxsim',
  'bm25',
  'sparse-fusion',
  'adapted',
  'zero-floor',
  'no-fusion',
  'maxsim-fusion',
  'adapted-zero-floor',
  'hybrid',
  'hybrid-selected',
] as const);

/** A metric name: `recall@<k>` (capped recall) or `ndcg@<k>`, k a positive integer. */
export const metricNameSchema: z.ZodType<MetricName> = z
  .string()
  .regex(/^(recall|ndcg)@[1-9][0-9]*$/, 'expected recall@<k> or ndcg@<k>') as z.ZodType<MetricName>;

/** Metric values by name, each in [0, 1]. */
export const metricValuesSchema = z.record(metricNameSchema, z.number().min(0).max(1));

export {
  MIN_HEADLINE_CLUSTERS,
  clusterDifferenceSchema,
  pairedDifferenceSchema,
  significanceSchema,
} from './significance-schema.js';

/** A system name, e.g. `pooled` or `sparse-fusion` (see {@link KNOWN_SYSTEMS}). */
export const systemNameSchema = z.string().min(1);

/** One system's figures: headline, per subtask, counts and optional comparisons. */
export const systemResultSchema = z.strictObject({
  name: systemNameSchema,
  /** Headline figures: the unweighted mean over subtasks (METHOD.md §6). */
  metrics: metricValuesSchema,
  /** Per-subtask figures for every subtask with at least one evaluated query. */
  subtasks: z.record(
    z.string(),
    z.strictObject({ metrics: metricValuesSchema, nQueries: z.int().positive() }),
  ),
  nQueries: z.int().positive(),
  dropped: z.strictObject({ noRelevant: z.int().nonnegative() }),
  /** Keyed by the other system's name, then by metric: this system minus the other. */
  comparisons: z
    .record(systemNameSchema, z.record(metricNameSchema, pairedDifferenceSchema))
    .optional(),
});

/**
 * A results file: one dataset and split, every system on the same queries. Checked beyond the
 * shapes: unique system names, each system's metrics exactly `recall@k`/`ndcg@k` for the
 * listed `ks` (which include the headline k = 10), subtasks among the declared ones, and
 * comparisons that name another listed system.
 *
 * @example
 * resultsSchema.parse({
 *   schemaVersion: 1, dataset: 'locomo', split: 'test', ks: [10], subtasks: ['1', '2'],
 *   systems: [{ name: 'pooled', metrics: { 'recall@10': 0.42, 'ndcg@10': 0.3 },
 *     subtasks: { '1': { metrics: { 'recall@10': 0.4, 'ndcg@10': 0.3 }, nQueries: 282 } },
 *     nQueries: 282, dropped: { noRelevant: 0 } }],
 * });
 */
export const resultsSchema = z
  .strictObject({
    schemaVersion: z.literal(1),
    dataset: z.string().min(1),
    /** `test`, `validation`, `train`, or `all` when no split applies. */
    split: z.string().min(1),
    ks: z
      .array(z.int().positive())
      .min(1)
      .refine((ks) => new Set(ks).size === ks.length, { message: 'ks must not repeat' }),
    /** The benchmark's subtasks in declared order. */
    subtasks: z.array(z.string().min(1)),
    significance: significanceSchema.optional(),
    systems: z.array(systemResultSchema).min(1),
    /** Query-level transitions between listed systems (hit = a relevant memory in the top k). */
    transitions: z.array(transitionsSchema).optional(),
    /** Free-form provenance: model id, α, scorer k, code version, hashes… */
    meta: z.record(z.string(), z.json()).optional(),
  })
  .superRefine((results, ctx) => {
    if (!results.ks.includes(10)) {
      ctx.addIssue({
        code: 'custom',
        path: ['ks'],
        message: 'ks must include the headline k = 10',
      });
    }
    const expected = [...metricNames([...results.ks].sort((a, b) => a - b))].sort();
    const declared = new Set(results.subtasks);
    const names = new Set<string>();
    results.systems.forEach((system, i) => {
      if (names.has(system.name)) {
        ctx.addIssue({
          code: 'custom',
          path: ['systems', i, 'name'],
          message: `duplicate system '${system.name}'`,
        });
      }
      names.add(system.name);
      const check = (metrics: Record<string, number>, path: (string | number)[]) => {
        const keys = Object.keys(metrics).sort();
        if (keys.join() !== expected.join()) {
          ctx.addIssue({
            code: 'custom',
            path,
            message: `metrics must be exactly ${expected.join(', ')}`,
          });
        }
      };
      check(system.metrics, ['systems', i, 'metrics']);
      for (const [subtask, figures] of Object.entries(system.subtasks)) {
        if (!declared.has(subtask)) {
          ctx.addIssue({
            code: 'custom',
            path: ['systems', i, 'subtasks', subtask],
            message: `undeclared subtask '${subtask}'`,
          });
        }
        check(figures.metrics, ['systems', i, 'subtasks', subtask, 'metrics']);
      }
    });
    results.systems.forEach((system, i) => {
      for (const other of Object.keys(system.comparisons ?? {})) {
        if (other === system.name || !names.has(other)) {
          ctx.addIssue({
            code: 'custom',
            path: ['systems', i, 'comparisons', other],
            message: `a comparison must name another listed system, got '${other}'`,
          });
        }
      }
      const clustered = results.significance?.clusters !== undefined;
      for (const [other, byMetric] of Object.entries(system.comparisons ?? {})) {
        for (const [metric, d] of Object.entries(byMetric)) {
          if ((d.cluster !== undefined) !== clustered) {
            ctx.addIssue({
              code: 'custom',
              path: ['systems', i, 'comparisons', other, metric, 'cluster'],
              message: 'cluster figures go with significance.clusters, on every comparison',
            });
          }
        }
      }
      if (system.comparisons !== undefined && results.significance === undefined) {
        ctx.addIssue({
          code: 'custom',
          path: ['significance'],
          message: 'comparisons need a significance block',
        });
      }
    });
    for (const issue of transitionIssues(results)) ctx.addIssue({ code: 'custom', ...issue });
  });

/** A validated results file. */
export type Results = z.infer<typeof resultsSchema>;
/** One system of a results file. */
export type SystemResult = z.infer<typeof systemResultSchema>;

/**
 * Parses a results file's JSON value.
 *
 * @throws DataError with zod's readable report (`z.prettifyError`) when it does not fit.
 * @example
 * const results = parseResults(JSON.parse(readFileSync('runs/x/results.json', 'utf8')), 'results.json');
 */
export function parseResults(value: unknown, file = 'results'): Results {
  const parsed = resultsSchema.safeParse(value);
  if (!parsed.success) {
    throw new DataError(`${file} is not a valid results file:\n${z.prettifyError(parsed.error)}`, {
      file,
    });
  }
  return parsed.data;
}

/**
 * One system's entry of a results file, from its evaluation.
 *
 * @example
 * systemResult('pooled', evaluation);
 * // { name: 'pooled', metrics: {…}, subtasks: { '1': { metrics, nQueries: 282 }, … }, nQueries, dropped }
 */
export function systemResult(
  name: string,
  evaluation: Evaluation,
  comparisons?: Record<string, Partial<Record<MetricName, PairedDifference>>>,
): SystemResult {
  const subtasks: Record<string, { metrics: MetricValues; nQueries: number }> = {};
  for (const s of evaluation.subtasks) {
    if (s.metrics !== null)
      subtasks[s.subtask] = { metrics: { ...s.metrics }, nQueries: s.nQueries };
  }
  const out: SystemResult = {
    name,
    metrics: { ...evaluation.metrics },
    subtasks,
    nQueries: evaluation.nQueries,
    dropped: { noRelevant: evaluation.dropped.noRelevant },
  };
  if (comparisons !== undefined) {
    out.comparisons = {};
    for (const [other, byMetric] of Object.entries(comparisons)) {
      const entry: NonNullable<SystemResult['comparisons']>[string] = {};
      for (const [metric, d] of Object.entries(byMetric) as [MetricName, PairedDifference][]) {
        entry[metric] = {
          meanDiff: d.meanDiff,
          ci95: [d.ci95[0], d.ci95[1]],
          pValue: d.pValue,
          ...(d.cluster === undefined
            ? {}
            : {
                cluster: { ci95: [d.cluster.ci95[0], d.cluster.ci95[1]], pValue: d.cluster.pValue },
              }),
        };
      }
      out.comparisons[other] = entry;
    }
  }
  return out;
}

/**
 * Inputs of {@link buildResults}.
 *
 * @example
 * const input: BuildResultsInput = {
 *   dataset: 'locomo', split: 'test',
 *   systems: [{ name: 'pooled', evaluation: pooled }, { name: 'sparse-fusion', evaluation: fusion }],
 *   compareTo: ['pooled'],
 * };
 */
export interface BuildResultsInput {
  readonly dataset: string;
  readonly split: string;
  readonly systems: ReadonlyArray<{ readonly name: string; readonly evaluation: Evaluation }>;
  /** Every other system is compared with each of these (this minus that); default none. */
  readonly compareTo?: readonly string[];
  /** Metrics compared; default `['recall@10', 'ndcg@10']`. */
  readonly compareMetrics?: readonly MetricName[];
  readonly resamples?: number;
  readonly seed?: number;
  /**
   * The cluster (bank) of each query and the unit's name, e.g. `queryClusters(benchmark)` of
   * `@bfe/split`: with it every comparison also gets cluster-level figures and `significance`
   * says how many clusters the evaluated queries fall into.
   */
  readonly clusters?: { readonly unit: string; readonly of: ReadonlyMap<string, string> };
  /** Pairs [from, to] whose query-level transitions (hit = a relevant memory in the top 10) go in. */
  readonly transitions?: ReadonlyArray<readonly [string, string]>;
  readonly meta?: Record<string, z.core.util.JSONType>;
}

/**
 * Assembles and validates a results file from evaluations of the same queries.
 *
 * @throws Error when the evaluations disagree on cut-offs, subtasks or gains, a `compareTo`
 *   or `transitions` system is missing, or the result does not fit {@link resultsSchema} (all programmer
 *   errors).
 * @throws ConfigError when the cut-offs do not include the headline k = 10.
 * @throws DataError when two systems were evaluated on different queries.
 * @example
 * const results = buildResults({ dataset: 'locomo', split: 'test', systems, compareTo: ['pooled'] });
 * results.systems[1].comparisons?.pooled?.['ndcg@10']; // { meanDiff, ci95, pValue }
 */
export function buildResults(input: BuildResultsInput): Results {
  const first = input.systems[0];
  if (first === undefined) throw new Error('buildResults: no systems');
  const ks = first.evaluation.ks;
  if (!ks.includes(10)) {
    throw new ConfigError(
      `A results file reports the headline k = 10; the cut-offs were ${ks.join(', ')}.`,
    );
  }
  const subtasks = first.evaluation.subtasks.map((s) => s.subtask);
  for (const { name, evaluation } of input.systems) {
    if (evaluation.ks.join() !== ks.join()) {
      throw new Error(
        `buildResults: system '${name}' has ks ${evaluation.ks.join()} but '${first.name}' has ${ks.join()}`,
      );
    }
    if (evaluation.subtasks.map((s) => s.subtask).join('\u0000') !== subtasks.join('\u0000')) {
      throw new Error(`buildResults: system '${name}' has different subtasks from '${first.name}'`);
    }
    if (evaluation.gains !== first.evaluation.gains) {
      throw new Error(
        `buildResults: system '${name}' used ${evaluation.gains} gains but '${first.name}' ${first.evaluation.gains}`,
      );
    }
  }
  const byName = new Map(input.systems.map((s) => [s.name, s.evaluation]));
  const compareTo = input.compareTo ?? [];
  for (const base of compareTo) {
    if (!byName.has(base))
      throw new Error(`buildResults: cannot compare with '${base}': no such system`);
  }
  const resamples = input.resamples ?? DEFAULT_RESAMPLES;
  const seed = input.seed ?? DEFAULT_SEED;
  const clusters = input.clusters;
  const options = {
    resamples,
    seed,
    metrics: input.compareMetrics ?? (['recall@10', 'ndcg@10'] as const),
    ...(clusters === undefined ? {} : { clusters: clusters.of }),
  };
  const nClusters =
    clusters === undefined
      ? 0
      : countClusters(
          first.evaluation.queries.map((q) => q.queryId),
          clusters.of,
        );

  const systems = input.systems.map(({ name, evaluation }) => {
    const others = compareTo.filter((base) => base !== name);
    if (others.length === 0) return systemResult(name, evaluation);
    const comparisons: Record<string, Partial<Record<MetricName, PairedDifference>>> = {};
    for (const base of others) {
      comparisons[base] = comparePaired(evaluation, byName.get(base) as Evaluation, options);
    }
    return systemResult(name, evaluation, comparisons);
  });

  const candidate: Results = {
    schemaVersion: 1,
    dataset: input.dataset,
    split: input.split,
    ks: [...ks],
    subtasks,
    ...(compareTo.length > 0
      ? {
          significance: {
            resamples,
            seed,
            ci: 'stratified-paired-bootstrap-percentile' as const,
            pValue: 'stratified-paired-sign-flip' as const,
            ...(clusters === undefined
              ? {}
              : {
                  clusters: {
                    unit: clusters.unit,
                    n: nClusters,
                    headline:
                      nClusters >= MIN_HEADLINE_CLUSTERS
                        ? ('cluster' as const)
                        : ('query' as const),
                  },
                }),
          },
        }
      : {}),
    systems,
    ...(input.transitions === undefined || input.transitions.length === 0
      ? {}
      : { transitions: transitionsBetween(byName, input.transitions) }),
    ...(input.meta === undefined ? {} : { meta: input.meta }),
  };
  const parsed = resultsSchema.safeParse(candidate);
  if (!parsed.success)
    throw new Error(`buildResults: invalid results\n${z.prettifyError(parsed.error)}`);
  return parsed.data;
}
