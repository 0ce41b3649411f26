/**
 * The benchmarks' one table helper: every table they print is drawn here, as aligned plain
 * text for the terminal or as an aligned Markdown table to paste into BENCHMARKS.md.
 *
 * @example
 * terminalTable({ head: ['peer', 'seconds'], align: ['left', 'right'], rows: [['bfe', '21.8']] });
 * // peer  seconds
 * // ----  -------
 * // bfe      21.8
 */
export interface TextTable {
  readonly head: readonly string[];
  /** Per column; missing columns are left-aligned. */
  readonly align?: readonly ('left' | 'right')[];
  readonly rows: readonly (readonly string[])[];
  /** `plain` (default): two spaces between columns, a dashed rule; `markdown`: pipes. */
  readonly style?: 'plain' | 'markdown';
}

/** The table's lines, head first. */
export function terminalTable(table: TextTable): string[] {
  const widths = table.head.map((h, c) =>
    Math.max(h.length, ...table.rows.map((r) => (r[c] ?? '').length)),
  );
  const right = (c: number): boolean => table.align?.[c] === 'right';
  const cells = (row: readonly string[]): string[] =>
    widths.map((width, c) => {
      const cell = row[c] ?? '';
      return right(c) ? cell.padStart(width) : cell.padEnd(width);
    });
  if (table.style === 'markdown') {
    const line = (row: readonly string[]): string => `| ${cells(row).join(' | ')} |`;
    const rule = widths.map((w, c) =>
      right(c) ? `${'-'.repeat(Math.max(2, w - 1))}:` : '-'.repeat(Math.max(3, w)),
    );
    return [line(table.head), `| ${rule.join(' | ')} |`, ...table.rows.map(line)];
  }
  const line = (row: readonly string[]): string => cells(row).join('  ').trimEnd();
  return [line(table.head), line(widths.map((w) => '-'.repeat(w))), ...table.rows.map(line)];
}
