import { TOP_CUTOFF, type InterventionSummaryRow } from '@bfe/scorer';
import { terminalTableLines } from '@bfe/core';
import type { AggregateInterventions, QueryExplanation } from './pipeline.js';

const fixed = (x: number, digits: number): string => (Number.isNaN(x) ? '—' : x.toFixed(digits));
/** A median of ranks: an integer, or a half for an even count. */
const rankText = (x: number): string => (Number.isInteger(x) ? String(x) : x.toFixed(1));
const signed = (x: number): string => (x > 0 ? `+${rankText(x)}` : rankText(x));

/** What the run was: system, k, α, and how the standardisation is held. */
export interface ExplainHeader {
  readonly dataset: string;
  readonly split: string;
  readonly system: string;
  readonly k: number;
  readonly alpha: number;
}

function headerLine(h: ExplainHeader): string {
  return (
    `system     ${h.system}, k = ${h.k}, α = ${h.alpha}; ${h.dataset}, ${h.split}; ` +
    'removals edit score contributions (μ, σ of the original scores fixed), not text'
  );
}

/**
 * `bfe explain --query`: per query token its matched memory token, similarity, floor, excess
 * over the floor and share of the memory's total excess; then the rank after each removal.
 */
export function renderQueryExplanation(
  e: QueryExplanation,
  header: ExplainHeader,
  tokenText: (id: number) => string | undefined,
): string {
  const r = e.interventions;
  const piece = (id: number): string => (id < 0 ? '—' : (tokenText(id) ?? `[${id}]`));
  const pieces = Array.from(e.queryTokenIds, piece);
  const total = r.tokens.reduce((s, t) => s + t.excess, 0);
  const why =
    e.chosen === 'given'
      ? `given${e.relevant ? ' (relevant)' : ''}`
      : e.chosen === 'relevant'
        ? 'the relevant memory the system ranks highest'
        : 'the top-ranked memory (the query has no relevant memory)';
  const lines = [
    `query      ${e.query.id} (${e.query.category}): ${JSON.stringify(e.query.text)}`,
    `memory     ${e.memoryId}: ${why}; fused rank ${r.rank} of ${e.candidates}, score ${fixed(r.score, 4)}, s_sparse ${fixed(r.sparse, 4)}`,
    headerLine(header),
    '',
    ...terminalTableLines({
      head: ['#', 'query token', 'memory token', 'similarity', 'floor', 'excess', 'share'],
      align: ['right', 'left', 'left', 'right', 'right', 'right', 'right'],
      rows: r.tokens.map((t, i) => [
        String(i),
        pieces[i]!,
        t.floored ? '(floor)' : piece(e.memoryTokenIds[i]!),
        t.floored ? '—' : fixed(t.similarity, 4),
        fixed(t.floor, 4),
        fixed(t.excess, 4),
        total === 0 ? '—' : `${((100 * t.excess) / total).toFixed(1)}%`,
      ]),
    }),
    '',
    ...terminalTableLines({
      head: ['removed', 'query tokens', 's_sparse', 'fused score', 'rank', 'shift'],
      align: ['left', 'left', 'right', 'right', 'right', 'right'],
      rows: r.outcomes.map((o, j) => [
        e.labels[j]!,
        o.removed.map((i) => pieces[i]!).join(' '),
        fixed(o.sparse, 4),
        fixed(o.score, 4),
        String(o.rank),
        signed(o.rank - r.rank),
      ]),
    }),
  ];
  if (r.tokens.length === 0) lines.push('(the query has no content tokens: nothing to remove)');
  return lines.join('\n');
}

/** The aggregated table's rows as text cells. */
function summaryCells(rows: readonly InterventionSummaryRow[]): string[][] {
  return rows.map((r) => [
    `${r.subtask} (${r.queries.toLocaleString('en-US')})`,
    `top ${r.removeTop}`,
    rankText(r.medianBefore),
    rankText(r.medianAfter),
    signed(r.medianShift),
    `${(100 * r.leftTopShare).toFixed(1)}% (${r.leftTop} of ${r.inTopBefore})`,
  ]);
}

/**
 * `bfe explain --aggregate`: per subtask and overall, per removal size, the median rank of
 * the highest-ranked relevant memory before and after, the median shift, and the share of
 * queries whose relevant memory leaves the top 10 (count of those in the top 10 before).
 */
export function renderAggregate(
  a: AggregateInterventions,
  header: ExplainHeader,
  style: 'plain' | 'markdown' = 'plain',
): string {
  const table = terminalTableLines({
    head: [
      'subtask (queries)',
      'removed',
      'median rank before',
      'median rank after',
      'median shift',
      `left the top ${TOP_CUTOFF} (of those in it)`,
    ],
    align: ['left', 'left', 'right', 'right', 'right', 'right'],
    rows: summaryCells(a.rows),
    style,
  });
  if (style === 'markdown') return table.join('\n');
  return [
    headerLine(header),
    `analysed   ${a.records.length} queries: each one's highest-ranked relevant memory; ` +
      `${a.dropped} without a relevant candidate left out`,
    '',
    ...table,
  ].join('\n');
}
