import { metricNameSchema, systemNameSchema, type MetricName, type Results } from '@bfe/eval';
import { z } from 'zod';

/**
 * One metric of one system over the training seeds: the mean, the sample standard deviation
 * (n − 1; null with one seed, where it does not apply) and each seed's figure in seed order.
 */
export const seedMetricSchema = z.strictObject({
  mean: z.number().min(0).max(1),
  std: z.number().nonnegative().nullable(),
  perSeed: z.array(z.number().min(0).max(1)).min(1),
});

/** One system over the training seeds. */
export const seedSystemSchema = z.strictObject({
  name: systemNameSchema,
  /** Evaluated queries per seed (they differ only when each seed drew its own split). */
  nQueries: z.array(z.int().positive()).min(1),
  /**
   * Every metric equal in every seed (more than one seed): the seeds are not independent
   * replicates of this system (METHOD.md §6), e.g. a training-free system on one shared split.
   */
  identicalAcrossSeeds: z.boolean(),
  metrics: z.record(metricNameSchema, seedMetricSchema),
});

/** The seed means of every system (the object part; see {@link seedMeansSchema}). */
export const seedMeansShape = {
  /** The training seeds in run order; `[null]` for a run without a split (one run). */
  seeds: z.array(z.int().nonnegative().nullable()).min(1),
  /** Every system identical across the seeds (more than one seed). */
  identicalAcrossSeeds: z.boolean(),
  systems: z.array(seedSystemSchema).min(1),
};

/** Checks that every per-seed list has one entry per seed. */
export function checkSeedLengths(
  value: { seeds: readonly unknown[]; systems: ReadonlyArray<z.infer<typeof seedSystemSchema>> },
  ctx: z.RefinementCtx,
): void {
  const n = value.seeds.length;
  value.systems.forEach((s, i) => {
    if (s.nQueries.length !== n) {
      ctx.addIssue({
        code: 'custom',
        path: ['systems', i, 'nQueries'],
        message: `expected one count per seed (${n})`,
      });
    }
    for (const [metric, m] of Object.entries(s.metrics)) {
      if (m.perSeed.length !== n) {
        ctx.addIssue({
          code: 'custom',
          path: ['systems', i, 'metrics', metric, 'perSeed'],
          message: `expected one figure per seed (${n})`,
        });
      }
    }
  });
}

/**
 * Mean over training seeds with the standard deviation, for every system and metric, and the
 * per-seed figures beside it (METHOD.md §8 "Seeds").
 *
 * @example
 * seedMeansSchema.parse({ seeds: [42, 43], identicalAcrossSeeds: false, systems: [{
 *   name: 'adapted', nQueries: [20, 20], identicalAcrossSeeds: false,
 *   metrics: { 'ndcg@10': { mean: 0.75, std: 0.0141, perSeed: [0.74, 0.76] } } }] });
 */
export const seedMeansSchema = z.strictObject(seedMeansShape).superRefine(checkSeedLengths);

/** A validated {@link seedMeansSchema} value. */
export type SeedMeans = z.infer<typeof seedMeansSchema>;
/** One system of {@link SeedMeans}. */
export type SeedSystem = z.infer<typeof seedSystemSchema>;
/** One metric of a {@link SeedSystem}. */
export type SeedMetric = z.infer<typeof seedMetricSchema>;

/**
 * Summarises each training seed's results: per system (in the first seed's order) and metric,
 * the mean, the sample standard deviation and the per-seed figures; flags systems whose
 * metrics are equal in every seed. Every seed must report the same systems and metrics.
 *
 * @example
 * const means = seedMeans([{ seed: 42, results: r42 }, { seed: 43, results: r43 }]);
 * means.systems[0]; // { name: 'pooled', nQueries: [20, 20], identicalAcrossSeeds: true,
 * //   metrics: { 'ndcg@10': { mean: 0.7156, std: 0, perSeed: [0.7156, 0.7156] }, … } }
 */
export function seedMeans(
  runs: ReadonlyArray<{ readonly seed: number | null; readonly results: Results }>,
): SeedMeans {
  const first = runs[0];
  if (first === undefined) throw new Error('seedMeans: no seed to summarise');
  const several = runs.length > 1;
  const systems = first.results.systems.map((sys): SeedSystem => {
    const perRun = runs.map((r) => {
      const s = r.results.systems.find((x) => x.name === sys.name);
      if (s === undefined) {
        throw new Error(`seedMeans: seed ${r.seed} has no system '${sys.name}'`);
      }
      return s;
    });
    const names = Object.keys(sys.metrics) as MetricName[];
    const metrics: Record<string, SeedMetric> = {};
    let identical = several;
    for (const metric of names) {
      const values = perRun.map((s) => {
        const v = s.metrics[metric];
        if (v === undefined) throw new Error(`seedMeans: '${sys.name}' lacks ${metric}`);
        return v;
      });
      if (values.some((v) => v !== values[0])) identical = false;
      metrics[metric] = {
        mean: mean(values),
        std: several ? sampleStd(values) : null,
        perSeed: values,
      };
    }
    const nQueries = perRun.map((s) => s.nQueries);
    if (nQueries.some((n) => n !== nQueries[0])) identical = false;
    return { name: sys.name, nQueries, identicalAcrossSeeds: identical, metrics };
  });
  return {
    seeds: runs.map((r) => r.seed),
    identicalAcrossSeeds: several && systems.every((s) => s.identicalAcrossSeeds),
    systems,
  };
}

/** The mean; exactly the value when every value is equal (no float residue on identical seeds). */
function mean(values: readonly number[]): number {
  if (values.every((v) => v === values[0])) return values[0]!;
  let sum = 0;
  for (const v of values) sum += v;
  // Clamped: float rounding of a mean of figures in [0, 1] must stay in [0, 1].
  return Math.min(1, Math.max(0, sum / values.length));
}

/** Sample standard deviation (n − 1); exactly 0 when every value is equal. */
function sampleStd(values: readonly number[]): number {
  if (values.every((v) => v === values[0])) return 0;
  const m = mean(values);
  let ss = 0;
  for (const v of values) ss += (v - m) ** 2;
  return Math.sqrt(ss / (values.length - 1));
}
