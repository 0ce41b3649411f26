/**
 * The one terminal-table helper (HOUSE.md): every aligned plain-text table the CLI, the
 * benchmarks and the store's evidence print is drawn here — plain (two spaces between
 * columns, a dashed rule under the head) or Markdown (to paste into BENCHMARKS.md).
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
  /** `plain` (default): two spaces between columns, a dashed rule; `markdown`: pipes. */
  readonly style?: 'plain' | 'markdown';
  /** No head and no rule: just the aligned rows (plain style only). */
  readonly headless?: boolean;
}

/** An aligned table as one string. */
export function terminalTable(table: TextTable): string {
  return terminalTableLines(table).join('\n');
}

/** {@link terminalTable} as lines, head first, for callers that add lines around it. */
export function terminalTableLines(table: TextTable): string[] {
  const all = table.headless === true ? table.rows : [table.head, ...table.rows];
  const columns = Math.max(table.head.length, ...all.map((r) => r.length));
  const widths = Array.from({ length: columns }, (_, c) =>
    Math.max(0, ...all.map((r) => (r[c] ?? '').length)),
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
  if (table.headless === true) return table.rows.map(line);
  return [line(table.head), line(widths.map((w) => '-'.repeat(w))), ...table.rows.map(line)];
}
