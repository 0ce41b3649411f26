import type { TopLevelSpec } from 'vega-lite';
import type { Results } from '@bfe/eval';
import { headlineDifference, intervalChoice } from './format.js';
import { HEADLINE_METRICS } from './schema.js';
import type { AdapterTraining, KSweepPoint } from './schema.js';

/** `recall@10` → `Recall@10`, `ndcg@10` → `NDCG@10`, as the paper writes them. */
export function metricLabel(metric: string): string {
  const [kind, k] = metric.split('@');
  return `${kind === 'ndcg' ? 'NDCG' : 'Recall'}@${k ?? ''}`;
}

const HEADLINE_LABELS = HEADLINE_METRICS.map(metricLabel);

/**
 * One colour per system, from its place in `systems` (results order), so a system has the same
 * colour in every chart; the legend lists only `shown`.
 */
function systemColor(systems: readonly string[], shown: readonly string[] = systems) {
  return {
    field: 'system',
    type: 'nominal' as const,
    scale: { domain: [...systems] },
    legend: { title: 'system', values: [...shown] },
  };
}

/**
 * Grouped bars of each system's headline Recall@10 and NDCG@10 (point estimates: a results
 * file carries intervals only for paired differences, which {@link deltaChart} draws).
 */
export function headlineChart(results: Results): TopLevelSpec {
  const values = results.systems.flatMap((s) =>
    HEADLINE_METRICS.map((m) => ({
      system: s.name,
      metric: metricLabel(m),
      value: s.metrics[m] ?? null,
    })),
  );
  const systems = results.systems.map((s) => s.name);
  return {
    title: {
      text: 'Headline Recall@10 and NDCG@10 per system',
      subtitle: 'point estimates, subtasks averaged equally',
    },
    data: { values },
    mark: { type: 'bar', tooltip: true },
    width: { step: 22 },
    height: 240,
    encoding: {
      x: { field: 'system', type: 'nominal', sort: systems, axis: { labelAngle: -30 } },
      xOffset: { field: 'metric', type: 'nominal', sort: HEADLINE_LABELS },
      y: { field: 'value', type: 'quantitative', title: 'score', scale: { domain: [0, 1] } },
      color: {
        field: 'metric',
        type: 'nominal',
        sort: HEADLINE_LABELS,
        legend: { title: 'metric' },
      },
    },
  };
}

/**
 * Bars of each system's paired difference to the baseline, with error bars spanning its
 * headline 95% CI (the cluster bootstrap's with at least 5 clusters, else the stratified query
 * bootstrap's, as {@link intervalChoice} says), one panel per headline metric; undefined when
 * no system was compared with the baseline.
 */
export function deltaChart(results: Results, baseline: string): TopLevelSpec | undefined {
  const choice = intervalChoice(results);
  const values = results.systems.flatMap((s) =>
    HEADLINE_METRICS.flatMap((m) => {
      const d = headlineDifference(s.comparisons?.[baseline]?.[m], choice.kind);
      if (d === undefined) return [];
      return [
        {
          system: s.name,
          metric: metricLabel(m),
          diff: d.meanDiff,
          low: d.ci95[0],
          high: d.ci95[1],
          p: d.pValue,
        },
      ];
    }),
  );
  if (values.length === 0) return undefined;
  const systems = results.systems.map((s) => s.name).filter((n) => n !== baseline);
  return {
    title: {
      text: `Difference to ${baseline} (this system − ${baseline})`,
      subtitle:
        choice.kind === 'cluster'
          ? `bars: mean paired difference; error bars: its 95% cluster bootstrap CI (whole ${choice.unit} resampled)`
          : `bars: mean paired difference; error bars: its 95% stratified bootstrap CI over queries${choice.note === '' ? '' : ` (${choice.note})`}`,
    },
    data: { values },
    facet: { column: { field: 'metric', type: 'nominal', sort: HEADLINE_LABELS, title: null } },
    spec: {
      width: { step: 40 },
      height: 220,
      layer: [
        {
          mark: { type: 'bar', tooltip: true },
          encoding: {
            x: { field: 'system', type: 'nominal', sort: systems, axis: { labelAngle: -30 } },
            y: { field: 'diff', type: 'quantitative', title: `Δ vs ${baseline}` },
            color: systemColor(
              results.systems.map((s) => s.name),
              systems,
            ),
            tooltip: [
              { field: 'system' },
              { field: 'metric' },
              { field: 'diff', format: '+.4f', title: 'Δ' },
              { field: 'low', format: '+.4f', title: 'CI low' },
              { field: 'high', format: '+.4f', title: 'CI high' },
              { field: 'p', format: '.3f' },
            ],
          },
        },
        {
          mark: { type: 'rule', strokeWidth: 1.5 },
          encoding: {
            x: { field: 'system', type: 'nominal', sort: systems },
            y: { field: 'low', type: 'quantitative' },
            y2: { field: 'high' },
          },
        },
        {
          mark: { type: 'tick', thickness: 1.5, size: 10 },
          encoding: {
            x: { field: 'system', type: 'nominal', sort: systems },
            y: { field: 'low', type: 'quantitative' },
          },
        },
        {
          mark: { type: 'tick', thickness: 1.5, size: 10 },
          encoding: {
            x: { field: 'system', type: 'nominal', sort: systems },
            y: { field: 'high', type: 'quantitative' },
          },
        },
        {
          data: { values: [{ zero: 0 }] },
          mark: { type: 'rule', color: '#444' },
          encoding: { y: { field: 'zero', type: 'quantitative' } },
        },
      ],
    },
  };
}

