import type { PairedDifference, Results } from '@bfe/eval';
import type { TextTable } from '@bfe/core';

/**
 * A table every output format renders the same way: the terminal pads, markdown pipes, HTML
 * tags. Cells are plain text; each renderer escapes for its own format.
 *
 * @example
 * const t: Table = { title: 'Headline', head: ['system', 'R@10'], align: ['left', 'right'],
 *   rows: [['pooled', '0.4213']] };
 */
export interface Table extends TextTable {
  readonly title: string;
  readonly align: readonly ('left' | 'right')[];
}

/** A metric value as every table prints it: four decimals, as results.json figures are read. */
export const fixed4 = (x: number): string => x.toFixed(4);

/** A signed difference with a typographic minus, as the runner's terminal tables print it. */
export const signed4 = (x: number): string => `${x >= 0 ? '+' : '−'}${Math.abs(x).toFixed(4)}`;

/** `+0.0123 [+0.0050, +0.0190]`: a paired difference and its 95% CI; '—' when absent. */
export function deltaWithCi(d: PairedDifference | undefined): string {
  if (d === undefined) return '—';
  return `${signed4(d.meanDiff)} [${signed4(d.ci95[0])}, ${signed4(d.ci95[1])}]`;
}

/**
 * Which interval the tables of a results file print as the headline one (METHOD.md §6
 * "Intervals"): the cluster interval with `significance.clusters.headline === 'cluster'` (at
 * least 5 clusters), else the query-level one. `note` says so in plain words (empty when the
 * results carry no clusters); `unit` is the plural bank unit, e.g. `conversations`.
 *
 * @example
 * intervalChoice(results);
 * // { kind: 'query', unit: 'conversations',
 * //   note: 'query-level interval over 2 conversations; cannot include between-conversation variance' }
 */
export function intervalChoice(results: Results): {
  readonly kind: 'cluster' | 'query';
  readonly unit: string;
  readonly note: string;
} {
  const c = results.significance?.clusters;
  if (c === undefined) return { kind: 'query', unit: '', note: '' };
  const units = `${c.n} ${c.unit}${c.n === 1 ? '' : 's'}`;
  return c.headline === 'cluster'
    ? {
        kind: 'cluster',
        unit: `${c.unit}s`,
        note: `95% CI and p resample whole ${c.unit}s (cluster bootstrap and sign-flip over ${units})`,
      }
    : {
        kind: 'query',
        unit: `${c.unit}s`,
        note: `query-level interval over ${units}; cannot include between-${c.unit} variance`,
      };
}

/**
 * The difference as the headline prints it: its cluster CI and p-value when `kind` is
 * `cluster` and it has them, else as it is.
 *
 * @example
 * headlineDifference(d, 'cluster'); // { meanDiff: d.meanDiff, ci95: d.cluster.ci95, pValue: d.cluster.pValue }
 */
export function headlineDifference(
  d: PairedDifference | undefined,
  kind: 'cluster' | 'query',
): PairedDifference | undefined {
  if (d === undefined || kind === 'query' || d.cluster === undefined) return d;
  return { meanDiff: d.meanDiff, ci95: d.cluster.ci95, pValue: d.cluster.pValue };
}

/** `[+0.0050, +0.0190]`: a 95% CI alone; '—' when absent. */
export function ciOnly(d: PairedDifference | undefined): string {
  if (d === undefined) return '—';
  return `[${signed4(d.ci95[0])}, ${signed4(d.ci95[1])}]`;
}

/** A p-value to three decimals, `<0.001` below that; '—' when absent. */
export function pValue(d: PairedDifference | undefined): string {
  if (d === undefined) return '—';
  return d.pValue < 0.001 ? '<0.001' : d.pValue.toFixed(3);
}

/** Seconds as `0.8 s`, `12.3 s` or `4 min 05 s`. */
export function duration(seconds: number): string {
  if (seconds < 60) return `${seconds.toFixed(1)} s`;
  const minutes = Math.floor(seconds / 60);
  return `${minutes} min ${String(Math.round(seconds - minutes * 60)).padStart(2, '0')} s`;
}

/** Bytes as MiB below 1 GiB, GiB above, with the exact count for reference. */
export function bytes(n: number): string {
  const gib = 1024 ** 3;
  const short = n >= gib ? `${(n / gib).toFixed(2)} GiB` : `${(n / 1024 ** 2).toFixed(1)} MiB`;
  return `${short} (${n} bytes)`;
}

/**
 * Escapes text for markdown prose and table cells: emphasis, code, pipes, `]` where it could
 * close a link (`](`, `][`), and `<` where it could open an HTML tag or comment. CI brackets and
 * `<0.001` stay as they are, so report.md reads well as plain text.
 */
export function markdownText(text: string): string {
  return text
    .replace(/[\\`*_|]/g, '\\$&')
    .replace(/\](?=[([])/g, '\\]')
    .replace(/<(?=[A-Za-z/!?])/g, '\\<')
    .replace(/\r?\n/g, ' ');
}

/** A GitHub-flavoured markdown table under a level-3 heading. */
export function markdownTable(table: Table): string {
  const row = (cells: readonly string[]): string =>
    `| ${cells.map((c) => markdownText(c)).join(' | ')} |`;
  const rule = `|${table.align.map((a) => (a === 'right' ? ' ---: ' : ' :--- ')).join('|')}|`;
  return [
    `### ${markdownText(table.title)}`,
    '',
    row(table.head),
    rule,
    ...table.rows.map(row),
  ].join('\n');
}

/** Escapes text for HTML element content and double-quoted attribute values. */
export function htmlText(text: string): string {
  return text
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&#39;');
}

/** An HTML table under a level-3 heading; right-aligned columns get the `num` class. */
export function htmlTable(table: Table): string {
  const cls = (c: number): string => (table.align[c] === 'right' ? ' class="num"' : '');
  const head = table.head.map((h, c) => `<th${cls(c)}>${htmlText(h)}</th>`).join('');
  const body = table.rows
    .map((r) => `<tr>${r.map((cell, c) => `<td${cls(c)}>${htmlText(cell)}</td>`).join('')}</tr>`)
    .join('\n');
  return (
    `<h3>${htmlText(table.title)}</h3>\n<table>\n<thead><tr>${head}</tr></thead>\n` +
    `<tbody>\n${body}\n</tbody>\n</table>`
  );
}
