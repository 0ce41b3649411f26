import { BUDGET_KS, type MetricName, type Results } from '@bfe/eval';
import { metricLabel } from './charts.js';
import { bytes, deltaWithCi, duration, fixed4, pValue } from './format.js';
import type { Table } from './format.js';
import { HEADLINE_METRICS } from './schema.js';
import type { AdapterTraining, KSweepPoint, ReceiptSummary } from './schema.js';

/**
 * The headline table: per system, Recall@10 and NDCG@10 with the paired difference to the
 * baseline, its 95% CI and p-value (`compact`: without p-values and query counts, for the
 * terminal).
 */
export function headlineTable(results: Results, baseline: string, compact: boolean): Table {
  const head = ['system'];
  const align: ('left' | 'right')[] = ['left'];
  if (!compact) {
    head.push('queries');
    align.push('right');
  }
  for (const metric of HEADLINE_METRICS) {
    head.push(metricLabel(metric), `Δ ${metricLabel(metric)} vs ${baseline} [95% CI]`);
    align.push('right', 'right');
    if (!compact) {
      head.push('p');
      align.push('right');
    }
  }
  const rows = results.systems.map((s) => {
    const row = [s.name];
    if (!compact) row.push(String(s.nQueries));
    for (const metric of HEADLINE_METRICS) {
      const d = s.comparisons?.[baseline]?.[metric];
      const value = s.metrics[metric];
      row.push(value === undefined ? '—' : fixed4(value), deltaWithCi(d));
      if (!compact) row.push(pValue(d));
    }
    return row;
  });
  return { title: 'Headline (subtasks averaged equally)', head, align, rows };
}

/**
 * The memory-budget table (the paper's budget analysis): per system, Recall@K then NDCG@K for
 * each budget K ∈ {4, 8, 10, 16} the results hold (headline figures: subtasks averaged
 * equally). Undefined when they hold no budget but k = 10, which the headline table shows.
 *
 * @example
 * budgetTable(results)?.head;
 * // ['system', 'Recall@4', 'Recall@8', 'Recall@10', 'Recall@16', 'NDCG@4', …, 'NDCG@16']
 */
export function budgetTable(results: Results): Table | undefined {
  const ks = BUDGET_KS.filter((k) => results.ks.includes(k));
  if (ks.every((k) => k === 10)) return undefined;
  const metrics: MetricName[] = [
    ...ks.map((k) => `recall@${k}` as const),
    ...ks.map((k) => `ndcg@${k}` as const),
  ];
  const gains = results.meta?.['gains'];
  return {
    title:
      'Recall@K and NDCG@K at memory budget K: at most K memories reach the reader' +
      (gains === 'graded' ? '; NDCG with graded gains (gain = grade)' : ''),
    head: ['system', ...metrics.map(metricLabel)],
    align: ['left', ...metrics.map(() => 'right' as const)],
    rows: results.systems.map((s) => [
      s.name,
      ...metrics.map((m) => {
        const v = s.metrics[m];
        return v === undefined ? '—' : fixed4(v);
      }),
    ]),
  };
}

/** One table per headline metric: subtasks as rows (declared order), systems as columns. */
export function subtaskTables(results: Results): Table[] {
  const systems = results.systems;
  const first = systems[0];
  return HEADLINE_METRICS.map((metric) => ({
    title: `${metricLabel(metric)} per subtask`,
    head: ['subtask', 'queries', ...systems.map((s) => s.name)],
    align: ['left', 'right', ...systems.map(() => 'right' as const)],
    rows: results.subtasks.map((subtask) => [
      subtask,
      String(first?.subtasks[subtask]?.nQueries ?? 0),
      ...systems.map((s) => {
        const v = s.subtasks[subtask]?.metrics[metric];
        return v === undefined ? '—' : fixed4(v);
      }),
    ]),
  }));
}

