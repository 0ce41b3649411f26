import {
  MIN_HEADLINE_CLUSTERS,
  pairedBootstrap,
  pairedClusterBootstrap,
  pairedClusterIds,
  pairedClusterRandomizationTest,
  pairedDifferences,
  pairedRandomizationTest,
} from '@bfe/eval';
import type { Evaluation, MetricName, PairedDifference, Results } from '@bfe/eval';
import { terminalTableLines } from '@bfe/core';
import { headlineDifference, intervalChoice } from '../report/format.js';
import { budgetTable } from '../report/tables.js';

/** The two headline metrics the tables show. */
const SHOWN: readonly MetricName[] = ['recall@10', 'ndcg@10'];

/** Per subtask, per system: the paired difference to the base system on each shown metric. */
export type SubtaskComparisons = Map<
  string,
  Map<string, Partial<Record<MetricName, PairedDifference>>>
>;

/**
 * Paired differences to `base` within each subtask (a one-stratum bootstrap CI and sign-flip
 * p-value per subtask, with the results file's seed and resamples), so the per-subtask rows of
 * the table carry their own intervals. With `clusters`, a subtask whose queries span at least
 * `MIN_HEADLINE_CLUSTERS` clusters also gets the cluster CI and p-value (`cluster`), which the
 * table then prints; with fewer it keeps the query-level ones. Deterministic: the same
 * evaluations give the same figures, whether they come from `bfe score` or from `bfe eval` on
 * its per-query file.
 */
export function subtaskComparisons(
  systems: ReadonlyArray<{ readonly name: string; readonly evaluation: Evaluation }>,
  base: string,
  options: {
    readonly resamples: number;
    readonly seed: number;
    readonly clusters?: ReadonlyMap<string, string> | undefined;
  },
): SubtaskComparisons {
  const tests = { resamples: options.resamples, seed: options.seed };
  const out: SubtaskComparisons = new Map();
  const baseEval = systems.find((s) => s.name === base)?.evaluation;
  if (baseEval === undefined) return out;
  for (const { name, evaluation } of systems) {
    if (name === base) continue;
    const perMetric = SHOWN.map((m) => pairedDifferences(evaluation, baseEval, m));
    const ids =
      options.clusters === undefined ? undefined : pairedClusterIds(evaluation, options.clusters);
    evaluation.subtasks.forEach((s, i) => {
      const own = ids?.[i];
      const clustered = own !== undefined && new Set(own).size >= MIN_HEADLINE_CLUSTERS;
      if (s.nQueries === 0) return;
      let bySystem = out.get(s.subtask);
      if (bySystem === undefined) {
        bySystem = new Map();
        out.set(s.subtask, bySystem);
      }
      const entry: Partial<Record<MetricName, PairedDifference>> = {};
      SHOWN.forEach((m, c) => {
        const stratum = [(perMetric[c] as Float64Array[])[i] as Float64Array];
        const boot = pairedBootstrap(stratum, tests);
        const test = pairedRandomizationTest(stratum, tests);
        entry[m] = {
          meanDiff: boot.meanDiff,
          ci95: boot.ci95,
          pValue: test.pValue,
          ...(clustered
            ? {
                cluster: {
                  ci95: pairedClusterBootstrap(stratum, [own], tests).ci95,
                  pValue: pairedClusterRandomizationTest(stratum, [own], tests).pValue,
                },
              }
            : {}),
        };
      });
      bySystem.set(name, entry);
    });
  }
  return out;
}

/**
 * {@link SubtaskComparisons} as plain JSON, `{ subtask: { system: { metric: difference } } }`,
 * for `--json` output.
 */
export function subtaskComparisonsJson(
  bySubtask: SubtaskComparisons,
): Record<string, Record<string, Partial<Record<MetricName, PairedDifference>>>> {
  const out: Record<string, Record<string, Partial<Record<MetricName, PairedDifference>>>> = {};
  for (const [subtask, bySystem] of bySubtask) out[subtask] = Object.fromEntries(bySystem);
  return out;
}

/**
 * The memory-budget table (Recall@K and NDCG@K for K ∈ {4, 8, 10, 16}, per system) that
 * `bfe score` and `bfe eval` print under the score table: the run report's table as plain
 * text. Empty when the results hold no budget but k = 10.
 */
