import type { Results, TransitionCounts, Transitions } from '@bfe/eval';
import type { Table } from './format.js';

/** `+12`, `−3`, `0`: a net count with a typographic minus. */
const signedCount = (n: number): string => (n > 0 ? `+${n}` : n < 0 ? `−${-n}` : '0');

const cells = (c: TransitionCounts): string[] => [
  String(c.recoveries),
  String(c.reverse),
  signedCount(c.net),
  String(c.bothHit),
  String(c.bothMiss),
];

/**
 * One pair's query-level transitions as a table: a row per subtask (declared order) and an
 * `all` row, gross counts of recoveries, reverse transitions, their net, both hit and both
 * miss — counts, not rates, as the paper's Appendix D reports them.
 *
 * @example
 * transitionsTable(results.transitions[0]);
 * // { title: 'pooled → sparse-fusion: …', head: ['subtask', 'queries', 'recoveries', …],
 * //   rows: [['multi-hop', '282', '61', '9', '+52', '118', '94'], …, ['all', '1536', …]] }
 */
export function transitionsTable(t: Transitions): Table {
  return {
    title:
      `${t.from} → ${t.to}: queries with a relevant memory in the top ${t.k} ` +
      `(hit) for ${t.to} only (recoveries), for ${t.from} only (reverse), both, neither`,
    head: ['subtask', 'queries', 'recoveries', 'reverse', 'net', 'both hit', 'both miss'],
    align: ['left', 'right', 'right', 'right', 'right', 'right', 'right'],
    rows: [
      ...t.subtasks.map((s) => [s.subtask, String(s.nQueries), ...cells(s)]),
      ['all', String(t.overall.nQueries), ...cells(t.overall)],
    ],
  };
}

/**
 * The report's "Query-level transitions" section when the results carry transitions (one
 * table per pair); undefined otherwise.
 *
 * @example
 * transitionsSection(results)?.tables.length; // 3 with pooled, sparse-fusion and adapted
 */
export function transitionsSection(results: Results):
  | {
      readonly title: string;
      readonly lines: readonly string[];
      readonly tables: readonly Table[];
      readonly charts: readonly [];
    }
  | undefined {
  const list = results.transitions;
  if (list === undefined || list.length === 0) return undefined;
  return {
    title: 'Query-level transitions',
    lines: [
      `A hit query has at least one relevant memory in the system’s top ${list[0]?.k ?? 10} ` +
        '(the paper’s “hit query”); queries without a relevant memory are not counted.',
      'Gross query counts per pair, not rates: net = recoveries − reverse transitions.',
    ],
    tables: list.map(transitionsTable),
    charts: [],
  };
}
