/**
 * The one table writer of the benchmark scripts: every table is printed by {@link printTable}
 * (`@bfe/core`'s aligned tables, plain or Markdown to paste into BENCHMARKS.md), every other
 * line of the result by {@link out} (stdout: tables, their captions, the JSON line of
 * {@link printJson}) and progress by {@link note} (stderr, kept apart from the result).
 *
 * @example
 * printTable({ head: ['peer', 'req/s'], rows: [['fastify', '26709']] }, { markdown: true });
 * // | peer    | req/s |
 * // | ------- | ----: |
 * // | fastify | 26709 |
 */
import { terminalTableLines } from '@bfe/core';

/** A line to stdout: the tables, their captions and the JSON line. */
export const out = (line = ''): boolean => process.stdout.write(`${line}\n`);

/** A line to stderr: progress, kept apart from the tables and the JSON line. */
export const note = (line: string): boolean => process.stderr.write(`${line}\n`);

export type Align = 'left' | 'right';

export interface BenchTable {
  readonly head: readonly string[];
  readonly rows: readonly (readonly string[])[];
  /** Per column; default: the first column left, every other right (a label, then numbers). */
  readonly align?: readonly Align[];
}

export interface TableStyle {
  /** Pipes and a `---:` rule, to paste into BENCHMARKS.md; default: plain aligned columns. */
  readonly markdown?: boolean | undefined;
}

/** The table's lines, head first. */
export function tableLines(table: BenchTable, style: TableStyle = {}): string[] {
  return terminalTableLines({
    head: table.head,
    rows: table.rows,
    align: table.align ?? table.head.map((_, c): Align => (c === 0 ? 'left' : 'right')),
    style: style.markdown === true ? 'markdown' : 'plain',
  });
}

/** Prints the table to stdout. */
export function printTable(table: BenchTable, style: TableStyle = {}): void {
  for (const line of tableLines(table, style)) out(line);
}

/** Prints `value` as one JSON line: the full numbers of a run, for machines. */
export function printJson(value: unknown): void {
  out(JSON.stringify(value));
}
