/** One analysed query of an intervention run: its memory's rank before and after removals. */
export interface InterventionRecord {
  readonly subtask: string;
  /** The memory's fused rank without intervention. */
  readonly before: number;
  /** Its rank after each removal, aligned with the summary's `removeTop`. */
  readonly after: readonly number[];
}

/** One row of {@link summarizeInterventions}: a subtask (or `all`) at one removal size. */
export interface InterventionSummaryRow {
  /** The subtask, or `'all'` for every query. */
  readonly subtask: string;
  /** The query tokens of largest excess removed. */
  readonly removeTop: number;
  readonly queries: number;
  readonly medianBefore: number;
  readonly medianAfter: number;
  /** Median over queries of `after − before` (not the difference of the medians). */
  readonly medianShift: number;
  /** Queries whose memory was within the top {@link TOP_CUTOFF} before the removal. */
  readonly inTopBefore: number;
  /** Queries whose memory was within the top {@link TOP_CUTOFF} before and is not after. */
  readonly leftTop: number;
  /** `leftTop / queries` (0 without queries). */
  readonly leftTopShare: number;
}

/** The cut-off of "leaves the top 10": the headline k (METHOD.md §6). */
export const TOP_CUTOFF = 10;

/** The median of a list (the mean of the two middle values for an even count); NaN if empty. */
export function median(values: readonly number[]): number {
  const n = values.length;
  if (n === 0) return Number.NaN;
  const s = [...values].sort((a, b) => a - b);
  const mid = n >> 1;
  return n % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

/**
 * Aggregates intervention records per subtask (in `subtasks` order, those with records) and
 * over all of them (`'all'`, last), one row per removal size: queries, median rank before and
 * after, median shift, and the share of queries whose memory leaves the top 10. A pure function
 * of the records: the same records in any order give the same rows.
 *
 * @throws Error when a record's `after` does not match `removeTop` (a programmer error).
 * @example
 * summarizeInterventions(
 *   [{ subtask: 'a', before: 1, after: [1, 12] }, { subtask: 'a', before: 3, after: [5, 9] }],
 *   [1, 2],
 *   ['a'],
 * );
 * // [{ subtask: 'a', removeTop: 1, queries: 2, medianBefore: 2, medianAfter: 3, medianShift: 1, leftTop: 0, … },
 * //  { subtask: 'a', removeTop: 2, …, medianAfter: 10.5, leftTop: 1, leftTopShare: 0.5 }, 'all' rows …]
 */
export function summarizeInterventions(
  records: readonly InterventionRecord[],
  removeTop: readonly number[],
  subtasks: readonly string[],
): InterventionSummaryRow[] {
  for (const r of records) {
    if (r.after.length !== removeTop.length) {
      throw new Error(
        `summarizeInterventions: a record has ${r.after.length} ranks after, expected ${removeTop.length}`,
      );
    }
  }
  const known = new Set(subtasks);
  const extra = [...new Set(records.map((r) => r.subtask).filter((s) => !known.has(s)))].sort();
  const groups: [string, readonly InterventionRecord[]][] = [...subtasks, ...extra]
    .map((s): [string, InterventionRecord[]] => [s, records.filter((r) => r.subtask === s)])
    .filter(([, rs]) => rs.length > 0);
  groups.push(['all', records]);
  const rows: InterventionSummaryRow[] = [];
  for (const [subtask, rs] of groups) {
    const before = rs.map((r) => r.before);
    const inTopBefore = before.filter((b) => b <= TOP_CUTOFF).length;
    removeTop.forEach((n, j) => {
      const after = rs.map((r) => r.after[j]!);
      const leftTop = rs.filter((r) => r.before <= TOP_CUTOFF && r.after[j]! > TOP_CUTOFF).length;
      rows.push({
        subtask,
        removeTop: n,
        queries: rs.length,
        medianBefore: median(before),
        medianAfter: median(after),
        medianShift: median(rs.map((r) => r.after[j]! - r.before)),
        inTopBefore,
        leftTop,
        leftTopShare: rs.length === 0 ? 0 : leftTop / rs.length,
      });
    });
  }
  return rows;
}