/**
 * Grouped bars per subtask (LoCoMo category, LongMemEval question type…), one bar per system,
 * one row per headline metric; undefined when the results have no subtask figures.
 */
export function subtaskChart(results: Results): TopLevelSpec | undefined {
  const values = results.systems.flatMap((s) =>
    results.subtasks.flatMap((subtask) => {
      const figures = s.subtasks[subtask];
      if (figures === undefined) return [];
      return HEADLINE_METRICS.map((m) => ({
        system: s.name,
        subtask,
        metric: metricLabel(m),
        value: figures.metrics[m] ?? null,
        n: figures.nQueries,
      }));
    }),
  );
  if (values.length === 0) return undefined;
  const systems = results.systems.map((s) => s.name);
  return {
    title: { text: 'Per subtask', subtitle: 'point estimates per subtask' },
    data: { values },
    facet: { row: { field: 'metric', type: 'nominal', sort: HEADLINE_LABELS, title: null } },
    spec: {
      // With xOffset the step is one bar's width; a subtask's band holds one bar per system.
      width: { step: 14 },
      height: 180,
      mark: { type: 'bar', tooltip: true },
      encoding: {
        x: { field: 'subtask', type: 'nominal', sort: [...results.subtasks], title: null },
        xOffset: { field: 'system', type: 'nominal', sort: systems },
        y: { field: 'value', type: 'quantitative', title: 'score', scale: { domain: [0, 1] } },
        color: systemColor(systems),
      },
    },
  };
}

/**
 * Headline metrics against the scorer's k (log₂ axis at the swept ks), one line per system,
 * one panel per headline metric.
 */
export function kSweepChart(
  points: readonly KSweepPoint[],
  order: readonly string[],
): TopLevelSpec {
  const values = points.flatMap((p) =>
    HEADLINE_METRICS.map((m) => ({
      k: p.k,
      system: p.system,
      metric: metricLabel(m),
      value: p.metrics[m] ?? null,
    })),
  );
  const ks = [...new Set(points.map((p) => p.k))].sort((a, b) => a - b);
  const swept = [...new Set(points.map((p) => p.system))];
  const systems = [
    ...order.filter((s) => swept.includes(s)),
    ...swept.filter((s) => !order.includes(s)),
  ];
  const x = {
    field: 'k',
    type: 'quantitative' as const,
    title: 'k (top-k tokens per query token)',
    scale: { type: 'log' as const, base: 2, domain: [ks[0] ?? 1, ks[ks.length - 1] ?? 1] },
    axis: { values: ks, format: 'd' },
  };
  const y = {
    field: 'value',
    type: 'quantitative' as const,
    title: 'score',
    scale: { zero: false },
  };
  return {
    title: { text: 'Sensitivity to k', subtitle: 'headline figures of the k-dependent systems' },
    data: { values },
    facet: { column: { field: 'metric', type: 'nominal', sort: HEADLINE_LABELS, title: null } },
    spec: {
      width: 280,
      height: 200,
      encoding: {
        x,
        y,
        color: systemColor([...order, ...systems.filter((s) => !order.includes(s))], systems),
      },
      layer: [{ mark: 'line' }, { mark: { type: 'point', filled: true, tooltip: true } }],
    },
  };
}

/**
 * The adapter's training loss: per step (left) and per epoch with the selected epoch ruled
 * (right), one line per seed.
 */
export function adapterChart(adapter: AdapterTraining): TopLevelSpec {
  const steps = adapter.seeds.flatMap((s) =>
    s.steps.map((p) => ({ seed: String(s.seed), step: p.step, loss: p.loss })),
  );
  const epochs = adapter.seeds.flatMap((s) =>
    s.epochs.map((e) => ({ seed: String(s.seed), epoch: e.epoch, loss: e.loss })),
  );
  const seed = { field: 'seed', type: 'nominal' as const, legend: { title: 'seed' } };
  const maxEpoch = Math.max(...epochs.map((e) => e.epoch));
  return {
    title: {
      text: 'Query adapter training loss',
      subtitle: `selected: epoch ${adapter.selected.epoch}, α = ${adapter.selected.alpha}`,
    },
    hconcat: [
      {
        title: 'per step',
        data: { values: steps },
        width: 320,
        height: 200,
        mark: { type: 'line', tooltip: true },
        encoding: {
          x: { field: 'step', type: 'quantitative', title: 'step' },
          y: { field: 'loss', type: 'quantitative', title: 'loss', scale: { zero: false } },
          color: seed,
        },
      },
      {
        title: 'per epoch (epoch 0: identity adapter)',
        width: 220,
        height: 200,
        layer: [
          {
            data: { values: epochs },
            encoding: {
              x: {
                field: 'epoch',
                type: 'quantitative',
                title: 'epoch',
                axis: { tickMinStep: 1, format: 'd' },
                scale: { domain: [0, Math.max(1, maxEpoch)] },
              },
              y: { field: 'loss', type: 'quantitative', title: 'loss', scale: { zero: false } },
              color: seed,
            },
            layer: [{ mark: 'line' }, { mark: { type: 'point', filled: true, tooltip: true } }],
          },
          {
            data: { values: [{ epoch: adapter.selected.epoch, label: 'selected' }] },
            mark: { type: 'rule', strokeDash: [4, 3], color: '#444' },
            encoding: { x: { field: 'epoch', type: 'quantitative' } },
          },
        ],
      },
    ],
  };
}
