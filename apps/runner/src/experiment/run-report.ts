import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Results } from '@bfe/eval';
import { kSweepSchema } from '../score/k-sweep.js';
import { renderReport, reportInputSchema, type ReportInput } from '../report/index.js';
import type { ArtifactResult } from '../cache/store.js';
import type { TrainingRecord } from './stages/adapt.js';
import type { RunResults } from './run-results.js';
import type { Experiment } from './config.js';
import type { Receipt } from './receipt.js';

/** Inputs of {@link writeRunReport}. */
export interface RunReportInput {
  readonly dir: string;
  readonly experiment: Experiment;
  readonly runId: string;
  readonly perSeed: ReadonlyArray<{
    readonly seed: number | null;
    readonly score: ArtifactResult;
    /** The score artifact's `results.json`, already read and validated. */
    readonly results: Results;
    /** The adapt artifact's `training.json`, when the adapter was trained. */
    readonly training: TrainingRecord | undefined;
  }>;
  /** The run folder's `results.json`: the seed means. */
  readonly summary: RunResults;
  readonly receipt: Receipt;
}

/**
 * Writes `report.md` and `report.html` (offline Vega-Lite charts) for a finished run, and
 * returns the terminal table. With several training seeds the headline is their mean ± standard
 * deviation with each seed's figure beside it; the first seed's results give the paired
 * comparisons, subtask tables and charts.
 */
export async function writeRunReport(input: RunReportInput): Promise<string> {
  const seeds = await Promise.all(
    input.perSeed.map(async (p) => ({
      seed: p.seed,
      results: p.results,
      sweep: kSweepSchema.parse(
        JSON.parse(await readFile(join(p.score.dir, 'k-sweep.json'), 'utf8')),
      ),
      training: p.training,
    })),
  );
  const first = seeds[0]!;
  const meta = first.results.meta as Record<string, unknown> | undefined;
  const trainings = seeds
    .map((s) => s.training)
    .filter((t): t is TrainingRecord => t !== undefined);
  const firstTraining = trainings[0];
  const receipt = input.receipt;
  const report: ReportInput = reportInputSchema.parse({
    experiment: input.experiment.name,
    runId: input.runId,
    dataset: first.results.dataset,
    split: {
      name: first.results.split,
      ...(meta?.splitPolicy === undefined ? {} : { policy: meta.splitPolicy }),
      ...(meta?.splitHash === undefined ? {} : { hash: meta.splitHash }),
      diagnosticOnly: meta?.diagnosticOnly === true,
      promotionEligible: meta?.splitPolicy === undefined ? true : meta.promotionEligible === true,
      marks: (meta?.marks as string[] | undefined) ?? [],
      selectionData: input.summary.selectionData,
    },
    seeds: {
      splitSeed: input.summary.splitSeed,
      means: {
        seeds: input.summary.seeds,
        identicalAcrossSeeds: input.summary.identicalAcrossSeeds,
        systems: input.summary.systems,
      },
    },
    results: first.results,
    ...(input.summary.load === undefined ? {} : { load: input.summary.load }),
    ...(first.sweep.points.length === 0
      ? {}
      : {
          kSweep: first.sweep.points.flatMap((p) =>
            p.systems.map((s) => ({ k: p.k, system: s.name, metrics: s.metrics })),
          ),
        }),
    ...(firstTraining === undefined
      ? {}
      : {
          adapter: {
            seeds: trainings.map((t) => ({
              seed: t.seed,
              selected: selectionOf(t),
              steps: t.steps.map((loss, step) => ({ step, loss })),
              epochs: t.epochs.map((ep) => ({
                epoch: ep.epoch,
                loss: ep.trainLoss ?? ep.validationLoss ?? 0,
                validationNdcg10: Math.max(...ep.validation.map((v) => v.ndcg10)),
              })),
            })),
            selected: selectionOf(firstTraining),
            ...transferredFromOf(meta),
          },
        }),
    receipt: {
      model: receipt.model.name,
      datasetSha256: receipt.dataset.files[0]?.sha256 ?? '0'.repeat(64),
      commit: receipt.source.commit ?? '0000000',
      dirty: receipt.source.dirty ?? true,
      stages: receipt.stages.map((s) => ({ name: s.name, seconds: s.seconds, cached: s.cached })),
      peakRssBytes: receipt.peakRssBytes,
    },
  });
  const rendered = renderReport(report);
  await writeFile(join(input.dir, 'report.md'), rendered.markdown);
  await writeFile(join(input.dir, 'report.html'), rendered.html);
  return rendered.terminal;
}

/** `{ transferredFrom: <source dataset> }` when the adapter came from `adapter.from`. */
function transferredFromOf(meta: Record<string, unknown> | undefined): {
  transferredFrom?: string;
} {
  const adapter = meta?.adapter as { transferredFrom?: { dataset?: unknown } } | undefined;
  const dataset = adapter?.transferredFrom?.dataset;
  return typeof dataset === 'string' ? { transferredFrom: dataset } : {};
}

/** Both adapter systems' selected epoch and α, as the report shows them. */
function selectionOf(t: TrainingRecord): NonNullable<ReportInput['adapter']>['selected'] {
  const { epoch, alpha, zeroFloor } = t.selected;
  return { epoch, alpha, zeroFloor: { epoch: zeroFloor.epoch, alpha: zeroFloor.alpha } };
}
