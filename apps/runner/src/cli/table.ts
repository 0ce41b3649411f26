/**
 * The runner's one terminal-table helper: every aligned plain-text table (`bfe score`, `bfe
 * eval`, the k sweep, the run report, `bfe cache ls`) is drawn here.
 *
 * @example
 * terminalTable({ head: ['system', 'R@10'], align: ['left', 'right'], rows: [['pooled', '0.4213']] });
 * // system    R@10
 * // ------  ------
 * // pooled  0.4213
 */
export interface TextTable {
  readonly head: readonly string[];
  /** Per column; missing columns are left-aligned. */
  readonly align?: readonly ('left' | 'right')[];
  readonly rows: readonly (readonly string[])[];
}

/** An aligned plain-text table: two spaces between columns, a dashed rule under the head. */
export function terminalTable(table: TextTable): string {
  return terminalTableLines(table).join('\n');
}

/** {@link terminalTable} as lines, for callers that add lines around it. */
export function terminalTableLines(table: TextTable): string[] {
  const widths = table.head.map((h, c) =>
    Math.max(h.length, ...table.rows.map((r) => (r[c] ?? '').length)),
  );
  const line = (cells: readonly string[]): string =>
    cells
      .map((cell, c) => {
        const width = widths[c] ?? 0;
        return table.align?.[c] === 'right' ? cell.padStart(width) : cell.padEnd(width);
      })
      .join('  ')
      .trimEnd();
  return [line(table.head), line(widths.map((w) => '-'.repeat(w))), ...table.rows.map(line)];
}
