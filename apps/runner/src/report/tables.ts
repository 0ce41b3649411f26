import { BUDGET_KS, type MetricName, type Results } from '@bfe/eval';
import { metricLabel } from './charts.js';
import {
  bytes,
  ciOnly,
  deltaWithCi,
  duration,
  fixed4,
  headlineDifference,
  intervalChoice,
  pValue,
} from './format.js';
import type { Table } from './format.js';
import { HEADLINE_METRICS } from './schema.js';
import type { AdapterTraining, KSweepPoint, ReceiptSummary } from './schema.js';
import type { SeedMeans, SeedMetric } from '../score/seed-means.js';

/** A system's row label in a table (its name, or a name with a note). */
export type SystemLabel = (name: string) => string;

/**
 * The `adapted` row's label: when the selected epoch is 0 the row is the identity adapter
 * (no trained weights) with a re-selected α, and the label says so; with several seeds of
 * which only some selected epoch 0, it names them; a transferred adapter (`adapter.from`) is
 * `adapted (transferred from <dataset>)`. Every other system keeps its name.
 */
export function adaptedLabel(
  adapter: AdapterTraining | undefined,
  which: 'first' | 'all',
): SystemLabel {
  const note = 'epoch 0 = identity, α re-selected';
  let identity: number[] = [];
  let total = 1;
  if (adapter !== undefined) {
    const seeds = which === 'first' ? adapter.seeds.slice(0, 1) : adapter.seeds;
    total = seeds.length;
    identity = seeds
      .filter((s, i) => (s.selected ?? (i === 0 ? adapter.selected : undefined))?.epoch === 0)
      .map((s) => s.seed);
  }
  const notes = [
    ...(adapter?.transferredFrom === undefined
      ? []
      : [`transferred from ${adapter.transferredFrom}`]),
    ...(identity.length === 0
      ? []
      : identity.length === total
        ? [note]
        : [`${note} in seed${identity.length > 1 ? 's' : ''} ${identity.join(', ')}`]),
  ];
  const label = notes.length === 0 ? 'adapted' : `adapted (${notes.join('; ')})`;
  return (name) => (name === 'adapted' ? label : name);
}

/**
 * An adapter selection in words: `adapted`'s epoch and α and, when recorded,
 * `adapted-zero-floor`'s own beside it.
 *
 * @example
 * adapterSelectionText({ epoch: 2, alpha: 0.25, zeroFloor: { epoch: 1, alpha: 0.5 } });
 * // 'adapted epoch 2, α = 0.25; adapted-zero-floor epoch 1, α = 0.5'
 */
export function adapterSelectionText(selected: AdapterTraining['selected']): string {
  const zf = selected.zeroFloor;
  const own = `adapted epoch ${selected.epoch}, α = ${selected.alpha}`;
  return zf === undefined ? own : `${own}; adapted-zero-floor epoch ${zf.epoch}, α = ${zf.alpha}`;
}

/**
 * The headline table: per system, Recall@10 and NDCG@10 with the paired difference to the
 * baseline, its 95% CI and p-value (`compact`: without p-values and query counts, for the
 * terminal). The CI and p are the cluster ones when the results make them the headline
 * ({@link intervalChoice}), with the query-level CI beside them (not in `compact`); the title
 * says which interval it prints.
 */
export function headlineTable(
  results: Results,
  baseline: string,
  compact: boolean,
  label: SystemLabel = (name) => name,
  title = 'Headline (subtasks averaged equally)',
): Table {
  const choice = intervalChoice(results);
  const beside = !compact && choice.kind === 'cluster';
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
    if (beside) {
      head.push(`query-level 95% CI`);
      align.push('right');
    }
  }
  const rows = results.systems.map((s) => {
    const row = [label(s.name)];
    if (!compact) row.push(String(s.nQueries));
    for (const metric of HEADLINE_METRICS) {
      const raw = s.comparisons?.[baseline]?.[metric];
      const d = headlineDifference(raw, choice.kind);
      const value = s.metrics[metric];
      row.push(value === undefined ? '—' : fixed4(value), deltaWithCi(d));
      if (!compact) row.push(pValue(d));
      if (beside) row.push(ciOnly(raw));
    }
    return row;
  });
  return { title: choice.note === '' ? title : `${title}; ${choice.note}`, head, align, rows };
}

/**
 * The headline against `sparse-fusion` beside the one against pooled, when the run has
 * `chunked-pooled@N` rows (the paper's Appendix D asks whether short windows close the gap to
 * the token method) and `results.json` compares with sparse fusion; none otherwise.
 */
export function sparseFusionHeadline(results: Results, label: SystemLabel): Table[] {
  const chunked = results.systems.some((s) => s.name.startsWith('chunked-pooled@'));
  const compared = results.systems.some((s) => s.comparisons?.['sparse-fusion'] !== undefined);
  if (!chunked || !compared) return [];
  const title = 'Against sparse-fusion (subtasks averaged equally)';
  return [headlineTable(results, 'sparse-fusion', false, label, title)];
}

/** `0.4213 ± 0.0120`, or `0.4213 (every seed)` for a figure equal in every seed. */
function meanCell(m: SeedMetric | undefined, identical: boolean): string {
  if (m === undefined) return '—';
  if (identical || m.std === null) return `${fixed4(m.mean)}${identical ? ' (every seed)' : ''}`;
  return `${fixed4(m.mean)} ± ${fixed4(m.std)}`;
}

/**
 * The headline over training seeds: per system and headline metric, the mean ± sample
 * standard deviation and each seed's figure beside it; a system whose metrics are equal in
 * every seed says so instead of a standard deviation (METHOD.md §6: not independent replicates).
 */
export function seedMeansTable(means: SeedMeans, label: SystemLabel, compact: boolean): Table {
  const seeds = means.seeds.map((s) => (s === null ? '—' : String(s))).join(' / ');
  const head = ['system'];
  const align: ('left' | 'right')[] = ['left'];
  if (!compact) {
    head.push('queries');
    align.push('right');
  }
  for (const metric of HEADLINE_METRICS) {
    head.push(`${metricLabel(metric)} mean ± std`, `${metricLabel(metric)} seeds ${seeds}`);
    align.push('right', 'right');
  }
  const rows = means.systems.map((s) => {
    const row = [label(s.name)];
    if (!compact) row.push(s.nQueries.map(String).join(' / '));
    for (const metric of HEADLINE_METRICS) {
      const m = s.metrics[metric];
      row.push(
        meanCell(m, s.identicalAcrossSeeds),
        m === undefined ? '—' : m.perSeed.map(fixed4).join(' / '),
      );
    }
    return row;
  });
  return {
    title: `Mean over ${means.seeds.length} training seeds (subtasks averaged equally; std: sample, n − 1)`,
    head,
    align,
    rows,
  };
}

/** What the seed means say about replicates, as report lines (none when nothing to say). */
export function seedNotes(means: SeedMeans, part: string): string[] {
  if (means.seeds.length < 2) return [];
  const seeds = means.seeds.join(', ');
  if (means.identicalAcrossSeeds) {
    return [
      `Every system's ${part} metrics are identical in seeds ${seeds}: the seeds are not ` +
        'independent replicates (the standard deviation is 0 by construction).',
    ];
  }
  const same = means.systems.filter((s) => s.identicalAcrossSeeds).map((s) => s.name);
  return same.length === 0
    ? []
    : [
        `Identical ${part} metrics in seeds ${seeds}, so not independent replicates: ` +
          `${same.join(', ')} (nothing in them depends on the training seed).`,
      ];
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