export function renderBudgetTable(results: Results): string[] {
  const table = budgetTable(results);
  return table === undefined ? [] : ['', table.title, ...terminalTableLines(table)];
}

const f4 = (x: number): string => x.toFixed(4);
const signed = (x: number): string => `${x >= 0 ? '+' : '−'}${Math.abs(x).toFixed(4)}`;

function delta(d: PairedDifference | undefined): string {
  if (d === undefined) return '';
  const p = d.pValue < 0.001 ? '<0.001' : d.pValue.toFixed(3);
  return `${signed(d.meanDiff)} [${signed(d.ci95[0])}, ${signed(d.ci95[1])}] p ${p}`;
}

/** A subtask's difference: its cluster figures when computed, else query-level (`q` when marked). */
function subtaskDelta(d: PairedDifference | undefined, mark: boolean): string {
  if (d === undefined) return '';
  if (d.cluster !== undefined) return delta(headlineDifference(d, 'cluster'));
  return `${delta(d)}${mark ? ' q' : ''}`;
}

/**
 * The terminal table of `bfe score` and `bfe eval`: Recall@10 and NDCG@10 per system (headline:
 * subtasks averaged equally) with the difference to `base`, its 95% bootstrap CI and
 * randomisation p-value, then the same per subtask. The headline CI and p are the cluster ones
 * when the results have at least 5 clusters; otherwise a line says the interval is
 * query-level and cannot include between-bank variance. A subtask row prints its cluster
 * figures when {@link subtaskComparisons} computed them.
 *
 * @example
 * renderScoreTable(results, subtaskComparisons(systems, 'pooled', { resamples, seed }), 'pooled');
 * // system         R@10    Δ R@10 vs pooled [95% CI]          nDCG@10  …
 */
export function renderScoreTable(
  results: Results,
  bySubtask: SubtaskComparisons,
  base: string,
): string {
  const hasBase = results.systems.some((s) => s.name === base);
  const head = [
    'system',
    'R@10',
    hasBase ? `Δ R@10 vs ${base} [95% CI]` : '',
    'nDCG@10',
    hasBase ? `Δ nDCG@10 vs ${base} [95% CI]` : '',
  ];
  const choice = intervalChoice(results);
  const shown = (s: Results['systems'][number], m: MetricName): string =>
    s.name === base ? '—' : delta(headlineDifference(s.comparisons?.[base]?.[m], choice.kind));
  const headline = results.systems.map((s) => [
    s.name,
    f4(s.metrics['recall@10'] as number),
    shown(s, 'recall@10'),
    f4(s.metrics['ndcg@10'] as number),
    shown(s, 'ndcg@10'),
  ]);
  const first = results.systems[0];
  const lines = [
    `headline (${results.subtasks.length} subtasks averaged equally; ${first?.nQueries ?? 0} queries, ${first?.dropped.noRelevant ?? 0} dropped without relevant memory)`,
    ...(choice.note === '' ? [] : [`intervals: ${choice.note}`]),
    ...terminalTableLines({ head, rows: headline }),
    '',
    choice.note === ''
      ? 'per subtask'
      : `per subtask (intervals: ${choice.kind === 'cluster' ? `cluster-level where a subtask spans ≥ ${MIN_HEADLINE_CLUSTERS} ${choice.unit}, else ` : ''}query-level, marked q)`,
  ];
  const rows: string[][] = [];
  for (const subtask of results.subtasks) {
    for (const s of results.systems) {
      const figures = s.subtasks[subtask];
      if (figures === undefined) continue;
      const d = bySubtask.get(subtask)?.get(s.name);
      rows.push([
        s.name === results.systems[0]?.name ? `${subtask} (${figures.nQueries})` : '',
        s.name,
        f4(figures.metrics['recall@10'] as number),
        s.name === base ? '—' : subtaskDelta(d?.['recall@10'], choice.note !== ''),
        f4(figures.metrics['ndcg@10'] as number),
        s.name === base ? '—' : subtaskDelta(d?.['ndcg@10'], choice.note !== ''),
      ]);
    }
  }
  lines.push(...terminalTableLines({ head: ['subtask (n)', ...head], rows }));
  return lines.join('\n');
}
