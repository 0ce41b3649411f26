import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Results } from '@bfe/eval';
import { kSweepSchema } from '../score/k-sweep.js';
import { renderReport, reportInputSchema, type ReportInput } from '../report/index.js';
import { terminalTable } from '../cli/table.js';
import { fixed4, markdownTable, type Table } from '../report/format.js';
import type { ArtifactResult } from '../cache/store.js';
import { readTrainingRecord, type TrainingRecord } from './stages/adapt.js';
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
    readonly adapt: ArtifactResult | undefined;
    /** The score artifact's `results.json`, already read and validated. */
    readonly results: Results;
  }>;
  readonly receipt: Receipt;
}

/**
 * Writes `report.md` and `report.html` (offline Vega-Lite charts) for a finished run, and
 * returns the terminal table. The first seed's results are the report's main table; with
 * several seeds, `report.md` and the terminal add one row per seed and system.
 */
export async function writeRunReport(input: RunReportInput): Promise<string> {
  const seeds = await Promise.all(
    input.perSeed.map(async (p) => ({
      seed: p.seed,
      results: p.results,
      sweep: kSweepSchema.parse(
        JSON.parse(await readFile(join(p.score.dir, 'k-sweep.json'), 'utf8')),
      ),
      training: p.adapt === undefined ? undefined : await readTrainingRecord(p.adapt.dir),
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
    },
    results: first.results,
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
              selected: { epoch: t.selected.epoch, alpha: t.selected.alpha },
              steps: t.steps.map((loss, step) => ({ step, loss })),
              epochs: t.epochs.map((ep) => ({
                epoch: ep.epoch,
                loss: ep.trainLoss ?? ep.validationLoss ?? 0,
                validationNdcg10: Math.max(...ep.validation.map((v) => v.ndcg10)),
              })),
            })),
            selected: { epoch: firstTraining.selected.epoch, alpha: firstTraining.selected.alpha },
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
  const seedTable = seeds.length > 1 || trainings.length > 0 ? seedsTable(seeds) : undefined;
  await writeFile(
    join(input.dir, 'report.md'),
    seedTable === undefined
      ? rendered.markdown
      : `${rendered.markdown}\n${markdownTable(seedTable)}\n`,
  );
  await writeFile(join(input.dir, 'report.html'), rendered.html);
  return seedTable === undefined
    ? rendered.terminal
    : `${rendered.terminal}\n\n${seedTable.title}\n${terminalTable(seedTable)}`;
}

/** Seed × system headline rows, with the adapter's selection per seed. */
function seedsTable(
  seeds: ReadonlyArray<{
    seed: number | null;
    results: Results;
    training: TrainingRecord | undefined;
  }>,
): Table {
  return {
    title: 'Every seed',
    head: ['seed', 'system', 'Recall@10', 'NDCG@10', 'selected epoch / α'],
    align: ['right', 'left', 'right', 'right', 'left'],
    rows: seeds.flatMap((s) =>
      s.results.systems.map((sys) => [
        s.seed === null ? '—' : String(s.seed),
        sys.name,
        fixed4(sys.metrics['recall@10'] ?? 0),
        fixed4(sys.metrics['ndcg@10'] ?? 0),
        sys.name === 'adapted' && s.training !== undefined
          ? `${s.training.selected.epoch} / ${s.training.selected.alpha}`
          : '',
      ]),
    ),
  };
}
