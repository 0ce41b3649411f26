import { z } from 'zod';

/**
 * The significance parts of a results file: how comparisons were computed and one paired
 * difference, query-level and, when cluster ids were given, cluster-level (METHOD.md §6
 * "Intervals").
 */

const ci95Schema = z.tuple([z.number().min(-1).max(1), z.number().min(-1).max(1)]);

/**
 * The cluster-level figures of a paired difference (METHOD.md §6 "Intervals"): the paired
 * cluster bootstrap CI and the cluster sign-flip p-value.
 */
export const clusterDifferenceSchema = z
  .strictObject({ ci95: ci95Schema, pValue: z.number().gt(0).max(1) })
  .refine((d) => d.ci95[0] <= d.ci95[1], { message: 'ci95 must be [low, high]', path: ['ci95'] });

/** The paired difference of one metric (this system minus the other). */
export const pairedDifferenceSchema = z
  .strictObject({
    meanDiff: z.number().min(-1).max(1),
    ci95: ci95Schema,
    pValue: z.number().gt(0).max(1),
    /** Over clusters of queries, when the results were built with cluster ids. */
    cluster: clusterDifferenceSchema.optional(),
  })
  .refine((d) => d.ci95[0] <= d.ci95[1], { message: 'ci95 must be [low, high]', path: ['ci95'] });

/**
 * Fewest clusters for which the cluster interval is the headline one; with fewer, tables print
 * the query-level interval and say it cannot include between-cluster variance.
 */
export const MIN_HEADLINE_CLUSTERS = 5;

/** How the comparisons were computed. */
export const significanceSchema = z.strictObject({
  resamples: z.int().positive(),
  seed: z.int().nonnegative(),
  ci: z.literal('stratified-paired-bootstrap-percentile'),
  pValue: z.literal('stratified-paired-sign-flip'),
  /**
   * Present when comparisons carry `cluster` figures: the bank unit (conversation, haystack,
   * article, bank), the number of clusters among the evaluated queries, and which interval is
   * the headline one (`cluster` when `n` ≥ {@link MIN_HEADLINE_CLUSTERS}).
   */
  clusters: z
    .strictObject({
      unit: z.string().min(1),
      n: z.int().positive(),
      headline: z.enum(['cluster', 'query']),
    })
    .refine((c) => (c.headline === 'cluster') === c.n >= MIN_HEADLINE_CLUSTERS, {
      message: `headline is 'cluster' exactly when n ≥ ${MIN_HEADLINE_CLUSTERS}`,
      path: ['headline'],
    })
    .optional(),
});