/** One table per headline metric: swept k as rows, swept systems as columns. */
export function kSweepTables(points: readonly KSweepPoint[], order: readonly string[]): Table[] {
  const ks = [...new Set(points.map((p) => p.k))].sort((a, b) => a - b);
  const swept = [...new Set(points.map((p) => p.system))];
  const systems = [
    ...order.filter((s) => swept.includes(s)),
    ...swept.filter((s) => !order.includes(s)),
  ];
  const at = new Map(points.map((p) => [`${p.k}\u0000${p.system}`, p]));
  return HEADLINE_METRICS.map((metric) => ({
    title: `${metricLabel(metric)} by scorer k`,
    head: ['k', ...systems],
    align: ['right', ...systems.map(() => 'right' as const)],
    rows: ks.map((k) => [
      String(k),
      ...systems.map((s) => {
        const v = at.get(`${k}\u0000${s}`)?.metrics[metric];
        return v === undefined ? '—' : fixed4(v);
      }),
    ]),
  }));
}

/**
 * Per seed: steps, first and last step loss, then the mean loss of every epoch (the selected
 * one starred) and, when recorded, validation NDCG@10 per epoch.
 */
export function adapterTable(adapter: AdapterTraining): Table {
  const epochs = [...new Set(adapter.seeds.flatMap((s) => s.epochs.map((e) => e.epoch)))].sort(
    (a, b) => a - b,
  );
  const selected = adapter.selected.epoch;
  const withNdcg = adapter.seeds.some((s) =>
    s.epochs.some((e) => e.validationNdcg10 !== undefined),
  );
  const mark = (e: number): string => (e === selected ? '*' : '');
  const head = [
    'seed',
    'steps',
    'first step loss',
    'last step loss',
    ...epochs.map((e) => `epoch ${e}${mark(e)} loss`),
    ...(withNdcg ? epochs.map((e) => `epoch ${e}${mark(e)} val NDCG@10`) : []),
  ];
  const rows = adapter.seeds.map((s) => {
    const byEpoch = new Map(s.epochs.map((e) => [e.epoch, e]));
    return [
      String(s.seed),
      String(s.steps.length),
      fixed4(s.steps[0]?.loss ?? Number.NaN),
      fixed4(s.steps[s.steps.length - 1]?.loss ?? Number.NaN),
      ...epochs.map((e) => {
        const v = byEpoch.get(e)?.loss;
        return v === undefined ? '—' : fixed4(v);
      }),
      ...(withNdcg
        ? epochs.map((e) => {
            const v = byEpoch.get(e)?.validationNdcg10;
            return v === undefined ? '—' : fixed4(v);
          })
        : []),
    ];
  });
  return {
    title: 'Query adapter training',
    head,
    align: head.map((_, c) => (c === 0 ? 'left' : 'right')),
    rows,
  };
}

/** Whether every seed recorded the same step and epoch losses (METHOD.md §6: say so). */
export function seedsIdentical(adapter: AdapterTraining): boolean {
  const key = (s: AdapterTraining['seeds'][number]): string =>
    JSON.stringify([s.steps, s.epochs.map((e) => [e.epoch, e.loss])]);
  const first = adapter.seeds[0];
  return (
    adapter.seeds.length > 1 &&
    first !== undefined &&
    adapter.seeds.every((s) => key(s) === key(first))
  );
}

/** Stage timings of the receipt, with a total row. */
export function stageTable(receipt: ReceiptSummary): Table {
  const total = receipt.stages.reduce((sum, s) => sum + s.seconds, 0);
  return {
    title: 'Stages',
    head: ['stage', 'wall time', 'cached'],
    align: ['left', 'right', 'left'],
    rows: [
      ...receipt.stages.map((s) => [s.name, duration(s.seconds), s.cached ? 'yes' : 'no']),
      ['total', duration(total), ''],
    ],
  };
}

/** The receipt's provenance lines as label/value pairs. */
export function receiptFacts(receipt: ReceiptSummary): [string, string][] {
  return [
    ['model', receipt.model],
    ['dataset sha256', receipt.datasetSha256],
    [
      'commit',
      receipt.commit === null
        ? 'unknown (not a git checkout)'
        : `${receipt.commit}${receipt.dirty === true ? ' (dirty: uncommitted changes)' : receipt.dirty === null ? ' (dirty: unknown)' : ''}`,
    ],
    ['peak RSS', bytes(receipt.peakRssBytes)],
  ];
}
